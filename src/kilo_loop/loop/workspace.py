"""Which files an iteration changed: a snapshot of `git status` before and after."""

from __future__ import annotations

import os
from pathlib import Path

from kilo_loop.git import run_git
from kilo_loop.run.layout import LOOP_DIR

Snapshot = dict[str, tuple[str, int, int]]


def _stat(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except OSError:
        return (-1, -1)
    return (info.st_mtime_ns, info.st_size)


def snapshot_worktree(project: Path) -> Snapshot:
    """Status code and stat of every changed or untracked file (the loop's own folder excluded)."""
    out = run_git(project, "status", "--porcelain=v1", "-z", "--untracked-files=all").stdout
    entries = out.split(b"\0")
    snapshot: Snapshot = {}
    index = 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if len(entry) < 4:
            continue
        code, raw = entry[:2].decode("ascii", "replace"), entry[3:]
        if code[0] in "RC":
            index += 1  # the rename source follows
        # File names need not be UTF-8: stat the real bytes, report a readable (JSON-safe) name.
        name = raw.decode("utf-8", "replace")
        if name.startswith(LOOP_DIR + "/") or name == LOOP_DIR:
            continue
        snapshot[name] = (code, *_stat(project / os.fsdecode(raw)))
    return snapshot


def changed_between(before: Snapshot, after: Snapshot) -> list[str]:
    changed = {name for name, value in after.items() if before.get(name) != value}
    changed |= {name for name in before if name not in after}
    return sorted(changed)
