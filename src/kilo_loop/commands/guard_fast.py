"""`kilo-loop guard check` and `guard hook` without Click, for the command lines hooks and scripts
send: `guard hook`, `guard check [--json] [--cwd DIR] COMMAND` and `guard check [--json] [--cwd DIR]
--batch`. Importing Click alone costs more than deciding the command, and `guard hook` runs before
every Bash call of a Claude Code session.

Anything else (help, --deny/--allow, a usage error, a --cwd Click would refuse, patterns the guard
refuses) is not answered here: `run` returns None and the Click command handles the whole command
line, exactly as it would have. The work itself is `guard_actions`, shared with the Click commands.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from typing import NamedTuple

from kilo_loop.commands.guard_actions import answer_hook, check_batch, check_one, guard_for


class CheckArgs(NamedTuple):
    command: str | None
    as_json: bool
    cwd: str | None


def parse_check(args: Sequence[str]) -> CheckArgs | None:
    """The arguments after `guard check`, when they are only those the fast path takes; else None."""
    command: str | None = None
    cwd: str | None = None
    as_json = batch = False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json":
            as_json = True
        elif arg == "--batch":
            batch = True
        elif arg == "--cwd" and rest and not rest[0].startswith("-"):
            cwd = rest.pop(0)
        elif arg.startswith("--cwd="):
            cwd = arg.removeprefix("--cwd=")
        elif arg.startswith("-") or command is not None:
            return None
        else:
            command = arg
    if batch == (command is not None) or (cwd is not None and not _plain_directory(cwd)):
        return None
    return CheckArgs(command, as_json, cwd)


def _plain_directory(path: str) -> bool:
    """Click's `Path(file_okay=False)` would take `path` without a word: missing, or a readable directory."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True
    return stat.S_ISDIR(mode) and os.access(path, os.R_OK)


def run(args: Sequence[str]) -> int | None:
    """The exit code of `kilo-loop guard <args>`, or None when Click must handle this command line."""
    if list(args) == ["hook"]:
        return answer_hook(sys.stdin.read())
    parsed = parse_check(args[1:]) if args[:1] == ["check"] else None
    if parsed is None:
        return None
    try:
        guard = guard_for(parsed.cwd)
    except ValueError:
        return None  # Click reports the refused pattern or pack as a usage error
    if parsed.command is None:
        return check_batch(guard, sys.stdin, parsed.cwd)
    return check_one(guard, parsed.command, parsed.cwd, parsed.as_json)
