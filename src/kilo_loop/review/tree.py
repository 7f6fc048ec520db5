"""The work tree as a git tree object, so "the diff since the stage began" can be shown later.

A scratch index (never the repository's own) takes `git add -A` of the whole work tree, and
`git write-tree` stores it as objects; nothing is committed, HEAD and the index are untouched.
The loop's own folder is left out.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from kilo_loop.run.layout import LOOP_DIR

_EXCLUDE = f":(exclude){LOOP_DIR}"
_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_EXTERNAL_DIFF")


def _git(project: Path, *args: str, env: dict[str, str] | None = None) -> str:
    base = {k: v for k, v in os.environ.items() if k not in _ENV_DROP}
    done = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, errors="replace",
                          env={**base, "GIT_OPTIONAL_LOCKS": "0", **(env or {})}, stdin=subprocess.DEVNULL,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.strip()[:400]}")
    return done.stdout


def tree_of_worktree(project: Path) -> str:
    """The id of a tree object holding every tracked and untracked (not ignored) file as it is now."""
    with tempfile.TemporaryDirectory(prefix="kilo-loop-review-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        _git(project, "add", "-A", "--", ".", _EXCLUDE, env=env)
        return _git(project, "write-tree", env=env).strip()


def diff_since(project: Path, tree: str) -> tuple[str, list[str]]:
    """The diff from `tree` to the work tree as it is now, and the paths it touches."""
    now = tree_of_worktree(project)
    args = ("--no-color", "--no-ext-diff", "--no-textconv", tree, now)
    return _git(project, "diff", *args), _git(project, "diff", "--name-only", *args).split()
