"""A plan's own git worktree: made from HEAD plus the operator's uncommitted changes, and its
result offered back as a patch that lands whole (after a three-way merge check) or not at all.

Nothing is ever committed on the operator's branch: the base and the result are commits on the
plan's own branch `kilo-loop/<runId>`, built through a temporary index so the operator's index
is never touched either.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kilo_loop.git import GitError, git_output, run_git
from kilo_loop.run.layout import LOOP_DIR

WORKTREES = "worktrees"
_LOOP_IDENTITY = {"GIT_AUTHOR_NAME": "kilo-loop", "GIT_AUTHOR_EMAIL": "kilo-loop@localhost",
                  "GIT_COMMITTER_NAME": "kilo-loop", "GIT_COMMITTER_EMAIL": "kilo-loop@localhost"}
BRANCH_PREFIX = "kilo-loop/"
# Never part of a snapshot: other plans' worktrees (each holds a .git file) and run directories.
_EXCLUDED = tuple(f"{LOOP_DIR}/{name}" for name in (WORKTREES, "runs", "trash"))


class WorktreeError(GitError):
    """A git step failed; the message says which and what git said."""


def git(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """stdout of `git <args>` in `repo`, under the one git environment policy (kilo_loop.git)."""
    try:
        return git_output(repo, *args, env=env).decode("utf-8", "surrogateescape")
    except GitError as exc:
        raise WorktreeError(f"{exc} (in {repo})") from None


@contextmanager
def _temp_index(repo: Path) -> Iterator[dict[str, str]]:
    with tempfile.TemporaryDirectory(prefix="kilo-loop-index-") as tmp:
        yield {"GIT_INDEX_FILE": str(Path(tmp) / "index")}


@contextmanager
def _tree_index(repo: Path, parent: str) -> Iterator[dict[str, str]]:
    """A temporary index holding the working tree as it is (tracked changes and untracked,
    non-ignored files) over `parent`; the repository's own index is never touched."""
    with _temp_index(repo) as env:
        git(repo, "read-tree", parent, env=env)
        git(repo, "add", "-A", env=env)
        # Dropped afterwards rather than excluded by pathspec: git refuses a pathspec naming an ignored path.
        git(repo, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *_EXCLUDED, env=env)
        yield env


def tree_diff(repo: Path, base: str) -> str:
    """The working tree as a binary patch against `base` (what `snapshot_commit` would hold),
    without writing a tree or a commit."""
    with _tree_index(repo, base) as env:
        return git(repo, "diff", "--cached", "--binary", "--full-index", base, env=env)


def snapshot_commit(repo: Path, parent: str, message: str) -> str:
    """A commit of the working tree as it is on top of `parent`, made without touching the
    repository's own index or branch."""
    with _tree_index(repo, parent) as env:
        tree = git(repo, "write-tree", env=env).strip()
    return git(repo, "commit-tree", tree, "-p", parent, "-m", message, env=_LOOP_IDENTITY).strip()


def head_commit(repo: Path) -> str:
    proc = run_git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    out = proc.stdout.decode().strip()
    if proc.returncode != 0 or not out:
        raise WorktreeError(f"{repo} has no commit yet: parallel plans start from HEAD (make a first commit)")
    return out


@dataclass(frozen=True)
class PlanWorktree:
    project: Path
    run_id: str
    path: Path
    branch: str
    base: str

    @property
    def patch_path(self) -> Path:
        return self.project / LOOP_DIR / WORKTREES / f"{self.run_id}.patch"


def worktree_path(project: Path, run_id: str) -> Path:
    return project / LOOP_DIR / WORKTREES / run_id


def create_worktree(project: Path, run_id: str) -> PlanWorktree:
    """`.kilocode-loop/worktrees/<runId>` on branch `kilo-loop/<runId>`, from HEAD + uncommitted work."""
    path = worktree_path(project, run_id)
    branch = BRANCH_PREFIX + run_id
    if path.exists():
        raise WorktreeError(f"{path} already exists: resume that plan or remove it (git worktree remove)")
    base = snapshot_commit(project, head_commit(project), f"kilo-loop: base of {run_id} (HEAD + uncommitted changes)")
    path.parent.mkdir(parents=True, exist_ok=True)
    git(project, "worktree", "add", "-q", "-b", branch, str(path), base)
    return PlanWorktree(project, run_id, path, branch, base)


def open_worktree(project: Path, run_id: str) -> PlanWorktree:
    """An existing plan worktree (for resume); its base is the first commit on its branch after HEAD."""
    path = worktree_path(project, run_id)
    branch = BRANCH_PREFIX + run_id
    if not (path / ".git").exists():
        raise WorktreeError(f"no worktree for {run_id} at {path}")
    base = git(project, "rev-list", "--max-parents=1", "--reverse", branch, "--not", "HEAD").split()
    first = base[0] if base else git(project, "rev-parse", branch).strip()
    return PlanWorktree(project, run_id, path, branch, first)


@dataclass
class MergeOutcome:
    applied: bool
    empty: bool = False
    conflicts: list[str] = field(default_factory=list)
    patch: Path | None = None
    message: str = ""

    def resolve_commands(self, plan: PlanWorktree) -> list[str]:
        if self.applied or self.patch is None:
            return []
        return [
            f"git -C {plan.project} apply --3way {self.patch}   # leaves conflict markers to resolve by hand",
            f"git -C {plan.project} diff                          # review, then fix the files listed",
            f"git worktree remove --force {plan.path}   # once the result is in",
        ]


def result_commit(plan: PlanWorktree) -> str:
    """The plan's final working tree as a commit on its own branch (base as parent)."""
    commit = snapshot_commit(plan.path, plan.base, f"kilo-loop: result of {plan.run_id}")
    git(plan.project, "update-ref", f"refs/heads/{plan.branch}", commit)
    return commit


def result_patch(plan: PlanWorktree, result: str) -> str:
    return git(plan.project, "diff", "--binary", "--full-index", plan.base, result)


MergedCheck = Callable[[Path], str | None]  # the merged tree checked out here: None, or why it must not land


def offer_result(plan: PlanWorktree, check: MergedCheck | None = None) -> MergeOutcome:
    """Apply the plan's result to the operator's working tree, whole or not at all.

    The three-way check merges the operator's current tree (as a temporary commit) with the
    result: conflicts leave everything as it was and the patch saved. A clean merge is then checked
    out on its own and `check`ed (the plan's verify commands, run on the merged result); a failed
    check lands nothing either.
    """
    result = result_commit(plan)
    patch = result_patch(plan, result)
    if not patch.strip():
        return MergeOutcome(applied=True, empty=True, message="the plan changed no file")
    plan.patch_path.write_text(patch, encoding="utf-8")
    # Parented on the plan's base, so the merge base is the tree the plan started from: the operator's
    # uncommitted changes it was given are not mistaken for edits of the same lines on both sides.
    current = snapshot_commit(plan.project, plan.base, "kilo-loop: operator's tree")
    merge = run_git(plan.project, "merge-tree", "--write-tree", "--name-only", "--no-messages", current, result)
    lines = merge.stdout.decode("utf-8", "surrogateescape").splitlines()
    if merge.returncode == 1:
        conflicts = sorted({line for line in lines[1:] if line.strip()})
        return MergeOutcome(applied=False, conflicts=conflicts, patch=plan.patch_path,
                            message=f"conflicts in {', '.join(conflicts)}")
    if merge.returncode != 0 or not lines:
        raise WorktreeError(f"git merge-tree failed: {merge.stderr.decode(errors='replace').strip()[:500]}")
    merged = lines[0].strip()
    problem = _check_merged(plan, current, merged, check) if check is not None else None
    if problem is not None:
        return MergeOutcome(applied=False, patch=plan.patch_path, message=problem)
    return _apply_tree(plan, current, merged)


def _check_merged(plan: PlanWorktree, current: str, merged_tree: str, check: MergedCheck) -> str | None:
    """Run `check` in a scratch worktree holding the merged result; the scratch worktree goes afterwards."""
    commit = git(plan.project, "commit-tree", merged_tree, "-p", current, "-m", f"kilo-loop: {plan.run_id} merged",
                 env=_LOOP_IDENTITY).strip()
    scratch = plan.project / LOOP_DIR / WORKTREES / f"{plan.run_id}.merge-check"
    if scratch.exists():
        run_git(plan.project, "worktree", "remove", "--force", str(scratch))
    git(plan.project, "worktree", "add", "-q", "--detach", str(scratch), commit)
    try:
        return check(scratch)
    finally:
        run_git(plan.project, "worktree", "remove", "--force", str(scratch))


def _apply_tree(plan: PlanWorktree, current: str, merged: str) -> MergeOutcome:
    delta = git(plan.project, "diff", "--binary", "--full-index", current, merged)
    if delta.strip():
        applied = run_git(plan.project, "apply", "--binary", "-", stdin=delta.encode("utf-8", "surrogateescape"))
        if applied.returncode != 0:  # git apply is all-or-nothing: the tree is as it was
            return MergeOutcome(applied=False, patch=plan.patch_path,
                                message=applied.stderr.decode(errors="replace").strip()[:500])
    plan.patch_path.unlink(missing_ok=True)
    return MergeOutcome(applied=True, message="applied")


def save_result(plan: PlanWorktree) -> Path:
    """`--merge never`: keep the result as a patch (and on the plan's branch), apply nothing."""
    result = result_commit(plan)
    plan.patch_path.write_text(result_patch(plan, result), encoding="utf-8")
    return plan.patch_path


def keep_run_dir(plan: PlanWorktree) -> Path | None:
    """Copy the plan's run directory into the operator's `.kilocode-loop/runs/` so reports outlive
    the worktree (`kilo-loop report <runId>` then works from the project)."""
    source = plan.path / LOOP_DIR / "runs" / plan.run_id
    if not source.is_dir():
        return None
    target = plan.project / LOOP_DIR / "runs" / plan.run_id
    shutil.copytree(source, target, dirs_exist_ok=True)
    return target


def remove_worktree(plan: PlanWorktree, keep_branch: bool = True) -> None:
    """Remove the plan's worktree, and its branch unless `keep_branch` (its result still lives there)."""
    git(plan.project, "worktree", "remove", "--force", str(plan.path))
    if not keep_branch:
        run_git(plan.project, "branch", "-D", plan.branch)
