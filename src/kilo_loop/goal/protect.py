"""`protect` globs: the paths a stage's implementer must not change (tests, fixtures, the verify
script, CI). A property of the goal's stages; no heavy imports (the agent's pre-tool hook uses it
on every call).

Patterns use `/` separators relative to the project: `*` and `?` stay inside one path segment,
`**` spans any number of segments, a trailing `/` means everything under that folder, and a
pattern without `/` matches the file name at any depth (`*.snap`, `verify.sh`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from kilo_loop.errors import UsageError


class ProtectError(UsageError, ValueError):
    """A protect pattern that cannot be used."""


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    raw = pattern.strip()
    if not raw or raw in ("/", "**/"):
        raise ProtectError(f"protect pattern {pattern!r} is empty")
    if raw.startswith("../") or "/../" in raw:
        raise ProtectError(f"protect pattern {pattern!r} leaves the project")
    raw = raw.removeprefix("./").lstrip("/")
    if raw.endswith("/"):
        raw += "**"
    if "/" not in raw:
        raw = "**/" + raw
    out, index = [], 0
    while index < len(raw):
        if raw.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif raw.startswith("**", index):
            out.append(".*")
            index += 2
        elif raw[index] == "*":
            out.append("[^/]*")
            index += 1
        elif raw[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(raw[index]))
            index += 1
    return re.compile("".join(out) + r"\Z")


def validate_patterns(patterns: Iterable[str]) -> list[str]:
    """The patterns, each checked; ProtectError names the first that cannot be used."""
    kept = []
    for pattern in patterns:
        compile_glob(pattern)
        kept.append(pattern.strip())
    return kept


def is_protected(path: str, patterns: Sequence[str]) -> bool:
    clean = path.removeprefix("./")
    return any(compile_glob(p).match(clean) for p in patterns)


def matching_glob(path: str, patterns: Sequence[str]) -> str | None:
    """The first pattern that protects `path` (relative to the project), or None."""
    clean = path.removeprefix("./")
    return next((p for p in patterns if compile_glob(p).match(clean)), None)


def protected_changes(patterns: Sequence[str], changed: Iterable[str]) -> list[str]:
    """The changed paths a pattern protects, sorted."""
    if not patterns:
        return []
    return sorted({p for p in changed if is_protected(p, patterns)})
