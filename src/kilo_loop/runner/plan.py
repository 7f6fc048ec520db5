"""The one run preparation, for the command line and the dashboard's launcher alike."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kilo_loop.agent.protocol import AgentBackend
from kilo_loop.goal.model import Goal
from kilo_loop.loop.hitl import hitl_refusal
from kilo_loop.run.controls import INBOX_ENV
from kilo_loop.runner.backends import make_backend, preflight
from kilo_loop.runner.errors import AllStagesDone, SetupError
from kilo_loop.runner.handle import RunHandle
from kilo_loop.runner.setup import PreparedRun, prepare_run, reopen_all, resolve_goal
from kilo_loop.runner.terminal import stdin_can_answer
from kilo_loop.sandbox.setup import check_mode as check_sandbox_mode
from kilo_loop.settings import Settings


@dataclass
class RunPlan:
    """A run resolved before anything is created: settings, goal, agent backend, run directory."""

    settings: Settings
    project: Path
    goal: Goal
    backend: AgentBackend
    runtime: str
    prepared: PreparedRun

    def handle(self) -> RunHandle:
        return RunHandle(self.settings, self.project, self.goal, self.backend, self.runtime, self.prepared)


def plan_run(settings: Settings, project: Path, check_hitl: bool = True) -> RunPlan:
    """The one run preparation, for the command line and the dashboard's launcher alike: the goal
    (a finished one only with `force`, reopened), the backend and the run directory (new or resumed).
    Raises SetupError (AllStagesDone, a bad goal, a missing agent CLI…) before anything is written."""
    # A plan steered through its inbox (--parallel, a fleet worker) has the many-runs dashboard to answer.
    answerable = settings.dashboard or bool(os.environ.get(INBOX_ENV))
    refusal = hitl_refusal(settings.hitl, stdin_can_answer(), answerable) if check_hitl else None
    if refusal:
        raise SetupError(refusal)
    goal = resolve_goal(settings, project)
    if goal.all_done() and not settings.resume:
        if not settings.force:
            raise AllStagesDone(goal)
        goal = reopen_all(goal)
    backend, runtime = make_backend(settings, goal)
    preflight(settings, backend, runtime)
    check_sandbox_mode(settings.sandbox, settings.dry_run)
    prepared = prepare_run(settings, goal, project, runtime)
    return RunPlan(settings, project, goal, backend, runtime, prepared)
