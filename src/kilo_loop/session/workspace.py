"""Which files an iteration changed: the work tree's `git status` before and after it.

The read after a session is the next iteration's "before" (and its checkpoint's status). Where
inotify watches the tree (`treewatch`), a read asks git about the paths written since the last
one alone, and nothing at all when none was; what the loop writes itself is seen the same way,
except the ticked goal file (`wrote`), whose status is worked out from its bytes before and after.
Without a watch every read is a full status, and the loop forgets its read whenever something it
cannot name may have written (`forget`: verify output, an operator's edits while paused).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from kilo_loop.git import GitError
from kilo_loop.gitstatus import (
    Snapshot,
    TreeStatus,
    after_edit,
    after_untracked_change,
    after_write,
    read_status,
    snapshot,
)
from kilo_loop.goal.protect import protected_changes
from kilo_loop.run.layout import LOOP_DIR
from kilo_loop.treewatch import TreeWatch, Unwatchable, only_edited, wanted

_HASH_LIMIT = 4 << 20  # a bigger file is left to git, which streams it

__all__ = ["Snapshot", "WorkTree", "changed_between", "snapshot_worktree"]


def snapshot_worktree(project: Path) -> Snapshot:
    """Status code and stat of every changed or untracked file (the loop's own folder excluded)."""
    return snapshot(project, read_status(project), LOOP_DIR)


def changed_between(before: Snapshot, after: Snapshot) -> list[str]:
    changed = {name for name, value in after.items() if before.get(name) != value}
    changed |= {name for name in before if name not in after}
    return sorted(changed)


def protected_between(patterns: Sequence[str], before: Snapshot, after: Snapshot) -> list[str]:
    """Which protected paths changed between two work-tree snapshots."""
    return protected_changes(patterns, changed_between(before, after))


class WorkTree:
    """The project's work tree as the loop last read it (`project` is the repository's top level)."""

    def __init__(self, project: Path, watch: bool = True) -> None:
        self.project = project
        self._root = project.resolve()
        self._status: TreeStatus | None = None
        self._watch: TreeWatch | None = None
        self._watching = watch and wanted()  # until the tree turns out not to be watchable

    def read(self) -> TreeStatus:
        """A fresh status, kept for the next iteration."""
        status, watch = self._status, self._watch
        changes = watch.take() if watch is not None and status is not None else None
        if watch is None or status is None or changes is None:
            return self._read_all()
        ask: list[str] = []
        for path, events in changes.items():
            known = self._known(status, path, only_edited(events) and not watch.attributes)
            if known is None:
                ask.append(path)
            else:
                status = known
        if ask:
            try:
                status = status.merged(read_status(self.project, paths=sorted(ask)), ask)
            except GitError:
                return self._read_all()
            watch.follow(status)
        self._status = status
        return status

    def current(self) -> TreeStatus:
        """The kept status, or a fresh one when something may have changed the tree since."""
        if self._status is None or self._watch is not None:
            return self.read()
        return self._status

    def snapshot(self, status: TreeStatus) -> Snapshot:
        return snapshot(self.project, status, LOOP_DIR)

    def forget(self) -> None:
        """Something the loop cannot name may have written (a watch sees it anyway)."""
        if self._watch is None:
            self._status = None

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

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
            if self._watch is not None:
                self._watch.discard(path)

    def refresh(self, files: Iterable[Path]) -> None:
        """The loop wrote `files`: ask git about them alone (forget the read if that cannot be done)."""
        if self._status is None:
            return
        try:
            paths = [file.resolve().relative_to(self._root).as_posix() for file in files]
            self._status = self._status.merged(read_status(self.project, paths=paths), paths)
        except (ValueError, OSError, GitError):  # outside the project, or git failed: read it all next time
            self._status = None

    def _known(self, status: TreeStatus, path: str, edited: bool) -> TreeStatus | None:
        """`status` once `path` changed, worked out without git where that is safe (None: ask git):
        an untracked or ignored file stays so (or is gone); a tracked file `edited` in place is
        compared with its blob in the index."""
        entry = status.entries.get(path)
        if entry is not None and entry.code in ("??", "!!"):
            try:
                kind: int | None = os.lstat(self._root / path).st_mode
            except FileNotFoundError:
                kind = None
            except OSError:
                return None
            return None if kind is not None and stat.S_ISDIR(kind) else after_untracked_change(
                status, path, kind is not None)
        return self._edited(status, path) if edited else None

    def _edited(self, status: TreeStatus, path: str) -> TreeStatus | None:
        """`status` once the file `path` was written in place, from what it holds (None: ask git)."""
        try:  # O_NOFOLLOW: git records a symbolic link's target, not what it points at
            with open(os.open(self._root / path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb",
                      buffering=0) as file:
                info = os.fstat(file.fileno())
                if not stat.S_ISREG(info.st_mode) or info.st_size > _HASH_LIMIT:
                    return None
                data = file.readall()  # sized by the fstat: read(LIMIT) would allocate LIMIT bytes
        except OSError:
            return None
        return after_edit(status, path, data)

    def _read_all(self) -> TreeStatus:
        """A full status; the watch (re)started first where it can be, so it misses nothing after."""
        if self._watch is not None and self._watch.broken:
            self.close()
        fresh = self._watch is None and self._watching
        if fresh:
            self._watch = TreeWatch.start(self._root, self._status)
            self._watching = self._watch is not None
        watch = self._watch
        if watch is not None:
            watch.take()  # what it saw so far, the read below covers
        status = read_status(self.project)
        if watch is not None and fresh:
            try:
                if not watch.settle(status):  # a folder went unwatched while git read it
                    watch.take()
                    status = read_status(self.project)
            except (OSError, Unwatchable):
                self.close()
                self._watching = False
        if self._watch is not None:
            self._watch.follow(status)
        self._status = status
        return status
