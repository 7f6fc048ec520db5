"""Build the review controller for a run from the loop's parts (backend, guard, control, budgets)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from kilo_loop.agent.protocol import AgentBackend, StepFinished
from kilo_loop.agent.registry import load_backend
from kilo_loop.goal.model import Goal
from kilo_loop.loop.control import RunControl
from kilo_loop.loop.session import GuardLike
from kilo_loop.review.controller import ReviewController, ReviewHost, ReviewOptions
from kilo_loop.review.findings import Finding
from kilo_loop.review.gate import finding_line
from kilo_loop.review.log import ReviewLog
from kilo_loop.review.protect import protected_findings
from kilo_loop.review.wave import RoleSpec, WaveContext
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.state import VerifyResult
from kilo_loop.settings import Settings


def build_controller(
    options: ReviewOptions, settings: Settings, goal: Goal, project: Path, run_backend: AgentBackend,
    recorder: RunRecorder, control: RunControl, guard: GuardLike | None, env: dict[str, str],
    count_tokens: Callable[[StepFinished], str | None], verify: Callable[[str], Awaitable[VerifyResult | None]],
    answer_channel_open: Callable[[], bool], halted: Callable[[], bool],
) -> ReviewController:
    backends: dict[str, AgentBackend] = {}

    def backend_for(spec: RoleSpec) -> AgentBackend:
        # A runtime name goes to the run's backend: its router (made with the role's runtime at the
        # run's start, prepared and pre-flighted with the rest) starts that CLI for the request.
        if spec.backend is None or spec.runtime is not None or settings.dry_run:
            return run_backend
        if spec.backend not in backends:
            backends[spec.backend] = load_backend(spec.backend)
        return backends[spec.backend]

    wave = WaveContext(project=project, recorder=recorder, log=ReviewLog(recorder), control=control, guard=guard, backend_for=backend_for,
                       count_tokens=count_tokens, env=env, timeout_s=settings.max_iteration_minutes * 60,
                       auto_approve=settings.auto)
    host = ReviewHost(goal=goal, project=project, run_id=wave.log.run_id, wave=wave, verify=verify,
                      # --hitl off means unattended: the gate is not asked either.
                      answer_channel_open=lambda: settings.hitl != "off" and answer_channel_open(),
                      halted=halted)
    return ReviewController(options, host)


def protected_feedback(paths: list[str]) -> tuple[list[Finding], str]:
    """The findings for protected files the implementer changed, and what its next prompt says."""
    findings = protected_findings(paths)
    lines = [("You changed protected files; the stage cannot pass while they differ from the checkpoint. "
             "Put them back as they were (the operator may restore them with `kilo-loop revert`) and reach "
             "the goal without editing them:")]
    lines += [f"- {finding_line(f)}" for f in findings]
    return findings, "\n".join(lines)
