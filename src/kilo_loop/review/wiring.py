"""Build the run's reviewer from the loop's parts (backend, guard, control, budgets): the review side
of the seam in `session/reviewer.py`, so the loop runs a review without knowing the review package."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from kilo_loop.agent.protocol import AgentBackend
from kilo_loop.agent.registry import load_backend
from kilo_loop.goal.model import Goal, Stage
from kilo_loop.review.controller import ReviewController, ReviewHost, ReviewOptions, role_costs
from kilo_loop.review.log import ReviewLog
from kilo_loop.review.wave import WaveContext
from kilo_loop.review_roles import RoleSpec
from kilo_loop.run.control import RunControl
from kilo_loop.run.events import ReviewBlocked
from kilo_loop.run.guard_decision import GuardLike
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.state import VerifyResult
from kilo_loop.session.reviewer import Reviewer, ReviewerFactory, ReviewHooks, ReviewVerdict
from kilo_loop.settings import Settings


class StageReviewer:
    """The controller as the loop calls it; a stage the review holds back is recorded here."""

    def __init__(self, controller: ReviewController, recorder: RunRecorder) -> None:
        self._controller = controller
        self._recorder = recorder

    def resume(self, pending_stage_ids: Sequence[str]) -> str | None:
        return self._controller.resume(pending_stage_ids)

    async def begin_iteration(self, stage: Stage, iteration: int, verify_command: str | None) -> bool:
        return await self._controller.begin_iteration(stage, iteration, verify_command)

    def fix_touched(self, stage_id: str, files: Sequence[str]) -> None:
        self._controller.fix_touched(stage_id, files)

    async def review(self, stage: Stage, iteration: int, verify: VerifyResult | None) -> ReviewVerdict:
        verdict = await self._controller.review(stage, iteration, verify)
        if not verdict.advance and not verdict.stopped:
            self._recorder.emit(ReviewBlocked(
                message=f"review: stage '{stage.title}' is not done yet ({verdict.summary.count} blocking)",
                stage_id=stage.id, count=verdict.summary.count, costs=role_costs(verdict.summary) or None,
                feedback=verdict.feedback))
        return verdict


def reviewer_factory(
    options: ReviewOptions, settings: Settings, goal: Goal, project: Path, run_backend: AgentBackend,
    recorder: RunRecorder, control: RunControl, guard: GuardLike | None, env: dict[str, str],
    answer_channel_open: Callable[[], bool], answer_timeout: float | None = None,
) -> ReviewerFactory:
    backends: dict[str, AgentBackend] = {}

    def backend_for(spec: RoleSpec) -> AgentBackend:
        # A runtime name goes to the run's backend: its router (made with the role's runtime at the
        # run's start, prepared and pre-flighted with the rest) starts that CLI for the request.
        if spec.backend is None or spec.runtime is not None or settings.dry_run:
            return run_backend
        if spec.backend not in backends:
            backends[spec.backend] = load_backend(spec.backend)
        return backends[spec.backend]

    def build(hooks: ReviewHooks) -> Reviewer:
        wave = WaveContext(project=project, recorder=recorder, log=ReviewLog(recorder), control=control, guard=guard,
                           backend_for=backend_for, count_tokens=hooks.count_tokens, env=env,
                           timeout_s=settings.max_iteration_minutes * 60, auto_approve=settings.auto)
        host = ReviewHost(goal=goal, project=project, run_id=wave.log.run_id, wave=wave, verify=hooks.verify,
                          # --hitl off means unattended: the gate is not asked either.
                          answer_channel_open=lambda: settings.hitl != "off" and answer_channel_open(),
                          halted=hooks.halted, answer_timeout=answer_timeout, state=lambda: recorder.state)
        return StageReviewer(ReviewController(options, host), recorder)

    return build
