"""Which paths of a work tree changed since the loop last looked, as inotify (Linux) tells it.

A full `git status` stats every tracked file and walks every directory (~18 ms of CPU on 5,000
files), and the loop used to pay that after every session. With a watch on every directory git
does not ignore, it asks git about the changed paths alone: nothing at all after a session that
wrote nothing, else a status limited to what changed (~4 ms on the same tree).

Events are queued by the kernel inside the writing system call, so once the agent (or a verify
command) has exited, reading the queue without waiting sees everything it did.

When the watch cannot tell, `take` returns None and the caller reads the whole tree:
- git's own files changed (HEAD, the index, a branch, packed-refs, config, info/exclude): a commit,
  `git add` or a checkout changes what status says of paths nobody wrote;
- a `.gitignore`, `.gitattributes` or `.gitmodules` changed (what is ignored, how files compare);
- a directory was moved (the paths of the watches below it would be wrong);
- the kernel's queue overflowed, or more paths changed than a limited status is worth.
All but the last also mark the watch `broken`: what git ignores, and so which folders need a watch,
may have changed, and the caller starts a new watch from its full read.

No watch is started (every read is a full one, as before) without inotify, with
`KILO_LOOP_WATCH=0`, in a work tree holding a nested repository or a submodule (git will not take
a pathspec inside one), or with more than `MAX_DIRS` directories to watch.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kilo_loop.git import GitError, git_output
from kilo_loop.gitstatus import TreeStatus

if TYPE_CHECKING:
    from inotify_simple import INotify

MAX_DIRS = 20_000
MAX_PATHS = 500  # past this a limited status costs about what a full one does
SWITCH = "KILO_LOOP_WATCH"
_RULE_FILES = frozenset({".gitignore", ".gitattributes", ".gitmodules"})
# Folders most projects ignore and that can hold many folders: not walked before the first read
# confirms it (a project that tracks one costs a second read).
_LIKELY_IGNORED = frozenset({
    "node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", "dist", "build", "target", ".next", ".nuxt", ".cache", ".gradle", ".terraform",
    "coverage", ".turbo", ".parcel-cache", "runs",
})

# linux/inotify.h
_MODIFY, _ATTRIB, _MOVED_FROM, _MOVED_TO = 0x2, 0x4, 0x40, 0x80
_CREATE, _DELETE, _DELETE_SELF, _MOVE_SELF = 0x100, 0x200, 0x400, 0x800
_OVERFLOW, _ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK, _ISDIR = 0x4000, 0x1000000, 0x2000000, 0x4000000, 0x40000000
_CHANGES = _MODIFY | _ATTRIB | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE
_DIR_MASK = _CHANGES | _DELETE_SELF | _MOVE_SELF | _ONLYDIR | _DONT_FOLLOW | _EXCL_UNLINK


def wanted() -> bool:
    """Whether the loop should try to watch its work tree (`KILO_LOOP_WATCH=0`: never)."""
    return os.environ.get(SWITCH, "1") != "0"


class Unwatchable(Exception):
    """This work tree cannot be watched faithfully (a nested repository, too many directories)."""


class TreeWatch:
    """Watches on the directories of the work tree at `root` (its top level) and on git's own files."""

    def __init__(self, inotify: INotify, root: Path) -> None:
        self._inotify = inotify
        self._root = root
        self._dirs: dict[int, str] = {}  # watch -> directory, relative to root ("" is root)
        self._git: dict[int, frozenset[str] | None] = {}  # watches on git's folders -> the names that count
        self._pending: dict[str, int] = {}  # path -> its events since the last take, OR-ed
        self._born: set[str] = set()  # paths whose first event made them (they did not exist before)
        self.attributes = False  # a .gitattributes was seen: git may filter what a file holds
        self._new_dirs: set[str] = set()
        self._skipped: list[str] = []  # folders `start` left out as probably ignored
        # Events were lost or the watches no longer match the tree: only a full read can tell, and a
        # new watch from it.
        self.broken = False

    @classmethod
    def start(cls, root: Path, ignored: TreeStatus | None = None) -> TreeWatch | None:
        """Watch the work tree at `root`; None when it cannot be. Folders that are probably ignored
        (`ignored`, an earlier read, says so, or a name like node_modules) are left out until
        `settle` checks them against the read taken next."""
        try:
            inotify = _inotify()
        except (ImportError, OSError, AttributeError):  # AttributeError: a libc without inotify
            return None
        watch = cls(inotify, root)
        try:
            watch._watch_git()
            watch._watch_dirs("", lambda path: _probably_ignored(path, ignored), watch._skipped)
        except (OSError, Unwatchable):
            watch.close()
            return None
        return watch

    def settle(self, status: TreeStatus) -> bool:
        """Fit the watches to `status`, the first full read since `start`: drop the ones on folders git
        ignores (their files are one "ignored folder" to status), add the skipped folders it does not
        ignore. False when any was added: changes there since `start` were missed, so read again.
        Unwatchable: a submodule or a nested repository."""
        if any(entry.submodule for entry in status.entries.values()):
            raise Unwatchable("a submodule")
        for wd, folder in list(self._dirs.items()):
            if folder and _ignored(folder, status):
                self._unwatch(wd)
        missed = [folder for folder in self._skipped if not _ignored(folder, status)]
        self._skipped = []
        for folder in missed:
            self._watch_dirs(folder, lambda path: _ignored_dir(path, status))
        return not missed

    def close(self) -> None:
        self._inotify.close()

    def take(self) -> dict[str, int] | None:
        """The paths (files, and created or deleted directories) changed since the last take, relative
        to the top level, each with its events (`only_edited` reads them); None when only a full read
        can tell."""
        self._drain()
        # A path made and removed again since (an atomic write's temporary file) is as it was.
        paths = {path: mask for path, mask in self._pending.items()
                 if path not in self._born or os.path.lexists(self._root / path)}
        self._pending.clear()
        self._born.clear()
        if any(os.path.basename(path) in _RULE_FILES for path in paths):
            self.broken = True  # what git ignores may have changed, and with it what to watch
        return None if self.broken or len(paths) > MAX_PATHS else paths

    def discard(self, path: str) -> None:
        """The loop wrote `path` and knows its status: forget the events of that write."""
        self._drain()
        self._pending.pop(path, None)

    def follow(self, status: TreeStatus) -> None:
        """Watch the directories created since, unless `status` (read since) says git ignores them."""
        new, self._new_dirs = self._new_dirs, set()
        try:
            for path in sorted(new):
                if (self._root / path).is_dir() and not _ignored(path, status):
                    self._watch_dirs(path, lambda child: _ignored_dir(child, status))
        except (OSError, Unwatchable):
            self.broken = True

    # ------------------------------------------------------------ private
    def _drain(self) -> None:
        for event in self._inotify.read(timeout=0):
            if event.mask & _OVERFLOW or self._counts(event.wd, event.mask, event.name):
                # Lost events, or a commit, `git add -f`, a new exclude: what git ignores, and with it
                # which folders need a watch, may have changed.
                self.broken = True
            elif event.wd in self._dirs:
                self._note(self._dirs[event.wd], event.mask, event.name)

    def _note(self, directory: str, mask: int, name: str) -> None:
        if mask & (_DELETE_SELF | _MOVE_SELF):
            if not directory or mask & _MOVE_SELF:  # the top level itself, or paths below a moved one
                self.broken = True
            return  # a deleted directory: its parent reports it by name
        if not mask & _CHANGES or not name:
            return
        path = f"{directory}/{name}" if directory else name
        self.attributes = self.attributes or name == ".gitattributes"
        if mask & _ISDIR and mask & (_MOVED_FROM | _MOVED_TO):
            self.broken = True  # its watches below would keep the old path
        elif mask & _ISDIR and mask & _CREATE:
            self._new_dirs.add(path)
        if path not in self._pending and mask & _CREATE:  # (a rename may replace a file: not MOVED_TO)
            self._born.add(path)
        self._pending[path] = self._pending.get(path, 0) | mask

    def _counts(self, wd: int, mask: int, name: str) -> bool:
        """Whether an event on one of git's folders may change what status says."""
        if wd not in self._git:
            return False
        names = self._git[wd]
        return names is None or name in names or bool(mask & (_DELETE_SELF | _MOVE_SELF))

    def _watch_git(self) -> None:
        """Watch the files of git's that status reads: HEAD, the index, the branch HEAD names (loose or
        packed), config, and the exclude/attributes/sparse-checkout files; other repositories' work
        (a fleet's other worktrees making branches, objects, logs) is not watched."""
        git_dir, common = _git_dirs(self._root)
        places: dict[Path, frozenset[str] | None] = {}
        info = frozenset({"exclude", "attributes", "sparse-checkout"})
        for folder, names in ((git_dir, frozenset({"HEAD", "index", "info", "config.worktree"})),
                              (common, frozenset({"packed-refs", "config", "info"})),
                              (git_dir / "info", info), (common / "info", info)):
            places[folder] = (places.get(folder) or frozenset()) | names
        branch = _branch(git_dir)
        if branch is not None:
            ref = common / branch
            if ref.parent.is_dir():
                places[ref.parent] = frozenset({ref.name})
            else:  # an unborn branch below a folder not made yet: any change of the branches counts
                places.update(dict.fromkeys(_subdirs(common / "refs" / "heads")))
        for folder, counted in places.items():
            if folder.is_dir():
                self._git[self._inotify.add_watch(folder, _CHANGES | _DELETE_SELF | _MOVE_SELF | _ONLYDIR
                                                  | _DONT_FOLLOW)] = counted
        self.attributes = (common / "info" / "attributes").exists() or _global_attributes(self._root)

    def _watch_dirs(self, top: str, skip: Callable[[str], bool], skipped: list[str] | None = None) -> None:
        """Watch `top` and the folders below it, but those `skip` names (and what is below them),
        which go to `skipped` when given."""
        stack = [top]
        while stack:
            relative = stack.pop()
            try:
                self._dirs[self._inotify.add_watch(self._root / relative, _DIR_MASK)] = relative
                entries = list(os.scandir(self._root / relative))
            except FileNotFoundError:  # gone already: its parent's event names it
                continue
            if len(self._dirs) > MAX_DIRS:
                raise Unwatchable(f"more than {MAX_DIRS} directories")
            names = [entry.name for entry in entries if entry.is_dir(follow_symlinks=False)]
            self.attributes = self.attributes or any(entry.name == ".gitattributes" for entry in entries)
            if relative and ".git" in names:
                raise Unwatchable(f"a nested repository at {relative}")
            prefix = relative + "/" if relative else ""
            for child in (prefix + name for name in names if name != ".git"):
                if not skip(child):
                    stack.append(child)
                elif skipped is not None:
                    skipped.append(child)

    def _unwatch(self, wd: int) -> None:
        folder = self._dirs.pop(wd)
        with contextlib.suppress(OSError):  # gone already
            self._inotify.rm_watch(wd)
        below = folder + "/"
        for path in [path for path in self._pending if path == folder or path.startswith(below)]:
            del self._pending[path]


def only_edited(mask: int) -> bool:
    """Whether the events of a path were all writes into the file as it was (no new file, no rename,
    no change of mode): then what it holds tells its status, unless git filters it (`attributes`)."""
    return mask == _MODIFY


def _probably_ignored(path: str, status: TreeStatus | None) -> bool:
    return os.path.basename(path) in _LIKELY_IGNORED or (status is not None and _ignored_dir(path, status))


def _ignored(path: str, status: TreeStatus) -> bool:
    """Whether git reports `path`, or a directory above it, as an ignored directory."""
    parts = path.split("/")
    return any(_ignored_dir("/".join(parts[:n]), status) for n in range(1, len(parts) + 1))


def _ignored_dir(path: str, status: TreeStatus) -> bool:
    entry = status.entries.get(path + "/")
    return entry is not None and entry.code == "!!"


def _global_attributes(root: Path) -> bool:
    """Whether attributes from outside the repository may apply (a user or system attributes file)."""
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    if (config / "git" / "attributes").exists() or Path("/etc/gitattributes").exists():
        return True
    try:
        return bool(git_output(root, "config", "--get", "core.attributesFile").strip())
    except GitError:  # unset: git config exits 1
        return False


def _inotify() -> INotify:
    """A new inotify instance. inotify_simple finds libc with ctypes.util.find_library, which runs
    `ldconfig -p` (~30 ms); the interpreter has libc loaded already, so hand it that one."""
    import ctypes  # here: Linux only, and only a run needs them

    import inotify_simple

    if getattr(inotify_simple, "_libc", None) is None:
        inotify_simple._libc = ctypes.CDLL(None, use_errno=True)
    return inotify_simple.INotify()


def _git_dirs(root: Path) -> tuple[Path, Path]:
    """The git directory of the work tree at `root` and the common one (they differ in a linked
    worktree: `.git` is a file naming its folder, which names the common one in `commondir`)."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git, dot_git
    text = dot_git.read_text(encoding="utf-8", errors="replace")  # OSError: neither (watch nothing)
    if not text.startswith("gitdir: "):
        raise Unwatchable(f"{dot_git} names no git directory")
    git_dir = (root / text.removeprefix("gitdir: ").strip()).resolve()
    try:
        common = git_dir / (git_dir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return git_dir, git_dir
    return git_dir, common.resolve()


def _branch(git_dir: Path) -> str | None:
    """The ref HEAD names (`refs/heads/main`), or None when HEAD is detached."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return head.removeprefix("ref: ").strip() if head.startswith("ref: ") else None


def _subdirs(top: Path) -> Iterator[Path]:
    """`top` and every directory below it."""
    for directory, _names, _files in os.walk(top):
        yield Path(directory)
