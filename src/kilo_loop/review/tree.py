"""The work tree as a git tree object, so "the diff since the stage began" can be shown later.

A scratch index (never the repository's own) takes `git add -A` of the whole work tree, and
`git write-tree` stores it as objects; nothing is committed, HEAD and the index are untouched.
The loop's own folder is left out.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from kilo_loop.git import git_output
from kilo_loop.run.layout import LOOP_DIR


def tree_of_worktree(project: Path) -> str:
    """The id of a tree object holding every tracked and untracked (not ignored) file as it is now.
    GitError when git cannot do it."""
    with tempfile.TemporaryDirectory(prefix="kilo-loop-review-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git_output(project, "add", "-A", "--", ".", env=env)
        git_output(project, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", LOOP_DIR, env=env)
        return git_output(project, "write-tree", env=env).decode().strip()


def diff_since(project: Path, tree: str) -> tuple[str, list[str]]:
    """The diff from `tree` to the work tree as it is now, and the paths it touches."""
    now = tree_of_worktree(project)
    args = ("--no-color", "--no-ext-diff", "--no-textconv", tree, now)
    diff = git_output(project, "diff", *args).decode(errors="replace")
    names = git_output(project, "diff", "--name-only", "-z", *args).decode(errors="replace")
    return diff, [name for name in names.split("\0") if name]
