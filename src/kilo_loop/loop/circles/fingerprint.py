"""The work tree as one fingerprint, and the changed files' contents as ids: what oscillation is
judged on. The tree is HEAD plus every changed or untracked file (git status, as the loop already
read it) with what it holds, so only the changed files are read — never the whole repository —
and a file is read again only when its stat changed."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from kilo_loop.gitstatus import Snapshot

HASH_LIMIT = 8 << 20  # a bigger file stands by its size and mtime
GONE = ""  # the content id of a deleted file (and of a file back to HEAD's content: it left the status)
CLEAN = "="


@dataclass(frozen=True)
class TreePrint:
    tree: str
    contents: dict[str, str]  # changed or untracked path -> its content id


class ContentIds:
    """Content ids by path, cached by (mtime, size): a file the iteration did not touch is not read."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._cache: dict[str, tuple[int, int, str]] = {}

    def of(self, path: str, mtime_ns: int, size: int) -> str:
        if size < 0:
            return GONE
        hit = self._cache.get(path)
        if hit is not None and hit[:2] == (mtime_ns, size):
            return hit[2]
        content = self._read(path, mtime_ns, size)
        self._cache[path] = (mtime_ns, size, content)
        return content

    def _read(self, path: str, mtime_ns: int, size: int) -> str:
        full = self._root / path
        try:
            if os.path.isdir(full) or size > HASH_LIMIT:
                return f"stat:{size}:{mtime_ns}"
            data = full.read_bytes()
        except OSError:
            return GONE
        return hashlib.blake2b(data, digest_size=12).hexdigest()


def tree_print(head: str | None, snap: Snapshot, ids: ContentIds) -> TreePrint:
    contents = {path: ids.of(path, mtime, size) for path, (_code, mtime, size) in sorted(snap.items())}
    listing = "\0".join(f"{path}\0{content}" for path, content in contents.items())
    digest = hashlib.blake2b(f"{head or '-'}\0{listing}".encode("utf-8", "replace"), digest_size=12)
    return TreePrint(digest.hexdigest(), contents)


def changed_contents(before: TreePrint | None, after: TreePrint, changed: list[str]) -> dict[str, str]:
    """What each file the iteration changed holds now (CLEAN: back to HEAD's content)."""
    return {path: after.contents.get(path, CLEAN) for path in changed}
