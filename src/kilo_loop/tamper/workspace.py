"""A stage's diff, read from git: the work tree against the tree the stage started from (its first
iteration's checkpoint), plus untracked files that are new since then. The only I/O of tamper/."""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from kilo_loop.git import git_output
from kilo_loop.tamper.languages import is_test_path, language_of
from kilo_loop.tamper.verify_inputs import is_runner_file

DIFF_LIMIT = 8 << 20  # bytes of diff read; past it the rest is left out (the rules read what came)
_UNTRACKED_LIMIT = 256 << 10  # a bigger new file is not read


@dataclass(frozen=True)
class StageBase:
    """Where a stage started: the tree-ish of its tracked files, the untracked files then (relative to
    the project) and the tree the checkpoint kept their content in (None: not kept)."""

    tree: str = "HEAD"
    untracked: frozenset[str] = frozenset()
    untracked_tree: str | None = None
    prefix: str = ""  # the project inside its repository: "" or "sub/dir/"


def stage_base(checkpoints: Path, iteration: int) -> StageBase:
    """The first iteration's checkpoint, or HEAD (and no untracked files) without one."""
    try:
        data = json.loads((checkpoints / f"iter-{iteration:02d}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return StageBase()
    if not isinstance(data, dict):
        return StageBase()
    base = data.get("tree") or data.get("head") or "HEAD"
    found = data.get("prefix")
    prefix = found if isinstance(found, str) else ""
    untracked = frozenset(p.removeprefix(prefix) for p in data.get("untracked") or []
                          if isinstance(p, str) and p.startswith(prefix))
    kept = data.get("untrackedTree")
    return StageBase(str(base), untracked, kept if isinstance(kept, str) and kept else None, prefix)


def _new_file_diff(project: Path, path: str) -> str:
    try:
        data = (project / path).read_bytes()[:_UNTRACKED_LIMIT]
    except OSError:
        return ""
    lines = data.decode("utf-8", errors="replace").splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n" \
           f"@@ -0,0 +1,{len(lines)} @@\n{body}"


def _watched(path: str) -> bool:
    lang = language_of(path)
    return is_runner_file(path) or (lang is not None and is_test_path(path, lang))


def _git_blob_id(data: bytes, oid_length: int) -> str:
    algorithm = hashlib.sha256 if oid_length == 64 else hashlib.sha1
    return algorithm(b"blob %d\0" % len(data) + data).hexdigest()


def _changed_file_diff(path: str, old: bytes, new: bytes | None) -> str:
    old_lines = old.decode("utf-8", errors="replace").splitlines()
    new_lines = [] if new is None else new.decode("utf-8", errors="replace").splitlines()
    body = "\n".join(difflib.unified_diff(old_lines, new_lines, f"a/{path}",
                                          "/dev/null" if new is None else f"b/{path}", lineterm=""))
    mode = "deleted file mode 100644\n" if new is None else ""
    return f"diff --git a/{path} b/{path}\n{mode}{body}\n" if body else ""


def _kept_untracked_diffs(project: Path, base: StageBase, names: list[str]) -> str:
    """Diffs of the watched files that were untracked when the stage began and changed (or went) since,
    read against the content the checkpoint kept of them."""
    if base.untracked_tree is None or not names:
        return ""
    listing = git_output(project, "ls-tree", "-r", "-z", "--full-tree", base.untracked_tree, "--",
                         *(f"{base.prefix}{name}" for name in names), what="git ls-tree for the tamper check")
    text = ""
    for entry in filter(None, listing.decode("utf-8", errors="replace").split("\0")):
        meta, _, full = entry.partition("\t")
        oid, name = meta.split()[-1], full.removeprefix(base.prefix)
        try:
            now: bytes | None = (project / name).read_bytes()
        except FileNotFoundError:
            now = None
        except OSError:
            continue
        if now is not None and (len(now) > _UNTRACKED_LIMIT or _git_blob_id(now, len(oid)) == oid):
            continue
        old = git_output(project, "cat-file", "blob", oid, what="git cat-file for the tamper check")
        text += _changed_file_diff(name, old[:_UNTRACKED_LIMIT], now)
    return text


def _untracked_now(project: Path, base: StageBase, known: frozenset[str] | None) -> list[str]:
    if known is not None:
        return [path.removeprefix(base.prefix) for path in known if path.startswith(base.prefix)]
    listed = git_output(project, "ls-files", "--others", "--exclude-standard", "-z",
                        what="git ls-files for the tamper check")
    return listed.decode("utf-8", errors="replace").split("\0")


def stage_diff(project: Path, base: StageBase, untracked: frozenset[str] | None = None) -> str:
    """The unified diff of the stage so far (tracked files against `base`; new untracked test and config
    files as additions; those untracked already at the start against what the checkpoint kept of them),
    bounded to DIFF_LIMIT bytes. `untracked`: the untracked files now, when the caller has read them
    (relative to the repository's top level); else they are listed here."""
    # diff-index, not `git diff`: the porcelain refreshes and rewrites .git/index as a side effect, which
    # the work-tree watch must then take for a commit and pay a full `git status` for
    tracked = git_output(project, "diff-index", "-p", "--no-color", "--no-ext-diff", "--relative", "-M", base.tree,
                         "--", what="git diff-index for the tamper check")
    text = tracked[:DIFF_LIMIT].decode("utf-8", errors="replace")
    for name in _untracked_now(project, base, untracked):
        if name and name not in base.untracked and _watched(name) and len(text) < DIFF_LIMIT:
            text += _new_file_diff(project, name)
    before = sorted(name for name in base.untracked if _watched(name))
    if before and len(text) < DIFF_LIMIT:
        text += _kept_untracked_diffs(project, base, before)
    return text
