"""`protect` globs: paths the implementer must not change (tests, fixtures, the verify script, CI).

The glob syntax lives in `review.globs` (light enough for the pre-tool hook); this module finds
protected paths among an iteration's changes and turns them into findings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kilo_loop.loop.workspace import Snapshot, changed_between
from kilo_loop.review.findings import Finding
from kilo_loop.review.globs import ProtectError, compile_glob, is_protected, matching_glob, validate_patterns

__all__ = ["ProtectError", "compile_glob", "is_protected", "matching_glob", "protected_between",
           "protected_changes", "protected_findings", "validate_patterns"]


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
