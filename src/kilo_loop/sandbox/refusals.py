"""A write the jail refused, read off a tool's output: the path, so the log says what was refused
instead of leaving a failed command to guess at.

Tools say it their own way ("cannot create X: Read-only file system", "rm: cannot remove 'X':
Read-only file system", git's "Unable to create 'X/.git/index.lock': Read-only file system", sed's
"couldn't open temporary file X", bash's "line 1: X: Read-only file system"); a mount point the agent tried to remove says "Device or resource
busy". Pure: text in, paths out.
"""

from __future__ import annotations

import re

_ERRORS = r"(?:Read-only file system|Device or resource busy)"
_QUOTED = re.compile("[\'\u2018`\"](?P<path>[^\'\u2019`\"\n]+)[\'\u2019`\"][^\n]*?" + _ERRORS)
_BARE = re.compile(r"(?:cannot create|can't create|couldn't open temporary file|cannot open|cannot remove|cannot rename|"
                   r"unable to write|failed to open)\s+(?P<path>[^\s:'\"]+)\s*:[^\n]*?" + _ERRORS, re.IGNORECASE)
# bash: "bash: line 1: guarded.txt: Read-only file system"
_COLON = re.compile(r"(?P<path>[^\s:'\"]+):\s*" + _ERRORS)
_ANY = re.compile(_ERRORS)
_LIMIT = 5


def refused_paths(output: str) -> list[str]:
    """The paths the jail refused in one tool output (at most a few, in order, once each); a refusal
    whose path cannot be read is listed as "?"."""
    if not output or not _ANY.search(output):
        return []
    found: list[str] = []
    for line in output.splitlines():
        if not _ANY.search(line):
            continue
        match = _QUOTED.search(line) or _BARE.search(line) or _COLON.search(line)
        path = match.group("path") if match else "?"
        if path not in found:
            found.append(path)
        if len(found) >= _LIMIT:
            break
    return found
