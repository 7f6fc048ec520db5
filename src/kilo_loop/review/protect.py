"""`protect` globs: paths the implementer must not change (tests, fixtures, the verify script, CI).

Patterns use `/` separators relative to the project: `*` and `?` stay inside one path segment,
`**` spans any number of segments, a trailing `/` means everything under that folder, and a
pattern without `/` matches the file name at any depth (`*.snap`, `verify.sh`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from kilo_loop.loop.workspace import Snapshot, changed_between
from kilo_loop.review.findings import Finding


class ProtectError(ValueError):
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


def protected_changes(patterns: Sequence[str], changed: Iterable[str]) -> list[str]:
    """The changed paths a pattern protects, sorted."""
    if not patterns:
        return []
    return sorted({p for p in changed if is_protected(p, patterns)})


def protected_between(patterns: Sequence[str], before: Snapshot, after: Snapshot) -> list[str]:
    """Which protected paths changed between two work-tree snapshots."""
    return protected_changes(patterns, changed_between(before, after))


def protected_findings(paths: Iterable[str]) -> list[Finding]:
    """One blocking finding per protected file the implementer changed."""
    return [Finding(role="protect", title=f"Protected file changed: {path}", severity="critical", file=path,
                    kind="protected",
                    detail="This path is protected for the stage; it is restored from the checkpoint only on "
                           "the operator's word. Reach the goal without editing it.")
            for path in paths]
