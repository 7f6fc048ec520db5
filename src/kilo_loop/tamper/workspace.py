"""A stage's diff, read from git: the work tree against the tree the stage started from (its first
iteration's checkpoint), plus untracked files that are new since then. The only I/O of tamper/."""

from __future__ import annotations

import json
from pathlib import Path

from kilo_loop.git import git_output
from kilo_loop.tamper.languages import is_test_path, language_of
from kilo_loop.tamper.verify_inputs import is_runner_file

DIFF_LIMIT = 8 << 20  # bytes of diff read; past it the rest is left out (the rules read what came)
_UNTRACKED_LIMIT = 256 << 10  # a bigger new file is not read


def stage_base(checkpoints: Path, iteration: int) -> tuple[str, frozenset[str]]:
    """(the tree-ish the stage started from, the untracked files then): the first iteration's checkpoint,
    or HEAD (and none) without one."""
    try:
        data = json.loads((checkpoints / f"iter-{iteration:02d}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "HEAD", frozenset()
    if not isinstance(data, dict):
        return "HEAD", frozenset()
    base = data.get("tree") or data.get("head") or "HEAD"
    untracked = data.get("untracked") or []
    return str(base), frozenset(str(p) for p in untracked if isinstance(p, str))


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


def stage_diff(project: Path, base: str, untracked_before: frozenset[str] = frozenset()) -> str:
    """The unified diff of the stage so far (tracked files against `base`; new untracked test and config
    files as additions), bounded to DIFF_LIMIT bytes."""
    # diff-index, not `git diff`: the porcelain refreshes and rewrites .git/index as a side effect, which
    # the work-tree watch must then take for a commit and pay a full `git status` for
    tracked = git_output(project, "diff-index", "-p", "--no-color", "--no-ext-diff", "--relative", "-M", base, "--",
                         what="git diff-index for the tamper check")
    text = tracked[:DIFF_LIMIT].decode("utf-8", errors="replace")
    listed = git_output(project, "ls-files", "--others", "--exclude-standard", "-z",
                        what="git ls-files for the tamper check")
    for name in listed.decode("utf-8", errors="replace").split("\0"):
        if name and name not in untracked_before and _watched(name) and len(text) < DIFF_LIMIT:
            text += _new_file_diff(project, name)
    return text
