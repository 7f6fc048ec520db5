"""Run reviewer sessions: one per role, all at once (asyncio tasks), each its own session.

Each reviewer is an ordinary agent session through the AgentBackend protocol (any backend, agent,
model), read-only (see review.readonly), whose tokens count toward the run's budgets. Its verdict
file is removed before it starts, so a stale one can never pass a stage.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kilo_loop.agent.protocol import AgentBackend, AgentRequest, StepFinished
from kilo_loop.review.findings import ReviewReport, malformed_report, parse_review
from kilo_loop.review.log import ReviewLog
from kilo_loop.review.prompt import review_file
from kilo_loop.review.readonly import ReadOnlyGuard
from kilo_loop.review_roles import SEED_ROLE, RoleSpec
from kilo_loop.run.control import RunControl
from kilo_loop.run.events import now_iso
from kilo_loop.run.guard_decision import GuardLike
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.state import ReviewRoleRun
from kilo_loop.session.runner import SessionRunner

MAX_REVIEW_FILE = 2 * 1024 * 1024


@dataclass(frozen=True)
class RoleResult:
    report: ReviewReport
    usage: ReviewRoleRun


@dataclass
class WaveContext:
    project: Path
    recorder: RunRecorder  # the reviewer sessions' own log lines (tools, text) go through it
    log: ReviewLog
    control: RunControl
    guard: GuardLike | None
    backend_for: Callable[[RoleSpec], AgentBackend]
    count_tokens: Callable[[StepFinished], str | None]
    env: dict[str, str]
    timeout_s: float
    auto_approve: bool = True


async def run_wave(ctx: WaveContext, specs: Sequence[RoleSpec], prompts: dict[str, str], title: str,
                   final_pass: bool = False) -> list[RoleResult]:
    """Every role's session side by side; results in the order of `specs`."""
    return list(await asyncio.gather(*(_one(ctx, spec, prompts[spec.role], title, final_pass) for spec in specs)))


async def _one(ctx: WaveContext, spec: RoleSpec, prompt: str, title: str, final_pass: bool) -> RoleResult:
    log, path = ctx.log, ctx.project / review_file(spec.role)
    path.unlink(missing_ok=True)
    usage = ReviewRoleRun(role=spec.role, started_at=now_iso(), final_pass=final_pass)
    label = reviewer_label(spec.role)
    log.event("review-started", f"▸ {label} started", "heading", role=spec.role,
             started_at=usage.started_at)

    def on_step(step: StepFinished) -> str | None:
        usage.tokens += step.tokens.total
        usage.cost = round(usage.cost + step.cost, 6)
        return ctx.count_tokens(step)

    runner = SessionRunner(ctx.backend_for(spec), ctx.recorder, ctx.control, ReadOnlyGuard(ctx.guard, ctx.project), on_step)
    request = AgentRequest(prompt=prompt, cwd=ctx.project, title=f"{title} · {spec.role} review"[:120],
                           agent=spec.agent, model=spec.model, variant=spec.variant,
                           auto_approve=ctx.auto_approve, timeout_s=ctx.timeout_s, env=ctx.env,
                           runtime=spec.runtime, read_only=True, review_file=path)
    outcome = await runner.run(request)
    usage.session_id = outcome.result.session_id
    report = _read_report(path, spec.role, outcome.result.text)
    if outcome.guard is not None and not report.malformed:
        report = malformed_report(spec.role, f"the session was ended by the guard ({outcome.guard.reason})")
    elif outcome.result.failed and report.malformed:
        report = malformed_report(spec.role, f"the session failed ({outcome.result.error or 'no verdict'})")
    usage.verdict, usage.findings, usage.malformed = report.verdict, len(report.findings), report.malformed
    usage.finished_at = now_iso()
    for warning in report.warnings:
        log.warning(warning)
    log.event("review-finished", f"{label}: {report.verdict} ({len(report.findings)} finding(s))",
             "info" if report.verdict == "pass" else "warn", role=spec.role, verdict=report.verdict,
             started_at=usage.started_at, finished_at=usage.finished_at, tokens=usage.tokens, cost=usage.cost)
    return RoleResult(report, usage)


def reviewer_label(role: str) -> str:
    return "reviewer" if role == SEED_ROLE else f"{role} reviewer"


def _read_report(path: Path, role: str, text: str) -> ReviewReport:
    try:
        if path.stat().st_size > MAX_REVIEW_FILE:
            return malformed_report(role, f"review file is larger than {MAX_REVIEW_FILE} bytes")
        raw: bytes | None = path.read_bytes()
    except FileNotFoundError:
        raw = None
    except OSError as exc:
        return malformed_report(role, f"review file cannot be read ({exc.strerror or exc})")
    return parse_review(raw, role, text)
