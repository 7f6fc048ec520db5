"""Which files an iteration changed: a snapshot of `git status` before and after."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kilo_loop.run.layout import LOOP_DIR

Snapshot = dict[str, tuple[str, int, int]]


class NotAGitRepo(RuntimeError):
    pass


def git_root(path: Path) -> Path:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--show-toplevel"],
            capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL,
        )
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        raise NotAGitRepo(f"{path} is not inside a git repository (run `git init` there first)") from exc
    return Path(out.stdout.strip())


def project_root(path: Path | None) -> Path:
    """The git root of `path` (default: cwd), or the directory itself outside a repository."""
    start = (path or Path.cwd()).expanduser().resolve()
    try:
        return git_root(start)
    except NotAGitRepo:
        return start


def _stat(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except OSError:
        return (-1, -1)
    return (info.st_mtime_ns, info.st_size)


def snapshot_worktree(project: Path) -> Snapshot:
    """Status code and stat of every changed or untracked file (the loop's own folder excluded)."""
    out = subprocess.run(
        ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"],
        cwd=project, capture_output=True, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
    ).stdout
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
