"""The git side of the hand-over: commit a set of paths on the current branch without touching the
user's staging area, make the run's branch, and find the stages a run already committed.

The commit is built in a scratch index (`GIT_INDEX_FILE`): HEAD's tree plus exactly the stage's paths,
so whatever the user had staged stays staged and nothing else slips in. Afterwards the real index
entries of those paths are reset to the new HEAD, so `git status` shows them clean."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from kilo_loop.errors import KiloLoopError
from kilo_loop.finish.message import RUN_TRAILER, STAGE_TRAILER
from kilo_loop.git import GitError, git_output, run_git

NO_IDENTITY = ("git has no identity to commit with: set `git config user.name` and `git config user.email` "
               "in the project, or pass --commit-author \"Name <email>\"")


class FinishError(KiloLoopError):
    """The loop could not commit a finished stage or make the run's branch; the message says why."""


def head_commit(project: Path) -> str | None:
    proc = run_git(project, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def commit_paths(project: Path, paths: Sequence[str], message: str, author: Mapping[str, str]) -> str:
    """Commit `paths` (changed, new or deleted) on the current branch; the new commit's id."""
    parent = head_commit(project)
    with tempfile.TemporaryDirectory(prefix="kilo-loop-index-") as scratch:
        index = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        if parent:
            git_output(project, "read-tree", parent, env=index, what="reading HEAD into a scratch index")
        git_output(project, "add", "-A", "--", *paths, env=index, what="staging the stage's files")
        tree = git_output(project, "write-tree", env=index, what="writing the stage's tree").decode().strip()
    commit = _commit_tree(project, tree, parent, message, author)
    update = ["update-ref", "-m", "kilo-loop: stage commit", "HEAD", commit, *([parent] if parent else [])]
    git_output(project, *update, what="moving the branch to the stage's commit")
    run_git(project, "reset", "-q", "--", *paths)  # the real index follows HEAD for these paths only
    return commit


def _commit_tree(project: Path, tree: str, parent: str | None, message: str, author: Mapping[str, str]) -> str:
    args = ["commit-tree", tree, *(["-p", parent] if parent else [])]
    proc = run_git(project, *args, stdin=message.encode(), env=author)
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()
        identity = "user.email" in detail or "Author identity unknown" in detail or "empty ident" in detail
        raise FinishError(NO_IDENTITY if identity else f"git could not make the stage's commit: {detail}")
    return proc.stdout.decode().strip()


def author_env(author: str | None) -> dict[str, str]:
    """`Name <email>` as git's author variables (the committer stays git's configured identity)."""
    if not author:
        return {}
    name, _, rest = author.partition("<")
    email = rest.rstrip().removesuffix(">").strip()
    if not name.strip() or not email:
        raise FinishError(f"{author!r} is not `Name <email>` (e.g. \"Ada Lovelace <ada@example.com>\")")
    return {"GIT_AUTHOR_NAME": name.strip(), "GIT_AUTHOR_EMAIL": email}


def committed_stages(project: Path, run_id: str) -> set[str]:
    """The stages of `run_id` already committed on the current branch (read from the trailers)."""
    if head_commit(project) is None:
        return set()
    fmt = f"%(trailers:key={RUN_TRAILER},valueonly,separator=%x1f)%x1e%(trailers:key={STAGE_TRAILER},valueonly)%x00"
    try:
        out = git_output(project, "log", f"--format={fmt}", "--grep", f"{RUN_TRAILER}: {run_id}", "HEAD")
    except GitError:
        return set()
    stages: set[str] = set()
    for record in out.decode(errors="replace").split("\0"):
        run, _, stage = record.strip().partition("\x1e")
        if run.strip() == run_id and stage.strip():
            stages.add(stage.strip())
    return stages


def current_branch(project: Path) -> str | None:
    proc = run_git(project, "symbolic-ref", "-q", "--short", "HEAD")
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def switch_to_run_branch(project: Path, branch: str) -> bool:
    """Check out `branch` (made from HEAD when it does not exist yet), keeping the work tree as it is;
    True when the branch was made now."""
    if current_branch(project) == branch:
        return False
    exists = run_git(project, "rev-parse", "--verify", "-q", f"refs/heads/{branch}").returncode == 0
    args = ["switch", branch] if exists else ["switch", "-c", branch]
    proc = run_git(project, *args)
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()
        raise FinishError(f"could not switch to the run's branch {branch}: {detail}")
    return not exists


def loop_commits_between(project: Path, base: str | None, head: str | None, run_id: str) -> list[str] | None:
    """`<short id> <subject>` of each commit from `base` (exclusive) to `head`, newest first, when every one
    of them is a stage commit of `run_id` on top of `base`; None when any is not (someone else committed)."""
    if not base or not head:
        return None
    if run_git(project, "merge-base", "--is-ancestor", base, head).returncode != 0:
        return None
    fmt = f"%h %s%x1f%(trailers:key={RUN_TRAILER},valueonly)%x00"
    out = git_output(project, "log", f"--format={fmt}", f"{base}..{head}").decode(errors="replace")
    commits: list[str] = []
    for record in filter(None, (item.strip() for item in out.split("\0"))):
        line, _, run = record.partition("\x1f")
        if run.strip() != run_id:
            return None
        commits.append(line)
    return commits


def move_branch_back(project: Path, base: str, head: str) -> None:
    """Point the current branch at `base` again (from `head`, which it must still be at); files untouched."""
    git_output(project, "update-ref", "-m", "kilo-loop revert: drop the run's stage commits", "HEAD", base, head,
               what="moving the branch back to the checkpoint's commit")


def remote_url(project: Path, remote: str) -> str:
    proc = run_git(project, "remote", "get-url", remote)
    if proc.returncode != 0:
        raise FinishError(f"the project has no git remote {remote!r} to push to: add it (`git remote add {remote} URL`) "
                          "or name another with --remote")
    return proc.stdout.decode().strip()


def push_branch(project: Path, remote: str, branch: str) -> None:
    """Push `branch` to the same name on `remote`, never forced; FinishError says what to do when refused."""
    proc = run_git(project, "push", "--porcelain", remote, f"refs/heads/{branch}:refs/heads/{branch}", timeout=300)
    if proc.returncode == 0:
        return
    detail = (proc.stderr + proc.stdout).decode(errors="replace").strip()
    if "non-fast-forward" in detail or "[rejected]" in detail or "fetch first" in detail:
        raise FinishError(f"{remote} refused the push of {branch}: it has commits this run does not (never forced). "
                          f"Fetch and rebase the branch, then resume the run to push again. git said: {detail[-400:]}")
    raise FinishError(f"could not push {branch} to {remote} (the commits stay here; resume the run to push "
                      f"again): {detail[-400:]}")
