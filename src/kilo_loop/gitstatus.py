"""One `git status` of the work tree, read once and shared by everything an iteration needs.

On a large repository `git status --untracked-files=all` is the loop's biggest cost (it stats
every tracked file and walks every directory), so one call per iteration serves three readers:
the checkpoint (HEAD, the changed, untracked and ignored paths, whether anything is staged), the
"which files did the iteration change" snapshot (each changed or untracked path with its stat),
and the next iteration, which starts from the work tree the last one left. When the loop itself
writes a file it knows (the goal file it ticks), `refreshed` asks git about that path alone.

Format: `--porcelain=v2 --branch -z --no-renames --untracked-files=all --ignored=matching`, run
at the top level and limited to the project's folder; paths are relative to the top level.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from kilo_loop.git import git_output

ARGS = ("status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z", "--no-renames",
        "--untracked-files=all", "--ignored=matching")
_OID_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_FIELDS = {b"1 ": 8, b"2 ": 9, b"u ": 10}  # space-separated fields before the path, per entry kind

Snapshot = dict[str, tuple[str, int, int]]  # path -> (status code, mtime_ns, size)


@dataclass(frozen=True)
class Entry:
    code: str  # "XY" as porcelain v1 prints it (" M", "A ", "UU", …), "??" untracked, "!!" ignored
    submodule: bool = False
    staged: bool = False  # the index differs from HEAD for this path
    unmerged: bool = False
    index_oid: str = ""  # the index's blob for the path, when git said (ordinary "1" entries)
    mode_changed: bool = False  # the file's mode differs from the index's (chmod +x)


@dataclass(frozen=True)
class TreeStatus:
    head: str | None  # HEAD's commit; None before the first commit
    entries: Mapping[str, Entry] = field(default_factory=dict)

    def paths(self, *codes: str) -> frozenset[str]:
        return frozenset(path for path, entry in self.entries.items() if entry.code in codes)

    @property
    def untracked(self) -> frozenset[str]:
        return self.paths("??")

    @property
    def ignored(self) -> frozenset[str]:
        """Ignored files, and ignored directories once each with a trailing slash."""
        return self.paths("!!")

    def changed(self, submodules: bool = False) -> frozenset[str]:
        """Tracked paths that differ from HEAD in the index or the work tree."""
        return frozenset(path for path, entry in self.entries.items()
                         if entry.code not in ("??", "!!") and (submodules or not entry.submodule))

    @property
    def staged(self) -> bool:
        return any(entry.staged and not entry.submodule for entry in self.entries.values())

    @property
    def unmerged(self) -> bool:
        return any(entry.unmerged for entry in self.entries.values())

    def merged(self, other: TreeStatus, paths: Iterable[str]) -> TreeStatus:
        """This status with `paths` (and anything below them) as `other`, a status of those paths, reports them."""
        gone = set(paths)
        kept = {path: entry for path, entry in self.entries.items() if not _below_any(path, gone)}
        return replace(self, entries={**kept, **other.entries})


def blob_oid(data: bytes, like: str) -> str:
    """git's object id of a blob holding `data`, in the hash of `like` (an existing id: SHA-1 or SHA-256)."""
    digest = hashlib.sha256 if len(like) == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def after_write(status: TreeStatus, path: str, before: bytes, after: bytes) -> TreeStatus | None:
    """The status once the loop rewrote the tracked or untracked file `path` from `before` to `after`
    (neither through git): worked out without git, or None when only git can tell (a conflict, a
    submodule, a path below an ignored directory, a file git may convert on the way in)."""
    entry = status.entries.get(path)
    if entry is None and b"\r" not in before:  # tracked and clean: the index holds `before`
        entry = Entry("  ", index_oid=blob_oid(before, status.head or ""))
    return after_edit(status, path, after, entry)


def after_edit(status: TreeStatus, path: str, after: bytes, entry: Entry | None = None) -> TreeStatus | None:
    """The status once the file `path` (as `status` lists it, or as `entry` says) was rewritten in
    place to hold `after`, not through git; None when only git can tell (see `after_write`)."""
    entry = entry or status.entries.get(path)
    if entry is None or b"\r" in after or any(
            (other.endswith("/") or item.submodule) and path.startswith(other.rstrip("/") + "/")
            for other, item in status.entries.items()):
        return None
    if entry.code in ("??", "!!"):
        return status  # still untracked, or ignored
    if entry.unmerged or entry.submodule or not entry.index_oid or entry.code[1] not in " M":
        return None
    y = " " if blob_oid(after, entry.index_oid) == entry.index_oid and not entry.mode_changed else "M"
    entries = {name: item for name, item in status.entries.items() if name != path}
    if entry.code[0] != " " or y != " ":
        entries[path] = replace(entry, code=entry.code[0] + y)
    return replace(status, entries=entries)


def after_untracked_change(status: TreeStatus, path: str, exists: bool) -> TreeStatus | None:
    """The status once the untracked or ignored file `path` was rewritten, replaced or removed (not
    through git; the ignore rules and the index as they were): it is still what it was while a file
    is there, and gone from the status when none is. None when `status` lists `path` otherwise."""
    entry = status.entries.get(path)
    if entry is None or entry.code not in ("??", "!!"):
        return None
    if exists:
        return status
    return replace(status, entries={name: item for name, item in status.entries.items() if name != path})


def _below_any(path: str, roots: set[str]) -> bool:
    return path in roots or any(path.startswith(root.rstrip("/") + "/") for root in roots)


def parse(data: bytes) -> TreeStatus:
    head: str | None = None
    entries: dict[str, Entry] = {}
    items = iter(data.split(b"\0"))
    for item in items:
        kind = item[:2]
        if item.startswith(b"# branch.oid "):
            oid = item.removeprefix(b"# branch.oid ").decode("ascii", "replace")
            head = oid if _OID_RE.fullmatch(oid) else None  # "(initial)": no commit yet
        elif kind in (b"? ", b"! "):
            entries[os.fsdecode(item[2:])] = Entry("??" if kind == b"? " else "!!")
        elif kind in _FIELDS:
            # "1 XY sub mH mI mW hH hI path"; "2 … Xscore path" is followed by its source path
            # (not with --no-renames, but read it safely); "u XY sub m1 m2 m3 mW h1 h2 h3 path".
            parts = item.split(b" ", _FIELDS[kind])
            xy = parts[1].decode("ascii", "replace").replace(".", " ")
            ordinary = kind == b"1 "
            entries[os.fsdecode(parts[-1])] = Entry(
                xy, submodule=parts[2].startswith(b"S"), staged=xy[:1] != " ", unmerged=kind == b"u ",
                index_oid=parts[7].decode("ascii", "replace") if ordinary else "",
                mode_changed=ordinary and parts[4] != parts[5])
            if kind == b"2 ":
                next(items, None)
    return TreeStatus(head, entries)


def read_status(root: Path, prefix: str = "", paths: Iterable[str] = ()) -> TreeStatus:
    """The status of the work tree at `root` (limited to `prefix`, or to `paths` when given)."""
    scope = list(paths) or ([prefix] if prefix else [])
    return parse(git_output(root, *ARGS, *(["--", *scope] if scope else [])))


def snapshot(root: Path, status: TreeStatus, exclude: str) -> Snapshot:
    """Status code and stat of every changed or untracked path, the `exclude` folder left out.
    File names need not be UTF-8: the real bytes are stat'ed, a readable (JSON-safe) name is kept."""
    found: Snapshot = {}
    for path, entry in status.entries.items():
        if entry.code == "!!" or path == exclude or path.startswith(exclude + "/"):
            continue
        name = os.fsencode(path).decode("utf-8", "replace")
        found[name] = (entry.code, *_stat(root / path))
    return found


def _stat(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except OSError:
        return (-1, -1)
    return (info.st_mtime_ns, info.st_size)
