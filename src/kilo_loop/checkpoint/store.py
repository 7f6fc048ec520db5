"""Per-iteration git checkpoints and "revert before #N".

Before each iteration the loop records the tracked files in git's own object
store, which stores a file once however many checkpoints hold it:

- the work tree's tracked files as a tree, written through a scratch copy of the
  index (`git add -u` + `git write-tree` with GIT_INDEX_FILE pointing at it), only
  when they differ from HEAD; the index as a tree too, only when it differs from
  HEAD. Both are kept reachable (so `git gc` keeps them) by refs
  `refs/kilo-loop/<runId>/iter-NN` and `…/iter-NN-index`;
- the content of the untracked, non-ignored files as a third tree (`…/iter-NN-untracked`),
  each file up to `undoable.UNTRACKED_FILE_CAP` and all of them up to
  `UNTRACKED_TOTAL_CAP`; what is left out is named in the JSON (`untrackedLeftOut`),
  so a revert brings back every other file of the work tree;
- `runs/<runId>/checkpoints/iter-NN.json` (format 2): HEAD, the three trees, the
  untracked files, the ignored entries present and the tracked paths that
  differed from HEAD.

Runs recorded before (format 1) hold `iter-NN.patch` (`git diff HEAD --binary`)
and `iter-NN.staged.patch` (`git diff --cached HEAD --binary`) beside the JSON;
they are still read and reverted to, and an index with unmerged entries (which
cannot be written as a tree) is still captured that way. Revert works on patches
either way: for format 2 it derives them from the trees (`git diff HEAD <tree>`).

Capture never commits and never writes the index (`GIT_OPTIONAL_LOCKS=0` stops
even git's opportunistic stat refresh). Revert brings the tracked files back to
their state at the checkpoint (from HEAD plus the checkpoint's own patches) and
deletes only files that are untracked-not-ignored now and were neither
untracked nor ignored at the checkpoint. It never deletes inside `.git`, a
submodule, a nested repository or outside the project, and never moves HEAD.
If HEAD moved since the checkpoint it refuses unless forced; a forced revert
restores the tracked files from the checkpoint's commit, leaving HEAD alone.

Paths are kept as git prints them with `-z`, relative to the repository's top
level, decoded with the file system encoding (surrogateescape), so names with
spaces, newlines or undecodable bytes round-trip.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from kilo_loop import gitstatus
from kilo_loop.checkpoint.undoable import UNTRACKED_FILE_CAP, UNTRACKED_TOTAL_CAP
from kilo_loop.errors import KiloLoopError
from kilo_loop.git import GitError, git_output, run_git
from kilo_loop.gitstatus import TreeStatus
from kilo_loop.run.files import write_bytes_atomic
from kilo_loop.run.layout import LOOP_DIR

log = logging.getLogger(__name__)

FORMAT_VERSION = 2  # trees in git's object store
PATCH_FORMAT = 1  # patches beside the JSON
REF_ROOT = "refs/kilo-loop"
_REF_SAFE_RE = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")
_NAME_RE = re.compile(r"iter-(\d{2,})\.json")
_OID_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_GITLINK_MODE = "160000"
_UNTRACKED_CACHE = "untracked-tree.json"
"""Beside the checkpoints: the last untracked tree and what it was written from (names, sizes, times)."""
_PATHS_PER_CALL = 500  # pathspecs per git command line, well under ARG_MAX
_DIFF_ARGS = ("diff", "--binary", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color",
              "--ignore-submodules=all", "--no-relative", "--src-prefix=a/", "--dst-prefix=b/")
_NAMES_ARGS = ("diff", "--name-only", "--no-renames", "--no-ext-diff", "--ignore-submodules=all",
               "--no-relative")


class CheckpointError(KiloLoopError):
    """A checkpoint cannot be captured, read or reverted to; the message says why."""


@dataclass(frozen=True)
class Checkpoint:
    iteration: int
    head: str | None
    created_at: str
    untracked: tuple[str, ...]
    patch_file: str
    patch_bytes: int
    dirty: bool
    path: Path
    changed: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    staged_patch_file: str | None = None
    prefix: str = ""
    version: int = PATCH_FORMAT
    tree: str | None = None  # format 2: the tracked files of the work tree; None = as HEAD
    index_tree: str | None = None  # format 2: the index; None = as HEAD
    untracked_tree: str | None = None  # format 2: the untracked files' content; None = none kept
    untracked_left_out: tuple[str, ...] = ()  # untracked files over the caps, not kept

    def to_json(self) -> dict[str, Any]:
        common: dict[str, Any] = {
            "version": self.version, "iteration": self.iteration, "head": self.head,
            "createdAt": self.created_at, "dirty": self.dirty, "prefix": self.prefix,
            "patchBytes": self.patch_bytes,
        }
        if self.version == PATCH_FORMAT:
            common |= {"patchFile": self.patch_file, "stagedPatchFile": self.staged_patch_file}
        else:
            common |= {"tree": self.tree, "indexTree": self.index_tree, "untrackedTree": self.untracked_tree,
                       "untrackedLeftOut": list(self.untracked_left_out)}
        return common | {"changed": list(self.changed), "untracked": list(self.untracked),
                         "ignored": list(self.ignored)}


@dataclass(frozen=True)
class RevertPlan:
    """What a revert would do, computed without changing anything.

    `restore`, `delete`, `keep` and `missing` are for people; `checkout`,
    `unstage` and `clear` are the steps on tracked paths that produce `restore`.
    `delete` is an upper bound: the revert lists untracked files again after
    restoring tracked ones, and a restored .gitignore may make some ignored (kept).
    """

    iteration: int
    checkpoint_head: str | None
    current_head: str | None
    restore: tuple[str, ...]
    delete: tuple[str, ...]
    keep: tuple[str, ...]
    missing: tuple[str, ...]
    checkout: tuple[str, ...] = ()
    unstage: tuple[str, ...] = ()
    clear: tuple[str, ...] = ()
    bring_back: tuple[str, ...] = ()  # untracked files gone since the checkpoint that it kept: written back

    @property
    def head_moved(self) -> bool:
        return self.checkpoint_head != self.current_head


@dataclass(frozen=True)
class RevertResult:
    iteration: int
    restored: tuple[str, ...]
    deleted: tuple[str, ...]
    kept: tuple[str, ...]
    missing: tuple[str, ...]
    head: str | None
    forced: bool


# ---------------------------------------------------------------- pure logic


def validate_iteration(iteration: object) -> int:
    if isinstance(iteration, bool) or not isinstance(iteration, int) or iteration < 1:
        raise CheckpointError(f"iteration must be an integer >= 1, got {iteration!r}")
    return iteration


def checkpoint_stem(iteration: int) -> str:
    """`iter-01`, …, `iter-99`, `iter-100`: two digits at least."""
    return f"iter-{validate_iteration(iteration):02d}"


def split_nul(data: bytes) -> list[str]:
    return [os.fsdecode(item) for item in data.split(b"\0") if item]


@dataclass(frozen=True)
class StatusLists:
    changed: frozenset[str]  # differs from HEAD in the index or the work tree
    untracked: frozenset[str]
    staged: bool  # the index differs from HEAD
    unmerged: bool = False  # a merge conflict is in the index: it cannot be written as a tree
    ignored: frozenset[str] = frozenset()  # ignored files, and ignored directories with a trailing slash

    @classmethod
    def of(cls, status: TreeStatus) -> StatusLists:
        """The lists a checkpoint keeps (submodules are left to their own repositories)."""
        return cls(status.changed(), status.untracked, status.staged, status.unmerged, status.ignored)


def parse_status(data: bytes) -> tuple[str | None, StatusLists]:
    """HEAD's commit (None before the first commit) and the lists, from `git status --porcelain=v2
    --branch -z` (see `gitstatus.ARGS`); paths are relative to the top level."""
    status = gitstatus.parse(data)
    return status.head, StatusLists.of(status)


def ref_component(run_id: str) -> str:
    """`run_id` as one component of a ref name (hex-encoded when git would refuse it as is)."""
    if _REF_SAFE_RE.fullmatch(run_id) and not run_id.endswith(".lock"):
        return run_id
    return "x-" + run_id.encode("utf-8", "surrogateescape").hex()


def checkpoint_ref(run_id: str, iteration: int, index: bool = False, suffix: str = "") -> str:
    suffix = suffix or ("-index" if index else "")
    return f"{REF_ROOT}/{ref_component(run_id)}/{checkpoint_stem(iteration)}{suffix}"


def untracked_kept(sizes: Iterable[tuple[str, int | None]]) -> tuple[list[str], list[str]]:
    """(kept, left out): the untracked files whose content a checkpoint keeps, smallest first within the
    caps; a directory entry (a nested repository), a file that vanished or one over a cap is left out."""
    kept: list[str] = []
    left_out: list[str] = []
    total = 0
    for path, size in sorted(sizes, key=lambda item: (item[1] is None, item[1] or 0, item[0])):
        if size is None or path.endswith("/") or size > UNTRACKED_FILE_CAP or total + size > UNTRACKED_TOTAL_CAP:
            left_out.append(path)
            continue
        kept.append(path)
        total += size
    return sorted(kept), sorted(left_out)


def parse_entries(data: bytes) -> list[tuple[str, str]]:
    """(mode, path) pairs from `git ls-tree -z` or `git ls-files -s -z` output ("mode ...\tpath")."""
    entries: list[tuple[str, str]] = []
    for item in data.split(b"\0"):
        meta, tab, name = item.partition(b"\t")
        if tab:
            entries.append((meta.split(b" ", 1)[0].decode("ascii", errors="replace"), os.fsdecode(name)))
    return entries


def index_map(data: bytes) -> dict[str, str]:
    """path -> "mode oid stage" from `git ls-files -s -z` output."""
    entries: dict[str, str] = {}
    for item in data.split(b"\0"):
        meta, tab, name = item.partition(b"\t")
        if tab:
            entries[os.fsdecode(name)] = meta.decode("ascii", errors="replace")
    return entries


def is_safe_relpath(path: str) -> bool:
    """A plain relative path with no `..`, no empty parts and nothing inside `.git`."""
    if not path or path.startswith("/") or "\0" in path:
        return False
    parts = path.rstrip("/").split("/")
    return all(part not in ("", ".", "..") and part.lower() != ".git" for part in parts)


def in_scope(path: str, prefix: str) -> bool:
    return path.startswith(prefix)


def inside_any(path: str, roots: AbstractSet[str]) -> bool:
    """True if `path` is one of `roots` or lies below one of them."""
    parts = path.rstrip("/").split("/")
    return any("/".join(parts[:depth]) in roots for depth in range(1, len(parts) + 1))


def existed_before(path: str, recorded: AbstractSet[str]) -> bool:
    """Was `path`, or a directory holding it, untracked or ignored at the checkpoint?

    `recorded` holds file paths and directory entries ending in `/` (git lists
    an ignored directory or a nested repository once, with a trailing slash).
    """
    if path in recorded:
        return True
    parts = path.rstrip("/").split("/")
    return any("/".join(parts[:depth]) + "/" in recorded for depth in range(1, len(parts)))


def is_protected(path: str, roots: AbstractSet[str]) -> bool:
    """Never deleted by revert: unsafe paths, nested repositories, anything below `roots`.

    `roots` are submodules and the loop's own folder (its runs and checkpoints).
    """
    return not is_safe_relpath(path) or path.endswith("/") or inside_any(path, roots)


def protected_roots(prefix: str, gitlinks: Iterable[str], extra: Iterable[str] = ()) -> frozenset[str]:
    return frozenset([*gitlinks, prefix + LOOP_DIR, *extra])


def choose_untracked_deletions(
    untracked_now: Iterable[str], recorded: AbstractSet[str], roots: AbstractSet[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split today's untracked-not-ignored files into (delete, keep)."""
    delete: list[str] = []
    keep: list[str] = []
    for path in untracked_now:
        if is_protected(path, roots) or existed_before(path, recorded):
            keep.append(path)
        else:
            delete.append(path)
    return tuple(sorted(delete)), tuple(sorted(keep))


@dataclass(frozen=True)
class TrackedActions:
    checkout: tuple[str, ...]  # present in the source tree: take index and file from it
    unstage: tuple[str, ...]  # absent from the source tree but in the index now
    clear: tuple[str, ...]  # working file removed because the checkpoint patch recreates it
    delete: tuple[str, ...]  # working file created after the checkpoint
    keep: tuple[str, ...]  # working file that existed (untracked or ignored) before the checkpoint


def classify_tracked(
    candidates: Iterable[str], source_files: AbstractSet[str], index_files: AbstractSet[str],
    recreated: AbstractSet[str], recorded: AbstractSet[str],
) -> TrackedActions:
    """Decide, for each tracked path that may differ from the checkpoint, how to bring it back."""
    checkout: list[str] = []
    unstage: list[str] = []
    clear: list[str] = []
    delete: list[str] = []
    keep: list[str] = []
    for path in sorted(set(candidates)):
        if path in source_files:
            checkout.append(path)
            continue
        if path in index_files:
            unstage.append(path)
        if path in recreated:
            clear.append(path)
        elif existed_before(path, recorded):
            keep.append(path)
        else:
            delete.append(path)
    return TrackedActions(tuple(checkout), tuple(unstage), tuple(clear), tuple(delete), tuple(keep))


def restore_candidates(
    checkpoint: Checkpoint, changed_now: AbstractSet[str], gitlinks: AbstractSet[str]
) -> frozenset[str]:
    """Tracked paths that differ from the source tree now or did at the checkpoint."""
    return frozenset(
        path for path in changed_now | frozenset(checkpoint.changed)
        if in_scope(path, checkpoint.prefix) and is_safe_relpath(path) and not inside_any(path, gitlinks)
    )


def build_plan(checkpoint: Checkpoint, survey: Survey) -> RevertPlan:
    recorded = frozenset(checkpoint.untracked) | frozenset(checkpoint.ignored)
    tracked = classify_tracked(survey.candidates, survey.source_files, survey.index_files,
                               frozenset(checkpoint.changed), recorded)
    delete, keep = choose_untracked_deletions(survey.untracked_now, recorded, survey.protected)
    # Every candidate is reset, but only those not already as at the checkpoint are worth showing.
    restored = sorted((set(tracked.checkout) | set(tracked.clear)) & survey.off_checkpoint)
    return RevertPlan(
        iteration=checkpoint.iteration, checkpoint_head=checkpoint.head, current_head=survey.current_head,
        restore=tuple(restored), delete=tuple(sorted(set(delete) | set(tracked.delete))),
        keep=tuple(sorted(set(keep) | set(tracked.keep))), missing=survey.missing, bring_back=survey.bring_back,
        checkout=tracked.checkout, unstage=tracked.unstage, clear=tracked.clear,
    )


def checkpoint_from_json(data: object, path: Path, iteration: int) -> Checkpoint:
    """Validate a checkpoint JSON document; anything unexpected is a CheckpointError."""
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: not a JSON object")
    if data.get("iteration") != iteration:
        raise CheckpointError(f"{path}: iteration {data.get('iteration')!r} does not match the file name")
    head = data.get("head")
    # HEAD is handed to git as an argument: accept an object id and nothing else.
    if head is not None and not (isinstance(head, str) and _OID_RE.fullmatch(head)):
        raise CheckpointError(f"{path}: head {head!r} is not a commit id")
    stem = checkpoint_stem(iteration)
    version = data.get("version", PATCH_FORMAT)
    if version not in (PATCH_FORMAT, FORMAT_VERSION):
        raise CheckpointError(f"{path}: format version {version!r} is not one this kilo-loop reads")
    staged = data.get("stagedPatchFile")
    patches = version == PATCH_FORMAT
    return Checkpoint(
        iteration=iteration, head=head, created_at=_str_field(data, "createdAt", path),
        untracked=_paths_field(data, "untracked", path), patch_file=f"{stem}.patch" if patches else "",
        patch_bytes=_int_field(data, "patchBytes", path), dirty=bool(data.get("dirty")), path=path,
        changed=_paths_field(data, "changed", path), ignored=_paths_field(data, "ignored", path),
        staged_patch_file=f"{stem}.staged.patch" if staged and patches else None,
        prefix=_str_field(data, "prefix", path, default=""), version=version,
        tree=None if patches else _oid_field(data, "tree", path),
        index_tree=None if patches else _oid_field(data, "indexTree", path),
        untracked_tree=None if patches else _oid_field(data, "untrackedTree", path),
        untracked_left_out=_paths_field(data, "untrackedLeftOut", path),
    )


def _oid_field(data: Mapping[str, object], key: str, path: Path) -> str | None:
    # Object ids are handed to git as arguments: accept an object id and nothing else.
    value = data.get(key)
    if value is not None and not (isinstance(value, str) and _OID_RE.fullmatch(value)):
        raise CheckpointError(f"{path}: {key} {value!r} is not an object id")
    return value


def _str_field(data: Mapping[str, object], key: str, path: Path, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise CheckpointError(f"{path}: field {key!r} must be a string")
    return value


def _int_field(data: Mapping[str, object], key: str, path: Path) -> int:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CheckpointError(f"{path}: field {key!r} must be a non-negative integer")
    return value


def _paths_field(data: Mapping[str, object], key: str, path: Path) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise CheckpointError(f"{path}: field {key!r} must be a list of paths")
    return tuple(value)


# ---------------------------------------------------------------- git I/O


@dataclass(frozen=True)
class _Repo:
    root: Path  # the work tree's top level
    prefix: str  # the project relative to root: "" or "sub/dir/"
    index: Path  # the index file

    @classmethod
    def open(cls, project: Path) -> _Repo:
        if not project.is_dir():
            raise CheckpointError(f"project directory {project} does not exist")
        return _open_repo(project.resolve())

    def git(self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None,
            what: str | None = None) -> bytes:
        return _run_git(self.root, *args, stdin=stdin, env=env, what=what)

    @property
    def scope(self) -> tuple[str, ...]:
        return ("--", self.prefix) if self.prefix else ()

    def head(self) -> str | None:
        try:
            proc = run_git(self.root, "rev-parse", "-q", "--verify", "HEAD^{commit}")
        except GitError as exc:
            raise CheckpointError(str(exc)) from exc
        if proc.returncode != 0:
            return None  # an unborn branch: no commit yet
        return proc.stdout.decode().strip() or None

    def empty_tree(self) -> str:
        return self.git("hash-object", "-t", "tree", "--stdin", stdin=b"").decode().strip()

    def names(self, *args: str) -> list[str]:
        return split_nul(self.git(*args, "-z", *self.scope))

    def tree_entries(self, treeish: str) -> list[tuple[str, str]]:
        """(mode, path) of every entry of `treeish`, recursively."""
        return parse_entries(self.git("ls-tree", "-r", "-z", "--full-tree", treeish))

    def index_entries(self) -> list[tuple[str, str]]:
        """(mode, path) of every index entry."""
        return parse_entries(self.git("ls-files", "-s", "-z"))


@lru_cache(maxsize=32)
def _open_repo(project: Path) -> _Repo:
    """Where `project` lies in its repository; cached, as it does not change while the loop runs
    (one git process less per iteration)."""
    out = _run_git(project, "rev-parse", "--is-inside-work-tree", "--show-toplevel", "--show-prefix",
                   "--git-path", "index", what=f"{project} is not inside a git work tree")
    inside, toplevel, prefix, index = [*os.fsdecode(out).split("\n"), "", "", "", ""][:4]
    if inside != "true":
        raise CheckpointError(f"{project} is not inside a git work tree")
    return _Repo(Path(toplevel), prefix, project / index)


def _run_git(cwd: Path, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None,
             what: str | None = None) -> bytes:
    try:
        return git_output(cwd, *args, stdin=stdin, env=env, what=what)
    except GitError as exc:
        raise CheckpointError(str(exc)) from exc


# ---------------------------------------------------------------- capture


def capture_checkpoint(project: Path, checkpoints_dir: Path, iteration: int,
                       status: TreeStatus | None = None) -> Checkpoint:
    """Record the working tree's state before `iteration` as trees in git's object store (format 2);
    overwrites an older capture of it. The run id for the refs is the run directory's name.

    `status` is a `gitstatus.read_status` of the project taken since the work tree last changed (the
    loop's own read after the previous iteration); without it, or for a project below the top level,
    the status is read here."""
    repo = _Repo.open(project)
    # One status call gives HEAD, the changed, untracked and ignored lists and whether anything is staged.
    if status is None or repo.prefix:
        status = _read_status(repo)
    head, lists = status.head, StatusLists.of(status)
    if lists.unmerged:  # a conflicted index cannot be written as a tree; patches can hold it
        return capture_patch_checkpoint(project, checkpoints_dir, iteration)
    tree, index_tree = _write_trees(repo, head, lists)
    untracked_tree, left_out = _write_untracked_tree(repo, lists.untracked, checkpoints_dir / _UNTRACKED_CACHE)
    _keep_reachable(repo, checkpoints_dir.parent.name, iteration, tree, index_tree, untracked_tree)
    stem = checkpoint_stem(iteration)
    checkpoint = Checkpoint(
        iteration=iteration, head=head, created_at=_now(), untracked=tuple(sorted(lists.untracked)),
        patch_file="", patch_bytes=_changed_bytes(repo, lists.changed),
        dirty=bool(lists.changed or lists.untracked), path=checkpoints_dir / f"{stem}.json",
        changed=tuple(sorted(lists.changed)), ignored=tuple(sorted(lists.ignored)), prefix=repo.prefix,
        version=FORMAT_VERSION, tree=tree, index_tree=index_tree, untracked_tree=untracked_tree,
        untracked_left_out=tuple(left_out),
    )
    for stale in (f"{stem}.patch", f"{stem}.staged.patch"):  # from an older capture of this iteration
        (checkpoints_dir / stale).unlink(missing_ok=True)
    # Not fsynced: a kill -9 cannot tear a renamed file, and the run's state.json, fsynced once per
    # iteration, commits the file system's journal (and this rename with it) soon after.
    _write_json(checkpoint, durable=False)
    return checkpoint


def _read_status(repo: _Repo) -> TreeStatus:
    try:
        return gitstatus.read_status(repo.root, repo.prefix)
    except GitError as exc:
        raise CheckpointError(str(exc)) from exc


def _write_trees(repo: _Repo, head: str | None, status: StatusLists) -> tuple[str | None, str | None]:
    """(work tree, index) as tree objects, each None when it is as HEAD. Uses a scratch copy of the
    index, so the real one is never written and its stat cache spares re-hashing unchanged files."""
    want_index = status.staged or head is None
    if not (status.changed or want_index):
        return None, None
    with tempfile.TemporaryDirectory(prefix="kilo-loop-checkpoint-") as scratch:
        index = Path(scratch) / "index"
        if repo.index.is_file():
            shutil.copyfile(repo.index, index)
        env = {"GIT_INDEX_FILE": str(index)}
        index_tree = _oid(repo.git("write-tree", env=env)) if want_index else None
        if not status.changed:
            return None, index_tree
        # Only the paths status named: `add -u` then looks at those instead of the whole work tree.
        repo.git("add", "-u", "--pathspec-from-file=-", "--pathspec-file-nul", env=env,
                 stdin=_pathspec_stdin(sorted(status.changed)))
        return _oid(repo.git("write-tree", env=env)), index_tree


def _write_untracked_tree(repo: _Repo, untracked: Iterable[str],
                          cache: Path | None = None) -> tuple[str | None, list[str]]:
    """The untracked files' content as a tree (None when none is kept), and the files left out. With
    `cache`, a tree written for the same files with the same sizes and times is reused (no git run)."""
    stats: list[tuple[str, int | None, int]] = []
    loop_dir = f"{repo.prefix}{LOOP_DIR}/"
    for path in untracked:
        if path.startswith(loop_dir):  # the loop's own files: the run keeps those itself
            continue
        try:
            info = (repo.root / path).lstat()
            stats.append((path, info.st_size, info.st_mtime_ns))
        except OSError:
            stats.append((path, None, 0))
    kept, left_out = untracked_kept([(path, size) for path, size, _ in stats])
    if not kept:
        return None, left_out
    key = json.dumps(sorted(stats))
    cached = _cached_tree(cache, key)
    if cached is not None:
        return cached, left_out
    with tempfile.TemporaryDirectory(prefix="kilo-loop-checkpoint-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "untracked")}
        repo.git("update-index", "--add", "-z", "--stdin", env=env, stdin=_pathspec_stdin(kept))
        tree = _oid(repo.git("write-tree", env=env))
    if cache is not None:
        with contextlib.suppress(OSError):
            write_bytes_atomic(cache, json.dumps({"key": key, "tree": tree}).encode(), False)
    return tree, left_out


def _cached_tree(cache: Path | None, key: str) -> str | None:
    """The tree recorded in `cache` for `key` (the untracked files' names, sizes and times), if any."""
    if cache is None:
        return None
    try:
        data = json.loads(cache.read_bytes())
    except (OSError, ValueError):
        return None
    tree = data.get("tree") if isinstance(data, dict) and data.get("key") == key else None
    return tree if isinstance(tree, str) and _OID_RE.fullmatch(tree) else None


def _keep_reachable(repo: _Repo, run_id: str, iteration: int, tree: str | None, index_tree: str | None,
                    untracked_tree: str | None = None) -> None:
    """Point refs/kilo-loop/<runId>/iter-NN(-index|-untracked) at the trees so `git gc` keeps them."""
    updates = [f"update {checkpoint_ref(run_id, iteration, suffix=suffix)} {oid}\n"
               for suffix, oid in (("", tree), ("-index", index_tree), ("-untracked", untracked_tree)) if oid]
    if updates:
        repo.git("update-ref", "--stdin", stdin="".join(updates).encode())


def _changed_bytes(repo: _Repo, changed: Iterable[str]) -> int:
    """Format 2's `patchBytes`: the size of the tracked files that differ from HEAD (no patch is made)."""
    total = 0
    for path in changed:
        with contextlib.suppress(OSError):  # deleted in the work tree
            total += (repo.root / path).lstat().st_size
    return total


def _oid(out: bytes) -> str:
    return out.decode("ascii").strip()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _write_json(checkpoint: Checkpoint, durable: bool = True) -> None:
    # The JSON goes last: its presence marks a complete checkpoint. The stdlib
    # encoder (ASCII-escaped) keeps undecodable file names (lone surrogates) intact.
    write_bytes_atomic(checkpoint.path, json.dumps(checkpoint.to_json(), indent=2).encode() + b"\n", durable)


def capture_patch_checkpoint(project: Path, checkpoints_dir: Path, iteration: int) -> Checkpoint:
    """Format 1: the working tree's state before `iteration` as patches beside the JSON."""
    stem = checkpoint_stem(iteration)
    repo = _Repo.open(project)
    status = _read_status(repo)
    head, lists = status.head, StatusLists.of(status)
    base = head or repo.empty_tree()
    patch = repo.git(*_DIFF_ARGS, base, *repo.scope)
    staged = repo.git(*_DIFF_ARGS, "--cached", base, *repo.scope) if lists.staged or head is None else b""
    checkpoints_dir.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(checkpoints_dir / f"{stem}.patch", patch)
    staged_name = f"{stem}.staged.patch" if staged else None
    if staged_name:
        write_bytes_atomic(checkpoints_dir / staged_name, staged)
    else:
        (checkpoints_dir / f"{stem}.staged.patch").unlink(missing_ok=True)
    checkpoint = Checkpoint(
        iteration=iteration, head=head, created_at=_now(), untracked=tuple(sorted(lists.untracked)),
        patch_file=f"{stem}.patch", patch_bytes=len(patch), dirty=bool(patch or staged or lists.untracked),
        path=checkpoints_dir / f"{stem}.json", changed=tuple(sorted(lists.changed)),
        ignored=tuple(sorted(lists.ignored)), staged_patch_file=staged_name, prefix=repo.prefix,
    )
    _write_json(checkpoint)
    return checkpoint


# ---------------------------------------------------------------- reading


def load_checkpoint(checkpoints_dir: Path, iteration: int) -> Checkpoint:
    path = checkpoints_dir / f"{checkpoint_stem(iteration)}.json"
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint before iteration {iteration} in {checkpoints_dir}") from None
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {exc}") from exc
    return checkpoint_from_json(data, path, iteration)


def list_checkpoints(checkpoints_dir: Path) -> list[Checkpoint]:
    """Every readable checkpoint in `checkpoints_dir`, by iteration; unreadable ones are logged and skipped."""
    if not checkpoints_dir.is_dir():
        return []
    found: list[Checkpoint] = []
    for entry in checkpoints_dir.iterdir():
        match = _NAME_RE.fullmatch(entry.name)
        number = int(match.group(1)) if match else 0
        if number < 1 or entry.name != f"iter-{number:02d}.json":
            continue  # not ours, or a non-canonical spelling such as iter-001.json
        try:
            found.append(load_checkpoint(checkpoints_dir, number))
        except CheckpointError as exc:
            log.warning("skipping checkpoint: %s", exc)
    return sorted(found, key=lambda checkpoint: checkpoint.iteration)


def read_checkpoint_patch(checkpoints_dir: Path, iteration: int, project: Path | None = None) -> str:
    """The `git diff HEAD` of the work tree before `iteration` (undecodable bytes replaced).

    Format 2 asks the repository of `project`, by default the one holding the run directory
    (`<project>/.kilocode-loop/runs/<runId>/checkpoints`)."""
    checkpoint = load_checkpoint(checkpoints_dir, iteration)
    if checkpoint.version == FORMAT_VERSION:
        repo = _Repo.open(project or _project_of(checkpoints_dir))
        return _tree_diff(repo, checkpoint, _source(repo, checkpoint), checkpoint.tree).decode("utf-8", "replace")
    try:
        return (checkpoints_dir / checkpoint.patch_file).read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise CheckpointError(f"cannot read the patch of checkpoint {iteration}: {exc}") from exc


def _project_of(checkpoints_dir: Path) -> Path:
    for directory in checkpoints_dir.resolve().parents:
        if directory.name == LOOP_DIR:
            return directory.parent
    raise CheckpointError(f"{checkpoints_dir} is not inside a project's {LOOP_DIR} folder")


def _tree_diff(repo: _Repo, checkpoint: Checkpoint, source: str, tree: str | None) -> bytes:
    """A format-2 tree as the patch format 1 stored: `git diff --binary <source> <tree>` in scope."""
    if tree is None:
        return b""
    return repo.git(*_DIFF_ARGS, source, tree, *repo.scope,
                    what=f"checkpoint {checkpoint.iteration}'s tree {tree} cannot be read from the repository")


@contextmanager
def _patches(repo: _Repo, checkpoints_dir: Path, checkpoint: Checkpoint,
             source: str) -> Iterator[tuple[Path | None, Path | None]]:
    """(staged patch, working-tree patch) files to apply, None where there is nothing to apply:
    format 1's own files, or format 2's trees written out as patches for the revert's duration."""
    if checkpoint.version == PATCH_FORMAT:
        yield _patch_paths(checkpoints_dir, checkpoint)
        return
    with tempfile.TemporaryDirectory(prefix="kilo-loop-revert-") as scratch:
        found: list[Path | None] = []
        for name, tree in (("staged.patch", checkpoint.index_tree), ("tree.patch", checkpoint.tree)):
            data = _tree_diff(repo, checkpoint, source, tree)
            found.append(Path(scratch) / name if data else None)
            if data:
                (Path(scratch) / name).write_bytes(data)
        yield found[0], found[1]


# ---------------------------------------------------------------- revert


@dataclass(frozen=True)
class Survey:
    """The repository as it is now, as far as a revert needs to know."""

    current_head: str | None
    source_files: frozenset[str]  # files in the tree the checkpoint's patch was taken against
    index_files: frozenset[str]
    gitlinks: frozenset[str]  # submodule paths in the source tree, HEAD or the index
    protected: frozenset[str]  # never deleted below: submodules, the loop's folder, the checkpoints
    candidates: frozenset[str]  # tracked paths to reset: see restore_candidates
    off_checkpoint: frozenset[str]  # candidates whose file or index entry is not as at the checkpoint
    untracked_now: tuple[str, ...]
    missing: tuple[str, ...]  # untracked at the checkpoint, gone now, and not kept by it
    bring_back: tuple[str, ...] = ()  # untracked at the checkpoint, gone now, kept by it: written back


def _source(repo: _Repo, checkpoint: Checkpoint) -> str:
    if checkpoint.head is None:
        return repo.empty_tree()
    repo.git("cat-file", "-e", f"{checkpoint.head}^{{commit}}",
             what=f"the checkpoint's commit {checkpoint.head} no longer exists")
    return checkpoint.head


def _protected(repo: _Repo, gitlinks: Iterable[str], checkpoints_dir: Path) -> frozenset[str]:
    extra: list[str] = []
    with contextlib.suppress(ValueError):  # the checkpoints live outside the repository
        extra.append(checkpoints_dir.resolve().relative_to(repo.root.resolve()).as_posix())
    return protected_roots(repo.prefix, gitlinks, extra)


def _survey(repo: _Repo, checkpoint: Checkpoint, source: str, checkpoints_dir: Path,
            patches: tuple[Path | None, Path | None]) -> Survey:
    current_head = repo.head()
    source_entries = repo.tree_entries(source)
    index_entries = repo.index_entries()
    head_entries = repo.tree_entries(current_head) if current_head and current_head != source else []
    gitlinks = {path for mode, path in [*source_entries, *index_entries, *head_entries] if mode == _GITLINK_MODE}
    changed = set(repo.names(*_NAMES_ARGS, source)) | set(repo.names(*_NAMES_ARGS, "--cached", source))
    candidates = restore_candidates(checkpoint, changed, gitlinks)
    gone = [path for path in checkpoint.untracked if not path.endswith("/") and not os.path.lexists(repo.root / path)]
    kept = frozenset(split_nul(repo.git("ls-tree", "-r", "-z", "--name-only", "--full-tree",
                                        checkpoint.untracked_tree))) if checkpoint.untracked_tree and gone else frozenset()
    staged, patch = patches
    return Survey(
        current_head=current_head,
        source_files=frozenset(path for mode, path in source_entries if mode != _GITLINK_MODE),
        index_files=frozenset(path for mode, path in index_entries if mode != _GITLINK_MODE),
        gitlinks=frozenset(gitlinks), protected=_protected(repo, gitlinks, checkpoints_dir),
        candidates=candidates, off_checkpoint=_off_checkpoint(repo, source, staged, patch, candidates),
        untracked_now=tuple(repo.names("ls-files", "--others", "--exclude-standard")),
        missing=tuple(path for path in gone if path not in kept),
        bring_back=tuple(path for path in gone if path in kept),
    )


def plan_revert(project: Path, checkpoints_dir: Path, iteration: int) -> RevertPlan:
    """What `revert_to_checkpoint` would restore, delete and keep; changes nothing."""
    checkpoint = load_checkpoint(checkpoints_dir, iteration)
    repo = _open_for(project, checkpoint)
    source = _source(repo, checkpoint)
    with _patches(repo, checkpoints_dir, checkpoint, source) as patches:
        return build_plan(checkpoint, _survey(repo, checkpoint, source, checkpoints_dir, patches))


def _open_for(project: Path, checkpoint: Checkpoint) -> _Repo:
    repo = _Repo.open(project)
    if repo.prefix != checkpoint.prefix:
        raise CheckpointError(
            f"checkpoint {checkpoint.iteration} was taken for {checkpoint.prefix or 'the top level'!r} "
            f"of the repository, not {repo.prefix or 'the top level'!r}")
    return repo


def _off_checkpoint(
    repo: _Repo, source: str, staged: Path | None, patch: Path | None, candidates: AbstractSet[str]
) -> frozenset[str]:
    """The candidates whose index entry or file is not as it was at the checkpoint.

    Rebuilds the checkpoint's index (source + staged patch) and its working
    tree (source + patch) in scratch indexes. That also proves both patches
    apply before a revert changes anything.
    """
    with tempfile.TemporaryDirectory(prefix="kilo-loop-revert-") as scratch:
        index_env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        tree_env = {"GIT_INDEX_FILE": str(Path(scratch) / "tree")}
        for env, patch_file in ((index_env, staged), (tree_env, patch)):
            repo.git("read-tree", source, env=env)
            if patch_file:
                repo.git("apply", "--cached", "--whitespace=nowarn", str(patch_file), env=env,
                         what=f"checkpoint patch {patch_file.name} does not apply to its commit")
        then = index_map(repo.git("ls-files", "-s", "-z", env=index_env))
        now = index_map(repo.git("ls-files", "-s", "-z"))
        differs = {path for path in candidates if then.get(path) != now.get(path)}
        ordered = sorted(candidates)
        for start in range(0, len(ordered), _PATHS_PER_CALL):
            chunk = ordered[start : start + _PATHS_PER_CALL]
            differs.update(split_nul(repo.git(*_NAMES_ARGS, "-z", "--", *chunk, env=tree_env)))
    return frozenset(differs)


def _unlink_inside(root: Path, path: str) -> bool:
    """Remove file `root/path` (a symlink itself, never its target) if it safely lies inside root."""
    if not is_safe_relpath(path) or path.endswith("/"):
        return False
    target = root / path
    if not Path(os.path.realpath(target.parent)).is_relative_to(os.path.realpath(root)):
        return False
    if target.is_symlink() or target.is_file():
        target.unlink()
        return True
    return False


def _prune_empty_dirs(root: Path, stop: Path, paths: Iterable[str]) -> None:
    """Remove directories left empty by deletions, up to (not including) `stop`."""
    for path in sorted(paths, key=lambda p: -p.count("/")):
        parent = (root / path).parent
        while parent != stop and parent.is_relative_to(stop):
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent


def _pathspec_stdin(paths: Iterable[str]) -> bytes:
    return b"".join(os.fsencode(path) + b"\0" for path in paths)


def revert_to_checkpoint(project: Path, checkpoints_dir: Path, iteration: int, force: bool = False) -> RevertResult:
    """Bring the working tree (and index) of `project` back to the checkpoint taken before `iteration`."""
    checkpoint = load_checkpoint(checkpoints_dir, iteration)
    repo = _open_for(project, checkpoint)
    source = _source(repo, checkpoint)
    with _patches(repo, checkpoints_dir, checkpoint, source) as patches:
        plan = build_plan(checkpoint, _survey(repo, checkpoint, source, checkpoints_dir, patches))
        if plan.head_moved and not force:
            raise CheckpointError(
                f"HEAD moved since checkpoint {iteration} ({_short(plan.checkpoint_head)} -> "
                f"{_short(plan.current_head)}); something committed during the run. Refusing to revert onto "
                "another commit; force the revert to restore the files as they were anyway.")
        _restore_tracked(repo, plan, source)
        _apply_patches(repo, *patches)
    deleted = _delete_new_untracked(repo, checkpoint, plan, checkpoints_dir)
    stop = repo.root / repo.prefix if repo.prefix else repo.root
    _prune_empty_dirs(repo.root, stop, deleted)
    brought_back = _restore_untracked(repo, checkpoint)
    kept = sorted(set(plan.keep) | (set(plan.delete) - set(deleted)))
    return RevertResult(iteration=iteration, restored=tuple(sorted(set(plan.restore) | set(brought_back))),
                        deleted=tuple(deleted), kept=tuple(kept),
                        missing=tuple(p for p in plan.missing if p not in brought_back), head=plan.current_head,
                        forced=force and plan.head_moved)


def _short(head: str | None) -> str:
    return head[:12] if head else "no commit"


def _patch_paths(checkpoints_dir: Path, checkpoint: Checkpoint) -> tuple[Path | None, Path | None]:
    """(staged patch, working-tree patch) to apply, None where there is nothing to apply."""
    found: list[Path | None] = []
    for name in (checkpoint.staged_patch_file, checkpoint.patch_file):
        path = checkpoints_dir / name if name else None
        if path is not None and not path.is_file():
            raise CheckpointError(f"checkpoint {checkpoint.iteration} is incomplete: {path} is missing")
        found.append(path if path is not None and path.stat().st_size else None)
    return found[0], found[1]


def _restore_tracked(repo: _Repo, plan: RevertPlan, source: str) -> None:
    """Tracked paths back to the source tree; files the agent added are left for the untracked pass."""
    if plan.checkout:
        repo.git("restore", f"--source={source}", "--staged", "--worktree", "--pathspec-from-file=-",
                 "--pathspec-file-nul", stdin=_pathspec_stdin(plan.checkout))
    if plan.unstage:
        repo.git("update-index", "-z", "--force-remove", "--stdin", stdin=_pathspec_stdin(plan.unstage))
    for path in plan.clear:
        _unlink_inside(repo.root, path)


def _apply_patches(repo: _Repo, staged: Path | None, patch: Path | None) -> None:
    if staged:
        repo.git("apply", "--cached", "--whitespace=nowarn", str(staged),
                 what="re-applying the checkpoint's staged changes failed")
    if patch:
        repo.git("apply", "--whitespace=nowarn", str(patch), what="re-applying the checkpoint's patch failed")


def _restore_untracked(repo: _Repo, checkpoint: Checkpoint) -> list[str]:
    """Write back the untracked files the checkpoint kept that are gone or changed since; their paths."""
    if not checkpoint.untracked_tree:
        return []
    with tempfile.TemporaryDirectory(prefix="kilo-loop-revert-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "untracked")}
        repo.git("read-tree", checkpoint.untracked_tree, env=env,
                 what=f"the untracked files kept by checkpoint {checkpoint.iteration} are gone from git")
        run_git_env = {**env, "GIT_OPTIONAL_LOCKS": "0"}
        with contextlib.suppress(CheckpointError):  # exits 1 when some need updating: that is the point
            repo.git("update-index", "-q", "--refresh", env=run_git_env)
        changed = [path for path in split_nul(repo.git("diff-files", "--name-only", "-z", env=env))
                   if is_safe_relpath(path) and in_scope(path, checkpoint.prefix)]
        if changed:
            repo.git("checkout-index", "-f", "-z", "--stdin", env=env, stdin=_pathspec_stdin(changed),
                     what="writing back the untracked files the checkpoint kept failed")
    return changed


def _delete_new_untracked(repo: _Repo, checkpoint: Checkpoint, plan: RevertPlan, checkpoints_dir: Path) -> list[str]:
    """Delete the planned files that are still untracked-not-ignored after the tracked restore.

    Listing again matters: a restored .gitignore may make a planned file ignored, and
    ignored files are never deleted.
    """
    recorded = frozenset(checkpoint.untracked) | frozenset(checkpoint.ignored)
    gitlinks = [path for mode, path in repo.index_entries() if mode == _GITLINK_MODE]
    now, _ = choose_untracked_deletions(repo.names("ls-files", "--others", "--exclude-standard"),
                                        recorded, _protected(repo, gitlinks, checkpoints_dir))
    return [path for path in sorted(set(plan.delete) & set(now)) if _unlink_inside(repo.root, path)]
