"""A jailed program that never ran, explained: bubblewrap's own complaint (`bwrap: …` on stderr)
turned into what failed and what to do. Pure: stderr text in, a sentence out."""

from __future__ import annotations

import re

_BWRAP_LINE = re.compile(r"^bwrap: (?P<what>.+)$", re.MULTILINE)
_EXEC = re.compile(r"execvp (?P<program>\S+): (?P<why>.+)")
_MOUNT = re.compile(r"(?:Can't|Can not|Cannot) (?:bind mount|mount|create|find) .*?(?P<path>/\S*)", re.IGNORECASE)
_OFF = "or run with --sandbox off"


def bwrap_complaint(stderr: str) -> str | None:
    """bubblewrap's own last line on stderr, or None when the program inside ran (or bwrap said nothing)."""
    found = _BWRAP_LINE.findall(stderr or "")
    return found[-1].strip() if found else None


def jail_failure(stderr: str, exit_code: int | None) -> str | None:
    """What failed and what to do, when the jail itself refused to start the program; else None."""
    what = bwrap_complaint(stderr)
    if what is None:
        return None
    executed = _EXEC.search(what)
    if executed is not None:
        program = executed.group("program")
        fix = (f"`{program}` is not visible inside the jail (the jail hides /tmp, /var/tmp and HOME, and "
               "passes PATH and the backend's own variables only): install it outside those, name it by an "
               f"absolute path the jail can see, {_OFF}")
    elif _MOUNT.search(what) is not None:
        fix = (f"a path the jail binds is missing or cannot be mounted here (`kilo-loop doctor` checks the jail); "
               f"{_OFF}")
    else:
        fix = f"`kilo-loop doctor` checks bubblewrap and user namespaces; {_OFF}"
    return f"the jail could not start the agent (exit {exit_code}): bwrap: {what} — {fix}"
