"""`kilo-loop --goal a.md --goal b.md … --parallel N`: every plan in its own worktree and
process, at most N at once, results offered back to the operator's tree in the order plans finish."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import orjson

from kilo_loop.fleet.child import INBOX_ENV, child_argv, die_with_parent, plan_label
from kilo_loop.fleet.serve import FleetDashboard
from kilo_loop.fleet.sources import LocalRuns
from kilo_loop.fleet.tail import follow
from kilo_loop.fleet.worktree import (
    MergedCheck,
    MergeOutcome,
    PlanWorktree,
    WorktreeError,
    create_worktree,
    keep_run_dir,
    offer_result,
    open_worktree,
    remove_worktree,
    save_result,
)
from kilo_loop.run.layout import LOOP_DIR, ProjectLayout

MergeMode = Literal["auto", "ask", "never"]
DashboardFactory = Callable[[LocalRuns], FleetDashboard]
Say = Callable[[str], None]
Ask = Callable[[str], bool]
_SHOWN_LEVELS = {"heading", "warn", "error"}
_MERGEABLE_EXITS = {0, 1}  # done, done-with-errors: a plan that stopped early stays resumable instead


@dataclass
class Plan:
    goal: Path
    label: str
    run_id: str
    resume: bool = False
    worktree: PlanWorktree | None = None
    exit_code: int | None = None
    status: str = "queued"
    merge: MergeOutcome | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def worktree_path(self) -> Path | None:
        return self.worktree.path if self.worktree else None

    @property
    def run_dir(self) -> Path | None:
        return self.worktree.path / LOOP_DIR / "runs" / self.run_id if self.worktree else None


@dataclass
class ParallelRun:
    project: Path
    plans: list[Plan]
    limit: int
    merge_mode: MergeMode
    flags: Sequence[str]
    say: Say
    ask: Ask | None = None
    dashboard: DashboardFactory | None = None
    merge_check: Callable[[Plan], MergedCheck | None] | None = None  # verify on the merged result
    keep_branches: bool = False
    interrupted: bool = False
    _processes: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    _merge_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _setup_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def run(self) -> int:
        gate = asyncio.Semaphore(max(1, self.limit))
        remove_signals = self._install_signals()
        dashboard = self.dashboard(self.source()) if self.dashboard else None
        try:
            if dashboard is not None:
                await dashboard.start()
                self.say(f"Dashboard {dashboard.url} (every plan, live)")
            await asyncio.gather(*(self._one(plan, gate) for plan in self.plans))
        finally:
            remove_signals()
            if dashboard is not None:
                await dashboard.stop()
        self._summary()
        return exit_code(self.plans, self.interrupted)

    def source(self) -> LocalRuns:
        """The plans as the many-runs dashboard sees them (run directories inside the worktrees)."""

        def run_dirs() -> dict[str, Path]:
            dirs = {}
            for plan in self.plans:
                kept = self.project / LOOP_DIR / "runs" / plan.run_id
                dirs[plan.run_id] = plan.run_dir if plan.run_dir and plan.run_dir.exists() else kept
            return dirs

        def metas() -> dict[str, dict[str, str]]:
            # Before a plan's run has written its state, the list shows the plan's name and that it waits.
            return {plan.run_id: {"title": plan.label, **({"status": plan.status} if plan.status in
                                                          {"queued", "not started"} else {})}
                    for plan in self.plans}

        return LocalRuns(run_dirs, metas)

    # ------------------------------------------------------------ one plan
    async def _one(self, plan: Plan, gate: asyncio.Semaphore) -> None:
        async with gate:
            if self.interrupted:
                plan.status = "not started"
                return
            try:
                async with self._setup_lock:  # git worktree add takes repository-wide locks
                    plan.worktree = await asyncio.to_thread(self._worktree, plan)
            except WorktreeError as exc:
                plan.status, plan.exit_code = "failed", 2
                plan.notes.append(str(exc))
                self.say(f"[{plan.label}] could not make its worktree: {exc}")
                return
            await self._execute(plan)
        async with self._merge_lock:  # results land one at a time, in the order plans finish
            try:
                await asyncio.to_thread(self._settle, plan)
            except WorktreeError as exc:
                plan.notes.append(f"result not offered back: {exc}; worktree kept at {plan.worktree_path}")
                self.say(f"[{plan.label}] {plan.notes[-1]}")

    def _worktree(self, plan: Plan) -> PlanWorktree:
        if plan.resume:
            return open_worktree(self.project, plan.run_id)
        worktree = create_worktree(self.project, plan.run_id)
        _bring_goal(self.project, worktree, plan.goal)
        return worktree

    async def _execute(self, plan: Plan) -> None:
        assert plan.worktree is not None
        goal = _goal_in(self.project, plan.worktree, plan.goal)
        argv = child_argv(goal, plan.worktree.path, plan.run_id, self.flags, resume=plan.resume)
        log = (self.project / LOOP_DIR / "worktrees" / f"{plan.run_id}.log").open("ab")
        env = {**os.environ, INBOX_ENV: "1", "PWD": str(plan.worktree.path)}
        plan.status = "running"
        self.say(f"[{plan.label}] started: run {plan.run_id} in {plan.worktree.path}")
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=plan.worktree.path, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=log, stderr=log, start_new_session=True, preexec_fn=die_with_parent,
        )
        self._processes[plan.label] = process
        try:
            await self._show_events(plan, process)
            plan.exit_code = await process.wait()
        finally:
            self._processes.pop(plan.label, None)
            log.close()
        plan.status = _final_status(plan)

    async def _show_events(self, plan: Plan, process: asyncio.subprocess.Process) -> None:
        assert plan.run_dir is not None
        events = plan.run_dir / "events.jsonl"
        offset = events.stat().st_size if plan.resume and events.exists() else 0
        async for event in follow(events, lambda: process.returncode is not None, offset):
            if event.get("level") in _SHOWN_LEVELS or event.get("type") == "stage-done":
                self.say(f"[{plan.label}] {event.get('message', '')}")

    # ------------------------------------------------------------ results
    def _settle(self, plan: Plan) -> None:
        if plan.worktree is None or plan.exit_code is None:
            return
        keep_run_dir(plan.worktree)
        if self.interrupted or plan.exit_code not in _MERGEABLE_EXITS:
            plan.notes.append(f"worktree kept for resume: {resume_hint(plan)}")
            return
        mode = self.merge_mode
        if mode == "ask":
            mode = "auto" if self.ask is not None and self.ask(f"Apply the result of {plan.label} to your tree?") \
                else "never"
        if mode == "never":
            patch = save_result(plan.worktree)
            remove_worktree(plan.worktree)  # the result stays on its branch
            plan.notes.append(f"result saved as {patch} and on branch {plan.worktree.branch}")
            return
        plan.merge = offer_result(plan.worktree, self.merge_check(plan) if self.merge_check else None)
        if plan.merge.applied:
            remove_worktree(plan.worktree, keep_branch=self.keep_branches)
            plan.notes.append("no change to apply" if plan.merge.empty else "result applied to your working tree")
            self.say(f"[{plan.label}] {plan.notes[-1]}")
            return
        plan.status = "needs-merge"
        plan.notes.append(f"NOT applied — {plan.merge.message}; patch saved as {plan.merge.patch}")
        plan.notes.extend(f"  {line}" for line in plan.merge.resolve_commands(plan.worktree))
        plan.notes.append(f"  after a fix in your tree: kilo-loop merge {plan.run_id}")
        self.say(f"[{plan.label}] needs-merge: {plan.merge.message} (worktree and patch kept)")

    def _summary(self) -> None:
        self.say("Parallel plans:")
        for plan in self.plans:
            self.say(f"  {plan.label}: {plan.status} (run {plan.run_id}, exit {plan.exit_code})")
            for note in plan.notes:
                self.say(f"    {note}")

    # ------------------------------------------------------------ Ctrl+C
    def _install_signals(self) -> Callable[[], None]:
        loop = asyncio.get_running_loop()

        def forward() -> None:
            if not self.interrupted:
                self.say("stopping every plan after its session (Ctrl+C again to stop them now)")
            self.interrupted = True
            for process in list(self._processes.values()):
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGINT)

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, forward)

        def remove() -> None:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

        return remove


def _goal_in(project: Path, worktree: PlanWorktree, goal: Path) -> str:
    """The goal as the plan's process sees it: the worktree's copy when it lives in the project."""
    absolute = goal if goal.is_absolute() else (project / goal)
    try:
        return str(worktree.path / absolute.resolve().relative_to(project.resolve()))
    except ValueError:
        return str(absolute)


def _bring_goal(project: Path, worktree: PlanWorktree, goal: Path) -> None:
    """A goal file git does not carry (ignored) is copied into the worktree at the same place."""
    target = Path(_goal_in(project, worktree, goal))
    source = goal if goal.is_absolute() else project / goal
    if not target.exists() and target.is_relative_to(worktree.path):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _final_status(plan: Plan) -> str:
    if plan.run_dir is not None:
        try:
            state = orjson.loads((plan.run_dir / "state.json").read_bytes())
            return str(state.get("status", "unknown"))
        except (OSError, orjson.JSONDecodeError):
            pass
    return f"exited {plan.exit_code}"


def resume_hint(plan: Plan) -> str:
    return f"kilo-loop --goal {plan.goal} --parallel 1 --resume {plan.run_id}"


def exit_code(plans: Sequence[Plan], interrupted: bool) -> int:
    """0 when every plan is done and applied; otherwise the worst plan's code (a conflict counts 1)."""
    if interrupted:
        return 2
    codes = [plan.exit_code if plan.exit_code is not None else 2 for plan in plans]
    codes += [1 for plan in plans if plan.merge is not None and not plan.merge.applied]
    return max(codes, default=0)


def make_plans(goals: Sequence[Path], run_id_base: str, resume: str | None) -> list[Plan]:
    taken: set[str] = set()
    plans = []
    for goal in goals:
        label = plan_label(goal, taken)
        if resume:
            plans.append(Plan(goal, label, resume, resume=True))
        else:
            plans.append(Plan(goal, label, f"{run_id_base}-{label}"))
    return plans


def run_parallel(
    project: Path, goals: Sequence[Path], limit: int, merge_mode: MergeMode, flags: Sequence[str],
    run_id_base: str, say: Say, ask: Ask | None = None, resume: str | None = None,
    dashboard: DashboardFactory | None = None, merge_check: Callable[[Plan], MergedCheck | None] | None = None,
    keep_branches: bool = False,
) -> int:
    if resume and len(goals) != 1:
        raise WorktreeError("--resume with --parallel takes exactly one --goal (the plan of that run)")
    ProjectLayout(project).ensure()
    (project / LOOP_DIR / "worktrees").mkdir(parents=True, exist_ok=True)
    plans = make_plans(goals, run_id_base, resume)
    runner = ParallelRun(project, plans, limit, merge_mode, flags, say, ask, dashboard, merge_check, keep_branches)
    return asyncio.run(runner.run())
