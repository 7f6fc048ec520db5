"""Which files an iteration changed: the work tree's `git status` before and after it.

One full status per iteration: the read after a session is the next iteration's "before" (and
its checkpoint's status), since nothing but the loop's own files changes in between. What the
loop writes outside its folder it either names (`wrote`: the ticked goal file, worked out from
its bytes before and after, or a pathspec-limited status) or forgets the read (`forget`: verify
output, an operator's edits while paused).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kilo_loop.git import GitError
from kilo_loop.gitstatus import Snapshot, TreeStatus, after_write, read_status, snapshot
from kilo_loop.run.layout import LOOP_DIR

__all__ = ["Snapshot", "WorkTree", "changed_between", "snapshot_worktree"]


def snapshot_worktree(project: Path) -> Snapshot:
    """Status code and stat of every changed or untracked file (the loop's own folder excluded)."""
    return snapshot(project, read_status(project), LOOP_DIR)


def changed_between(before: Snapshot, after: Snapshot) -> list[str]:
    changed = {name for name, value in after.items() if before.get(name) != value}
    changed |= {name for name in before if name not in after}
    return sorted(changed)


class WorkTree:
    """The project's work tree as the loop last read it (`project` is the repository's top level)."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self._root = project.resolve()
        self._status: TreeStatus | None = None

    def read(self) -> TreeStatus:
        """A fresh status, kept for the next iteration."""
        self._status = read_status(self.project)
        return self._status

    def current(self) -> TreeStatus:
        """The kept status, or a fresh one when something may have changed the tree since."""
        return self._status if self._status is not None else self.read()

    def snapshot(self, status: TreeStatus) -> Snapshot:
        return snapshot(self.project, status, LOOP_DIR)

    def forget(self) -> None:
        self._status = None

    def wrote(self, file: Path, before: bytes | None) -> None:
        """The loop rewrote `file`, which held `before` (None: unknown): update the read without git
        when its bytes tell enough, else ask git about that file alone."""
        if self._status is None:
            return
        try:
            path = file.resolve().relative_to(self._root).as_posix()
            after = file.read_bytes()
        except (ValueError, OSError):
            self._status = None
            return
        known = None if before is None else after_write(self._status, path, before, after)
        if known is None:
            self.refresh([file])
        else:
            self._status = known

    def refresh(self, files: Iterable[Path]) -> None:
        """The loop wrote `files`: ask git about them alone (forget the read if that cannot be done)."""
        if self._status is None:
            return
        try:
            paths = [file.resolve().relative_to(self._root).as_posix() for file in files]
            self._status = self._status.merged(read_status(self.project, paths=paths), paths)
        except (ValueError, OSError, GitError):  # outside the project, or git failed: read it all next time
            self._status = None
