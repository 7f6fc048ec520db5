"""Deletes inside the work tree that the per-iteration checkpoint can undo.

The checkpoint keeps the tracked files (as trees) and the content of every untracked, non-ignored
file up to the caps below, so `revert` brings each of them back; ignored paths (build output,
caches, virtual environments) are what the project regenerates. A delete (or truncation) whose
every path is strictly inside the work tree and is ignored or restorable is therefore not refused.
What stays refused: the work tree itself, `.git` and anything holding a repository (a submodule, a
nested clone), the loop's own folder, untracked files over the caps, and everything outside.

The guard asks git (three small processes at most, only for a delete that names work-tree paths).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from kilo_loop.git import GitError, run_git
from kilo_loop.run.layout import LOOP_DIR

UNTRACKED_FILE_CAP = 16 * 1024 * 1024
"""An untracked file larger than this is left out of the checkpoint (and named there)."""
UNTRACKED_TOTAL_CAP = 256 * 1024 * 1024
"""Untracked content kept per checkpoint; files past it are left out (and named)."""
_GITLINK = "160000"
_GIT_TIMEOUT = 10.0


def why_not_undoable(path: str, work_tree: str, link_itself: bool = False) -> str | None:
    """None when deleting the absolute `path` can be undone by a revert; else why not. With
    `link_itself`, a symlink at `path` is removed itself (`rm -r link`), not what it points at."""
    root = os.path.realpath(work_tree)
    real = _real(path, link_itself)
    if real == root or not real.startswith(root.rstrip("/") + "/"):
        return f"{real} is not strictly inside the work tree {root}"
    relative = real[len(root.rstrip("/")) + 1:]
    parts = relative.split("/")
    if ".git" in parts:
        return "it is inside .git"
    if parts[0] == LOOP_DIR:
        return f"it is the loop's own folder {LOOP_DIR}/"
    if not os.path.lexists(real):
        return None  # nothing there: nothing to lose
    if os.path.isdir(real) and not os.path.islink(real) and os.path.lexists(posixpath.join(real, ".git")):
        return "it holds a git repository"
    return _restorable(root, relative)


def _real(path: str, link_itself: bool) -> str:
    norm = posixpath.normpath(path)
    if link_itself and os.path.islink(norm):
        return posixpath.join(os.path.realpath(posixpath.dirname(norm)), posixpath.basename(norm))
    return os.path.realpath(norm)


def _restorable(root: str, relative: str) -> str | None:
    """Why the files at `relative` (a file or a directory) are not all ignored or kept by the checkpoint."""
    if _git(root, "check-ignore", "-q", "--no-index", "--", relative, ok=(0, 1)) == b"\x00ignored":
        return None
    staged = _git(root, "ls-files", "-z", "--stage", "--", relative)
    if staged is None:
        return "git cannot list what it holds"
    for entry in filter(None, staged.split(b"\0")):
        if entry.split(b" ", 1)[0].decode() == _GITLINK:
            return "it holds a submodule, whose own changes a revert cannot bring back"
    others = _git(root, "ls-files", "-z", "--others", "--exclude-standard", "--", relative)
    if others is None:
        return "git cannot list what it holds"
    total = 0
    for name in filter(None, others.decode("utf-8", "surrogateescape").split("\0")):
        if name.endswith("/"):
            return f"{name} is a repository of its own inside it"
        try:
            size = os.lstat(posixpath.join(root, name)).st_size
        except OSError:
            continue
        if size > UNTRACKED_FILE_CAP:
            return f"the untracked file {name} is larger than the checkpoint keeps ({UNTRACKED_FILE_CAP >> 20} MB)"
        total += size
        if total > UNTRACKED_TOTAL_CAP:
            return f"its untracked files are more than the checkpoint keeps ({UNTRACKED_TOTAL_CAP >> 20} MB)"
    return None


def _git(root: str, *args: str, ok: tuple[int, ...] = (0,)) -> bytes | None:
    """git's output, or None when it fails; for `check-ignore -q`, a marker when the path is ignored."""
    try:
        done = run_git(Path(root), *args, timeout=_GIT_TIMEOUT)
    except GitError:
        return None
    if done.returncode not in ok:
        return None
    if args[0] == "check-ignore":
        return b"\x00ignored" if done.returncode == 0 else b""
    return done.stdout
