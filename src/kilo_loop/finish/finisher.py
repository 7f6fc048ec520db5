"""After each iteration the loop asks the finisher to commit the stages that are now done and not yet
committed. Which stages a run committed is read back from git (the trailers), so a resumed run neither
commits a stage twice nor forgets one. What was dirty before the run began is recorded once, in the run's
directory, and never committed: it is the user's work in progress, not the stage's."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from kilo_loop.finish.commits import (
    FinishError,
    author_env,
    commit_paths,
    committed_stages,
    current_branch,
    switch_to_run_branch,
)
from kilo_loop.finish.handover import ForgeOptions, PullRequester, build_pull_requester
from kilo_loop.finish.message import commit_message
from kilo_loop.finish.paths import stage_paths
from kilo_loop.forge.api import Forge, ForgeError
from kilo_loop.gitstatus import read_status
from kilo_loop.goal.issue import IssueRef, issue_forge
from kilo_loop.run.events import FinishPlanned, PullRequestOpened, RunEvent, StageCommitted, Warned
from kilo_loop.run.receipts import stage_receipts
from kilo_loop.run.state import RunState

Emit = Callable[[RunEvent], object]


@dataclass(frozen=True)
class Committed:
    stage_id: str
    title: str
    commit: str
    files: tuple[str, ...]
    left_out: tuple[str, ...]


@dataclass
class StageFinisher:
    project: Path
    run_id: str
    baseline_file: Path  # <run dir>/finish-baseline.json: the paths dirty before the run began
    branch: str | None = None  # --finish branch: the run's own branch
    author: dict[str, str] = field(default_factory=dict)
    loop_files: frozenset[str] = frozenset()  # the goal file, relative to the project
    pr: PullRequester | None = None  # --finish pr: push after each stage, the pull request at the end
    issue_comments: tuple[Forge, int] | None = None  # --issue-comments: the goal's issue hears of each stage
    _committed: set[str] = field(default_factory=set)
    _dirty_at_start: frozenset[str] = frozenset()

    def start(self) -> FinishPlanned:
        """Before the first iteration: record what is dirty (first start only), switch to the run's branch,
        learn what is already committed. FinishError when the branch cannot be had."""
        self._dirty_at_start = self._baseline()
        made = switch_to_run_branch(self.project, self.branch) if self.branch else False
        self._committed = committed_stages(self.project, self.run_id)
        where = self.branch or current_branch(self.project) or "a detached HEAD"
        verb = "made and switched to" if made else "on"
        return FinishPlanned(message=f"finish: the loop commits each finished stage ({verb} {where})",
                             mode="branch" if self.branch else "commit", branch=self.branch)

    def commit_done(self, state: RunState) -> list[Committed]:
        """Commit, in goal order, every done stage not committed yet."""
        done: list[Committed] = []
        receipts = {receipt.stage_id: receipt for receipt in stage_receipts(state)}
        for stage in state.stages:
            if stage.status != "done" or stage.id in self._committed:
                continue
            status = read_status(self.project)
            paths = stage_paths(status.changed() | status.untracked, self._dirty_at_start, self.loop_files)
            self._committed.add(stage.id)  # a stage with nothing to commit is finished all the same
            if not paths.commit:
                continue
            message = commit_message(receipts[stage.id], self.run_id, paths.commit)
            commit = commit_paths(self.project, paths.commit, message, self.author)
            done.append(Committed(stage.id, stage.title, commit, paths.commit, paths.left_out))
        return done

    def _comment(self, commits: list[Committed]) -> None:
        forge, number = self.issue_comments or (None, 0)
        for item in commits:
            if forge is not None:
                forge.comment(number, f"kilo-loop run `{self.run_id}`: stage **{item.title}** is done and committed "
                                      f"({item.commit[:10]}, {len(item.files)} file(s)).")

    def _baseline(self) -> frozenset[str]:
        if self.baseline_file.is_file():
            return frozenset(orjson.loads(self.baseline_file.read_bytes()))
        status = read_status(self.project)
        dirty = sorted(status.changed() | status.untracked)
        self.baseline_file.parent.mkdir(parents=True, exist_ok=True)
        self.baseline_file.write_bytes(orjson.dumps(dirty))
        return frozenset(dirty)

    async def after_iteration(self, state: RunState, emit: Emit) -> None:
        """The loop's hook: commit off the event loop, then say what was committed (or why not)."""
        try:
            commits = await asyncio.to_thread(self.commit_done, state)
            if commits and self.pr is not None:
                await asyncio.to_thread(self.pr.push)
            if commits and self.issue_comments is not None:
                await asyncio.to_thread(self._comment, commits)
        except (FinishError, ForgeError, OSError) as exc:
            emit(Warned(message=f"finish: {exc}", reason=str(exc), about="finish"))
            return
        for item in commits:
            left = f"; left out (dirty before the run): {', '.join(item.left_out)}" if item.left_out else ""
            emit(StageCommitted(
                message=f"committed stage '{item.title}': {item.commit[:10]} ({len(item.files)} file(s)){left}",
                stage_id=item.stage_id, commit=item.commit, branch=self.branch, files=list(item.files),
                left_out=list(item.left_out)))


    async def after_run(self, state: RunState, emit: Emit) -> None:
        """--finish pr, once the run has ended: push and open or update the pull request (a draft while
        stages are left). A failure is a warning: the commits stay here and a resume publishes them."""
        if self.pr is None:
            return
        loop = asyncio.get_running_loop()

        def wait(seconds: float, why: str) -> None:
            loop.call_soon_threadsafe(emit, Warned(message=f"finish: {why}: waiting {round(seconds)} s",
                                                   reason=why, about="finish"))
            time.sleep(seconds)

        try:
            change = await asyncio.to_thread(self.pr.publish, state, wait)
        except (FinishError, ForgeError, OSError) as exc:
            emit(Warned(message=f"finish: the pull request was not opened: {exc}", reason=str(exc), about="finish"))
            return
        kind = "draft pull request" if change.draft else "pull request"
        emit(PullRequestOpened(message=f"{kind} #{change.number}: {change.url}", url=change.url,
                               number=change.number, draft=change.draft))


def run_branch_name(goal_title: str, run_id: str) -> str:
    """`kilo-loop/<slug>-<runId>`: the title's words, lower case, at most 40 characters."""
    slug = re.sub(r"[^a-z0-9]+", "-", goal_title.lower()).strip("-")[:40].rstrip("-") or "run"
    return f"kilo-loop/{slug}-{run_id}"


def build_finisher(mode: str, project: Path, run_id: str, run_dir: Path, goal_title: str,
                   goal_file: Path | None, author: str | None, forge: ForgeOptions | None = None,
                   issue: IssueRef | None = None, issue_comments: bool = False) -> StageFinisher | None:
    """The finisher for `--finish` (None for `none`); FinishError for what would stop it later (a bad
    --commit-author; with `pr`, no remote, an unknown forge, no token)."""
    if mode == "none":
        return None
    branch = run_branch_name(goal_title, run_id) if mode in ("branch", "pr") else None
    pr = build_pull_requester(project, branch, forge or ForgeOptions(), issue) if mode == "pr" and branch else None
    comments = (issue_forge(issue), issue.number) if issue is not None and issue_comments else None
    goal = goal_file.resolve() if goal_file is not None else None
    inside = goal is not None and goal.is_relative_to(project.resolve())  # one outside is not in the work tree
    loop_files = frozenset({goal.relative_to(project.resolve()).as_posix()}) if goal and inside else frozenset()
    return StageFinisher(project=project, run_id=run_id, baseline_file=run_dir / "finish-baseline.json",
                         branch=branch, author=author_env(author), loop_files=loop_files, pr=pr,
                         issue_comments=comments)
