"""The iteration state machine: pick the stage, checkpoint, prompt, run the session
(with retries), read the report, verify, ask the human, enforce the stop policy — repeat.

The orchestrator only emits events (the reducer turns them into state) and reads the
state back; when to stop is `stop_policy`, which stage is next is `stages.StageBook`,
the handoff packet is `handoff.HandoffStore`, and notifications subscribe to the bus."""

from __future__ import annotations

import asyncio
import contextlib
import random
import shlex
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from kilo_loop.agent.protect_check import AGENT_CONFIG_GLOBS
from kilo_loop.agent.protocol import AgentBackend, AgentQuestion, AgentRequest, StepFinished
from kilo_loop.agent.usage_db import DbUsage, mismatch, usage_from_db
from kilo_loop.durations import format_duration
from kilo_loop.gitstatus import TreeStatus
from kilo_loop.goal.model import Goal, Stage
from kilo_loop.loop import stop_policy
from kilo_loop.loop.circles.hooks import CircleHooks
from kilo_loop.loop.circles.watch import Iteration
from kilo_loop.loop.handoff import HandoffStore
from kilo_loop.loop.hitl import AnswerBook, collect_answers
from kilo_loop.loop.progress import Progress, completion_percent, first_open_stage_title, read_progress
from kilo_loop.loop.prompt import PromptInput, build_prompt
from kilo_loop.loop.protected import protected_feedback
from kilo_loop.loop.retry import QuotaLimit, backoff_delay_ms, quota_limit, transient_reason
from kilo_loop.loop.stages import StageBook
from kilo_loop.loop.tamper_check import check_stage, tamper_feedback, tamper_rows
from kilo_loop.run import notes
from kilo_loop.run.control import RunControl
from kilo_loop.run.events import (
    AgentFailed,
    AnswerReceived,
    CheckpointTaken,
    Crashed,
    IterationFinished,
    IterationStarted,
    NoteAcknowledged,
    ProtectedChanged,
    QuestionAsked,
    QuestionUnanswered,
    QuotaWait,
    ReviewBlocked,
    RunFinished,
    StageBlocked,
    StageDone,
    TamperFound,
    UsageCounted,
    VerifyFinished,
    Warned,
)
from kilo_loop.run.guard_decision import GuardDecision, GuardLike
from kilo_loop.run.layout import ProjectLayout
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.reducer import settled_row
from kilo_loop.run.report import iteration_line
from kilo_loop.run.state import (
    Answer,
    IterationFacts,
    IterationSummary,
    Question,
    ReviewRoundSummary,
    RunState,
    VerifyResult,
)
from kilo_loop.run.status import Phase, StopReason
from kilo_loop.session.reviewer import ReviewerFactory, ReviewHooks
from kilo_loop.session.runner import SessionOutcome, SessionRunner
from kilo_loop.session.workspace import Snapshot, WorkTree, changed_between, protected_between
from kilo_loop.settings import Settings

Stop = stop_policy.Stop
QUOTA_COUNTDOWN_S = 300.0  # a countdown line this often while waiting for a usage-limit reset
ALWAYS_QUESTION = "Any instructions or corrections for the next iteration? (empty to continue)"
_DONE_OUTCOMES = ("ok", "failed", "timeout", "stopped", "ended-early")


class Hooks(Protocol):
    """I/O the orchestrator needs from safety modules; injected so tests can replace them."""

    async def checkpoint(self, project: Path, checkpoints_dir: Path, iteration: int,
                         status: TreeStatus | None = None) -> str: ...

    async def verify(self, command: str, cwd: Path, timeout_s: float) -> VerifyResult: ...

    def sync_markdown(self, goal: Goal, stage: Stage) -> bool: ...


@dataclass
class LoopContext:
    settings: Settings
    goal: Goal
    project: Path
    backend: AgentBackend
    control: RunControl
    recorder: RunRecorder
    answers: AnswerBook
    hooks: Hooks
    guard: GuardLike | None = None
    agent_env: dict[str, str] = field(default_factory=dict)
    answer_channel_open: Callable[[], bool] = lambda: False
    rng: random.Random = field(default_factory=random.Random)
    answer_timeout: float | None = None  # seconds a question waits; None: until answered
    review: ReviewerFactory | None = None  # the run's review, built with the loop's hooks
    # --finish: after an iteration that finished a stage, the loop commits it (finish/, wired by the runner)
    finish: Callable[[RunState], Awaitable[None]] | None = None


@dataclass(frozen=True)
class _DbReading:
    """The CLI's own database's usage for the session, and the warning when it differs from the stream's."""

    figures: dict[str, float | int] | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Settled:
    """What settling the stage made of the iteration: whether the stage advanced, and its report's part."""

    advanced: bool = False
    outcome: str = "ok"
    error: str = ""
    verify: VerifyResult | None = None
    review: ReviewRoundSummary | None = None
    questions: tuple[Question, ...] = ()
    warnings: tuple[str, ...] = ()
    tamper_findings: tuple[dict[str, Any], ...] = ()


class Orchestrator:
    def __init__(self, ctx: LoopContext) -> None:
        self.ctx = ctx
        self.layout = ProjectLayout(ctx.project)
        self.limits = stop_policy.Limits.from_settings(ctx.settings)
        self.stages = StageBook(ctx.goal)
        self.handoffs = HandoffStore(self.layout.handoff, ctx.recorder.layout.handoff_pending,
                                     lambda text: str(ctx.recorder.redact(text)))
        # Reads of the work tree, not decisions: the tree as it stood when each stage began (protect
        # checks compare against it) and the last read of it. Everything the loop decides on is the state's.
        self._tree = WorkTree(ctx.project)
        self._stage_start: dict[str, Snapshot] = {}
        self._stage_first: dict[str, int] = {}  # the stage's first iteration in the run (the tamper check's base)
        s = ctx.settings
        self.circles = CircleHooks(ctx.project, ctx.recorder, max_same_failure=s.max_same_failure,
                                   max_repeat_calls=s.max_repeat_calls, max_failed_calls=s.max_failed_calls)
        self.review = None if ctx.review is None else ctx.review(ReviewHooks(
            count_tokens=lambda step: self._add_totals(step, review=True), verify=self._verify_unless_stopped,
            halted=lambda: self.state.stop_requested or self._budget_stop() is not None))

    @property
    def state(self) -> RunState:
        return self.ctx.recorder.state

    def _budget_stop(self) -> str | None:
        return stop_policy.budget_reason(self.limits, self.state.totals)

    # ----------------------------------------------------------------- run
    async def run(self) -> StopReason:
        rec = self.ctx.recorder
        rec.set_status(Phase.RUNNING)
        try:
            if self.review is not None:
                done = self.stages.completed(self.state)
                # A pending gate fix pass comes back with its feedback for the next prompt (a run recorded
                # before the state kept the feedback has it in the ledger only).
                feedback = self.review.resume([s.id for s in self.ctx.goal.stages if s.id not in done])
                if feedback and not self.state.review_feedback:
                    self._emit_feedback(feedback)
            status, reason = await self._loop()
        except Exception as exc:  # noqa: BLE001 — the run must end with a saved state and report, whatever broke
            rec.emit(Crashed(message=f"internal error: {exc}", traceback=traceback.format_exc()[-4000:]))
            status, reason = StopReason.ERROR, f"internal error: {exc}"
        finally:
            self._tree.close()
        self._finish(status, reason)
        return status

    async def _loop(self) -> Stop:
        while self.state.iteration < self.state.max_iterations:
            stop = await self._between_iterations()
            if stop:
                return stop
            stage = self.stages.next_stage(self.state)
            if stage is None:
                return stop_policy.no_stage_left(self.state)
            stop = await self._iteration(stage, self.state.iteration + 1)
            if stop:
                return stop
            if self.state.abort_requested:
                return stop_policy.ABORTED_AFTER_SESSION
        if self.stages.next_stage(self.state) is None:
            return stop_policy.no_stage_left(self.state)
        left = self.stages.open_count(self.state)
        return StopReason.DONE_WITH_ERRORS, f"{self.state.max_iterations} iteration(s) used, {left} stage(s) not done"

    async def _between_iterations(self) -> Stop | None:
        if stop_policy.waits_for_resume(self.state):
            self._tree.forget()  # the operator may edit files while paused
            self.ctx.recorder.set_status(Phase.PAUSED)
            await self.ctx.control.wait_until_resumed()
        stop = stop_policy.before_iteration(self.limits, self.state, self.state.first_iteration)
        if stop:
            return stop
        if self.state.status != Phase.RUNNING:
            self.ctx.recorder.set_status(Phase.RUNNING)
        return None

    # -------------------------------------------------------- iteration
    async def _iteration(self, stage: Stage, i: int) -> Stop | None:
        rec = self.ctx.recorder
        rec.emit(IterationStarted(message=f"Iteration {i}/{self.state.max_iterations} — {stage.title}", iteration=i,
                                  stage_id=stage.id, stage_title=stage.title))
        if self.review is not None:
            command = None if self.ctx.settings.dry_run else self._verify_command(stage)
            if await self.review.begin_iteration(stage, i, command):
                self._tree.forget()  # the baseline verify may have written files
        before = await self._checkpoint_and_snapshot(i)
        self._stage_start.setdefault(stage.id, before)
        if stage.id not in self._stage_first:  # a resumed run's stage began before this process did
            self._stage_first[stage.id] = next((it.iteration for it in self.state.iterations
                                                if it.stage_id == stage.id), i)
        request = self._request(stage, i)
        outcome, usage = await self._run_session(request)
        return await self._after_session(stage, outcome, usage, before)

    async def _checkpoint_and_snapshot(self, iteration: int) -> Snapshot:
        """The work tree before the iteration: the previous iteration's read when nothing but the loop's
        own files changed since, else one fresh `git status`; the checkpoint is taken from the same read."""
        status = await asyncio.to_thread(self._tree.current)
        if self.ctx.settings.checkpoint:
            await self._checkpoint(iteration, status)
        return self._tree.snapshot(status)

    async def _checkpoint(self, iteration: int, status: TreeStatus) -> None:
        try:
            note = await self.ctx.hooks.checkpoint(self.ctx.project, self.ctx.recorder.layout.checkpoints, iteration,
                                                   status)
            self.ctx.recorder.emit(CheckpointTaken(message=f"checkpoint before iteration {iteration}: {note}"))
        except Exception as exc:  # noqa: BLE001 — a failed checkpoint is reported, not fatal
            self.ctx.recorder.warn(f"checkpoint before iteration {iteration} failed: {exc}")

    def _request(self, stage: Stage, iteration: int) -> AgentRequest:
        ctx, state = self.ctx, self.state
        shared = state.shared_context
        fresh_session = not shared or state.session_id is None
        handoff = self.handoffs.take() if fresh_session else None
        if handoff is not None:
            ctx.recorder.archive(iteration, "handoff-in.md", handoff + "\n")
        else:
            self.handoffs.drop_agent_file()
        self.layout.progress.unlink(missing_ok=True)
        prompt = build_prompt(
            PromptInput(
                goal=ctx.goal, stage=stage, iteration=iteration, max_iterations=state.max_iterations,
                completed=self.stages.completed(state), blocked=set(state.blocked_stages),
                previous=_previous(state), answers=ctx.answers.answers, files_changed=list(state.run_files),
                handoff=handoff, prompt_extra=state.prompt_extra,
                shared_context=shared and not handoff, safety_feedback=state.guard_note or None,
                verify_feedback=state.verify_feedback or None,
                unanswered=[q.question for q in state.unanswered], review_feedback=state.review_feedback or None,
                jailed=state.sandbox.startswith("bwrap"), notes=notes.queued(state.notes),
                circle_feedback=state.circles.note or None,
            )
        )
        ctx.recorder.archive(iteration, "prompt.md", prompt)
        s = ctx.settings
        return AgentRequest(
            prompt=prompt, cwd=ctx.project, title=f"kilo-loop {state.run_id} #{iteration}: {stage.title}"[:120],
            agent=stage.agent or s.agent, model=stage.model or s.model, variant=stage.variant or s.variant,
            session_id=state.session_id if shared else None, thinking=s.thinking, auto_approve=s.auto,
            timeout_s=s.max_iteration_minutes * 60, env=ctx.agent_env, runtime=stage.runtime,
            protect=(*ctx.goal.protected_for(stage), *(AGENT_CONFIG_GLOBS if s.guard else ())),
        )

    # ---------------------------------------------------------- session
    async def _run_session(self, request: AgentRequest) -> tuple[SessionOutcome, _DbReading]:
        ctx, rec, s = self.ctx, self.ctx.recorder, self.ctx.settings
        runner = SessionRunner(ctx.backend, rec, ctx.control, ctx.guard, self._add_totals,
                               on_question=self._answer_agent, guard_stop=s.guard_stop, takes_notes=True,
                               watch=self.circles.session())
        started_ms = int(time.time() * 1000)
        attempt = 0
        prompt_notes: list[str] | None = [n.id for n in notes.queued(self.state.notes)]
        while True:
            outcome = await runner.run(request, prompt_notes)
            prompt_notes = None
            quota = quota_limit(outcome.result, datetime.now(UTC)) if outcome.guard is None else None
            if quota is not None and not self.state.stop_requested:
                if not await self._wait_for_quota(quota):
                    break
                request = replace(request, session_id=outcome.result.session_id or request.session_id)
                continue
            reason = transient_reason(outcome.result) if s.retry and outcome.guard is None else None
            if reason is None or attempt >= s.max_retries or self.state.stop_requested or self._budget_stop():
                break
            attempt += 1
            delay = backoff_delay_ms(attempt, s.retry_delay, s.retry_max_delay, ctx.rng)
            rec.set_status(Phase.RETRYING)
            rec.emit(Warned(message=f"transient agent failure ({reason}); auto-retry ×{attempt} in "  # noqa: RUF001 - the seed's wording
                                    f"{delay / 1000:.1f} s, continuing the same session",
                            about="retry", reason=reason, attempt=attempt, max_retries=s.max_retries))
            if await self._sleep_or_stop(delay / 1000):
                break
            request = replace(request, session_id=outcome.result.session_id or request.session_id)
            rec.set_status(Phase.RUNNING)
        return outcome, await self._usage_from_db(request, outcome, started_ms)

    async def _usage_from_db(self, request: AgentRequest, outcome: SessionOutcome, started_ms: int) -> _DbReading:
        """The CLI's own database's figures beside the stream's (and the warning when they differ);
        never fails the iteration."""
        if not self.ctx.settings.usage_db:
            return _DbReading()
        try:
            reading = await asyncio.to_thread(usage_from_db, self.ctx.backend, request,
                                              outcome.result.session_id, started_ms)
        except Exception as exc:  # noqa: BLE001 - a second opinion must not break the run
            reading = None
            self.ctx.recorder.warn(f"usage unavailable: {type(exc).__name__}: {exc}")
        if reading is None:
            return _DbReading()
        if not isinstance(reading, DbUsage):
            self.ctx.recorder.warn(f"usage unavailable: {reading.reason}")
            return _DbReading()
        row = self.state.current_iteration()
        warning = mismatch(row.tokens if row else 0, row.cost if row else 0.0, reading)
        if warning:
            self.ctx.recorder.warn(warning)
        return _DbReading(reading.as_dict(), (warning,) if warning else ())

    async def _wait_for_quota(self, quota: QuotaLimit) -> bool:
        """Wait for a usage limit's reset (status waiting-quota, a countdown); False when the run must
        stop instead (the reset is beyond --max-quota-wait, or the operator stopped it)."""
        rec, limit = self.ctx.recorder, self.ctx.settings.max_quota_wait
        left = quota.seconds_left(datetime.now(UTC))
        until = quota.until.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        if limit is not None and left > limit:
            why = (f"usage limit resets at {until} (in {format_duration(left)}), beyond "
                   f"--max-quota-wait {format_duration(limit)}: {quota.reason}")
            rec.emit(QuotaWait(message=f"{why}; the run stops after this iteration", until=until,
                               seconds=round(left, 1), reason=quota.reason, stop=why))
            return False
        rec.set_status(Phase.WAITING_QUOTA)
        rec.emit(QuotaWait(message=f"usage limit reached: waiting {format_duration(left)} until {until}, then "
                                   f"going on ({quota.reason})", until=until, seconds=round(left, 1),
                           reason=quota.reason))
        while left > 0:
            if await self._sleep_or_stop(min(left, QUOTA_COUNTDOWN_S)):
                return False
            left = quota.seconds_left(datetime.now(UTC))
            if left > 0:
                rec.warn(f"usage limit: {format_duration(left)} left until {until}")
        rec.set_status(Phase.RUNNING)
        return True

    async def _sleep_or_stop(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self.ctx.control.wait_for_stop(), seconds)
        except TimeoutError:
            return False
        return True

    def _add_totals(self, step: StepFinished, review: bool = False) -> str | None:
        """Every session's tokens (the implementer's and the reviewers') count toward the budgets; the
        implementer's also toward the iteration's row. Why the budget now stops the run, if it does."""
        tokens = step.tokens
        self.ctx.recorder.emit(UsageCounted(tokens=tokens.total, input=tokens.input, output=tokens.output,
                                            reasoning=tokens.reasoning, cache_read=tokens.cache_read,
                                            cache_write=tokens.cache_write, cost=step.cost, review=review or None))
        return self._budget_stop()

    # ------------------------------------------------------ after session
    async def _after_session(
        self, stage: Stage, outcome: SessionOutcome, usage: _DbReading, before: Snapshot
    ) -> Stop | None:
        ctx, rec, result = self.ctx, self.ctx.recorder, outcome.result
        facts = IterationFacts(session_id=result.session_id, tool_calls=outcome.tool_calls, usage_db=usage.figures,
                               warnings=usage.warnings)
        for line in result.warnings:
            rec.warn(f"agent CLI: {line}")
        session_id = self._next_session_id(outcome)
        if outcome.guard is not None:
            return self._guard_hit(facts, outcome.guard)
        if outcome.rejections:  # refused before they ran (serve): the session went on
            facts = replace(facts, guard_hits=len(outcome.rejections), guard_reason=outcome.rejections[-1].reason)
        progress = read_progress(self.layout.progress, result.text)
        self._notes_seen(progress)
        for warning in progress.warnings:
            rec.warn(warning)
        after_status = await asyncio.to_thread(self._tree.read)
        after = self._tree.snapshot(after_status)
        tree_changes = changed_between(before, after)
        changed = sorted(set(tree_changes) | set(progress.files_changed))
        if ctx.settings.dry_run:  # it writes nothing: what its simulated agent reports stands for the tree
            tree_changes = changed
        # Against the stage's start: a protected file put back as it was no longer blocks.
        protected = protected_between(ctx.goal.protected_for(stage), self._stage_start[stage.id], after)
        if self.review is not None:
            self.review.fix_touched(stage.id, tree_changes)
        facts = self._with_progress(facts, progress, changed)
        if outcome.stopped:
            rec.record_iteration(replace(facts, outcome="stopped", error="stopped by the operator"), session_id)
            return stop_policy.STOPPED
        # The circle hooks read and mark a row: they get the row as the events and facts make it so far.
        early = settled_row(self.state, facts)
        self.circles.ended_early(outcome.ended_early, outcome.tool_calls, early, ctx.settings.max_iteration_minutes * 60)
        facts = replace(facts, outcome=early.outcome, error=early.error, circles=early.circles)
        settled = await self._settle_stage(stage, outcome, progress, protected)
        facts = replace(facts, outcome=settled.outcome or facts.outcome, error=settled.error or facts.error, verify=settled.verify,
                        review=settled.review, questions=(*facts.questions, *settled.questions),
                        warnings=(*facts.warnings, *settled.warnings), tamper_findings=settled.tamper_findings)
        seen = settled_row(self.state, facts)
        self.circles.observe(Iteration(seen.iteration, stage.id, seen.verify, tree_changes, before, after,
                                       after_status.head, seen.cost), seen)
        facts = self._with_percent(replace(facts, circles=seen.circles), progress)
        stale = stop_policy.next_stale_count(self.state.stale_iterations, bool(tree_changes), settled.advanced)
        if self.state.stop_requested:
            rec.record_iteration(replace(facts, outcome="stopped"), session_id)
            return stop_policy.STOPPED
        row = rec.record_iteration(facts, session_id, stale)
        rec.emit(IterationFinished(message=iteration_line(row), outcome=row.outcome, percent=row.percent))
        self._after_loop_writes(row)
        if settled.advanced and self.ctx.finish is not None:
            await self.ctx.finish(self.state)
            self._tree.forget()  # the commit moved HEAD: read the work tree afresh
        if row.guard_hits:
            why = stop_policy.guard_reason(self.limits, self.state.consecutive_guard_blocks, row.guard_reason)
            if why:
                return StopReason.STOPPED_GUARD, why
        return await self._after_report(row)

    def _after_loop_writes(self, row: IterationSummary) -> None:
        """Keep the read of the work tree for the next iteration true to what the loop itself wrote:
        verify output and reviewers' sessions are unknown (read it all again). (The ticked goal file is
        accounted for where it is written, in `_mark_done`.)"""
        if row.verify is not None or self.review is not None:
            self._tree.forget()

    def _next_session_id(self, outcome: SessionOutcome) -> str | None:
        """The shared session the next iteration continues ("" = start a fresh one; None = unchanged)."""
        shared = self.state.shared_context
        if self._context_too_big(outcome.result.context_tokens, shared):
            self._start_fresh_session("the shared session grew past the context threshold")
            return ""
        if shared and outcome.guard is None and outcome.result.session_id:
            return outcome.result.session_id
        return None

    def _notes_seen(self, progress: Progress) -> None:
        ids = notes.acknowledged_in_progress(progress.notes_seen, notes.awaiting_ack(self.state.notes))
        if ids:
            self.ctx.recorder.emit(NoteAcknowledged(message=f"note {', '.join(ids)} acknowledged in progress.json",
                                                    note_ids=ids, how="progress"))

    def _with_progress(self, facts: IterationFacts, progress: Progress, changed: list[str]) -> IterationFacts:
        if not self.state.shared_context:
            self.handoffs.collect()
        return replace(facts, topic=progress.topic, summary=progress.summary, files_changed=tuple(changed),
                       progress_source=progress.source, warnings=(*progress.warnings, *facts.warnings),
                       questions=tuple(progress.questions) if progress.needs_input else (),
                       duration_ms=self._elapsed_ms())

    def _elapsed_ms(self) -> int:
        row = self.state.current_iteration()
        return _elapsed_ms(row.started_at) if row is not None else 0

    async def _settle_stage(
        self, stage: Stage, outcome: SessionOutcome, progress: Progress, protected: list[str]
    ) -> _Settled:
        """Decide the stage's status: whether it became done this iteration, and what the iteration's
        report says of it."""
        result = outcome.result
        if outcome.ended_early:
            return _Settled(outcome="")  # a doom loop: cut short, its report is not to be trusted (its outcome stays)
        if result.failed:
            error = result.error or "agent failed"
            self.ctx.recorder.emit(AgentFailed(message=f"agent session failed: {error}",
                                               stderr=result.stderr_tail[-2000:]))
            return _Settled(outcome="timeout" if result.timed_out else "failed", error=error)
        if protected:
            return self._protected_block(stage, protected)
        claims_done = progress.stage_status == "done" and progress.stage_id in (None, stage.id)
        if progress.stage_status == "blocked" and progress.stage_id in (None, stage.id):
            self.ctx.recorder.emit(StageBlocked(message=f"the agent reports stage '{stage.title}' blocked",
                                                stage_id=stage.id))
        if not claims_done:
            return _Settled()
        verdict: VerifyResult | None = None
        command = self._verify_command(stage)
        if command and not self.ctx.settings.dry_run:
            verdict = await self._verify_unless_stopped(command)
            if verdict is None:
                return _Settled()
            if not verdict.passed:
                self._verify_failed(stage, verdict)
                return _Settled(verify=verdict)
            self.ctx.recorder.emit(VerifyFinished(message=f"verify passed: `{command}`", passed=True))
        passed, tamper = await self._untampered(stage, command)
        if not passed:
            return replace(tamper, verify=verdict)
        if self.review is not None:
            reviewed = await self._reviewed(stage, verdict)
            reviewed = replace(reviewed, tamper_findings=tamper.tamper_findings,
                               warnings=(*tamper.warnings, *reviewed.warnings))
            if not reviewed.advanced:
                return reviewed
        else:
            reviewed = replace(tamper, verify=verdict)
        self._mark_done(stage)
        return replace(reviewed, advanced=True)

    def _verify_command(self, stage: Stage) -> str | None:
        return self.stages.verify_command(stage, self.ctx.settings.verify) or None

    async def _reviewed(self, stage: Stage, verify: VerifyResult | None) -> _Settled:
        """The review after verify passed: `advanced` when the stage may advance. The review's
        feedback for the implementer travels in its review-block event (the reducer keeps it)."""
        assert self.review is not None
        verdict = await self.review.review(stage, self.state.iteration, verify)
        questions = tuple(Question(question=q) for q in verdict.questions)
        return _Settled(advanced=verdict.advance, verify=verify, review=verdict.summary, questions=questions)

    async def _untampered(self, stage: Stage, command: str | None) -> tuple[bool, _Settled]:
        """The tamper check (tamper/): whether the stage may go on (not when --tamper block found its
        tests weakened), and what the iteration's report says of it."""
        mode, rec = self.ctx.settings.tamper, self.ctx.recorder
        if mode == "off" or self.ctx.settings.dry_run:
            return True, _Settled()
        check = await check_stage(self.ctx.project, rec.layout.checkpoints,
                                  self._stage_first.get(stage.id, self.state.iteration), command)
        if check.error:
            rec.warn(f"tamper check failed, stage judged without it: {check.error}")
        if not check.findings:
            return True, _Settled()
        blocked = mode == "block"
        found = tuple(f.as_dict() for f in check.findings)
        rec.emit(TamperFound(
            message=f"test tampering in stage '{stage.title}'{' (blocked)' if blocked else ''}: "
                    + "; ".join(f.text() for f in check.findings[:5]),
            level="error" if blocked else "warn", stage_id=stage.id, blocked=blocked, findings=list(found),
            feedback=tamper_feedback(check.findings) if blocked else None))
        settled = _Settled(tamper_findings=found,
                           warnings=("test tampering: " + "; ".join(f.text() for f in check.findings),))
        if not blocked:
            return True, settled
        review = ReviewRoundSummary(step="tamper", count=len(check.findings), verdict="block",
                                    findings=[row.as_dict() for row in tamper_rows(check.findings)])
        return False, replace(settled, review=review)

    def _protected_block(self, stage: Stage, protected: list[str]) -> _Settled:
        findings, feedback = protected_feedback(protected)
        self.ctx.recorder.emit(ProtectedChanged(
            message=f"protected file(s) changed: {', '.join(protected)}; stage '{stage.title}' is blocked",
            stage_id=stage.id, files=list(protected), feedback=feedback))
        review = ReviewRoundSummary(step="protected", count=len(findings), verdict="block",
                                    findings=[f.as_dict() for f in findings])
        return _Settled(review=review, warnings=("protected files changed: " + ", ".join(protected),))

    def _emit_feedback(self, feedback: str) -> None:
        """A resumed gate fix pass whose feedback only the ledger had (a run recorded before the state kept it)."""
        stage = self.stages.next_stage(self.state)
        if stage is not None:
            self.ctx.recorder.emit(ReviewBlocked(message=f"review: resuming the gate's fix pass of '{stage.title}'",
                                                 stage_id=stage.id, feedback=feedback))

    async def _verify_unless_stopped(self, command: str) -> VerifyResult | None:
        """Run the verify command; a Stop cancels it (its process group is killed) and gives None."""
        timeout = self.ctx.settings.verify_timeout_minutes * 60
        verify = asyncio.ensure_future(self.ctx.hooks.verify(command, self.ctx.project, timeout))
        stop = asyncio.ensure_future(self.ctx.control.wait_for_stop())
        await asyncio.wait({verify, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if verify.done():
            return verify.result()
        verify.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await verify
        self.ctx.recorder.warn(f"Stop requested: verify `{command}` cancelled")
        return None

    def _verify_failed(self, stage: Stage, verdict: VerifyResult) -> None:
        why = "timed out" if verdict.timed_out else f"exited {verdict.exit_code}"
        feedback = f"`{verdict.command}` {why}. Output (tail):\n```\n{verdict.output_tail}\n```"
        self.ctx.recorder.emit(VerifyFinished(
            message=f"verify failed: `{verdict.command}` {why}; stage '{stage.title}' is blocked", level="error",
            passed=False, exit_code=verdict.exit_code, stage_id=stage.id, command=verdict.command, feedback=feedback))

    def _mark_done(self, stage: Stage) -> None:
        self.ctx.recorder.emit(StageDone(message=f"stage done: {stage.title}", stage_id=stage.id))
        # A dry run changes no file but the loop's own, so the goal file is left as it is.
        s = self.ctx.settings
        syncs = s.sync_goal and self.ctx.goal.kind != "text" and not s.dry_run
        if not syncs or self.ctx.goal.source is None:
            return
        before = _read_bytes(self.ctx.goal.source)
        ticked = self.ctx.hooks.sync_markdown(self.ctx.goal, stage)
        self._tree.wrote(self.ctx.goal.source, before)
        if not ticked:
            self.ctx.recorder.warn(f"could not tick '{stage.title}' in {self.ctx.goal.source}")

    def _with_percent(self, facts: IterationFacts, progress: Progress) -> IterationFacts:
        completed = self.stages.completed(self.state)
        ratio = completion_percent(self.ctx.goal, completed)
        verified_block = facts.verify is not None and not facts.verify.passed
        percent = ratio if progress.percent is None or verified_block else progress.percent
        return replace(facts, percent=percent,
                       next_stage=progress.next_stage or first_open_stage_title(self.ctx.goal, completed))

    def _context_too_big(self, context_tokens: int, shared: bool) -> bool:
        s, rec = self.ctx.settings, self.ctx.recorder
        if s.context_warn_tokens and context_tokens > s.context_warn_tokens:
            rec.warn(f"context is {context_tokens} tokens (over --context-warn-tokens {s.context_warn_tokens})")
        if shared and s.auto_fresh_tokens and context_tokens > s.auto_fresh_tokens:
            rec.warn(f"context passed --auto-fresh-tokens {s.auto_fresh_tokens}: next iteration starts a fresh session")
            return True
        return False

    def _start_fresh_session(self, why: str) -> None:
        prev = _previous(self.state)
        self.handoffs.put(
            f"# Synthesized handoff ({why})\n\n- Last topic: {prev.get('topic', '—')}\n"
            f"- Last summary: {prev.get('summary', '—')}\n- Next: {prev.get('nextStage', '—')}\n"
        )

    def _guard_hit(self, facts: IterationFacts, decision: GuardDecision) -> Stop | None:
        self._tree.forget()  # the aborted session's changes were never read
        facts = replace(facts, outcome="guard", guard_hits=1, guard_reason=decision.reason,
                        duration_ms=self._elapsed_ms())
        session_id: str | None = None
        if self.state.shared_context:
            self._start_fresh_session("the previous session was aborted by the guard")
            session_id = ""
        self.ctx.recorder.record_iteration(facts, session_id)
        why = stop_policy.guard_reason(self.limits, self.state.consecutive_guard_blocks, decision.reason)
        return (StopReason.STOPPED_GUARD, why) if why else None

    async def _after_report(self, row: IterationSummary) -> Stop | None:
        budget = self._budget_stop() or self.state.quota_stop
        if budget:
            self._report_unasked(row)
            return StopReason.STOPPED_BUDGET, budget
        if self._no_iteration_follows():
            self._report_unasked(row)
            return None
        stop = await self._ask_operator(row)
        if stop:
            return stop
        can_ask = self.ctx.settings.hitl != "off" and self.ctx.answer_channel_open()
        stop = await self.circles.respond(row, can_ask, self._ask_about_circle)
        if stop:
            return stop
        why = stop_policy.stale_reason(self.limits, self.state.stale_iterations,
                                       self.stages.next_stage(self.state) is not None)
        return (StopReason.STALLED, why) if why else None

    def _no_iteration_follows(self) -> bool:
        """Waiting for an answer is pointless when nothing will read it."""
        return stop_policy.no_iteration_follows(self.state, self.state.max_iterations,
                                                self.stages.next_stage(self.state) is not None)

    def _report_unasked(self, row: IterationSummary) -> None:
        if row.questions:
            text = "; ".join(q.question for q in row.questions)
            self.ctx.recorder.emit(Warned(message=f"the agent asked, but the run is ending: {text}", about="unasked",
                                          reason=text))

    # ------------------------------------------------------------- HITL
    async def _ask_operator(self, row: IterationSummary) -> Stop | None:
        ctx, rec = self.ctx, self.ctx.recorder
        mode = ctx.settings.hitl
        questions = list(row.questions)
        if mode == "off" or (mode == "on-question" and not questions):
            if questions:
                rec.warn("the agent asked questions but --hitl is off: " + "; ".join(q.question for q in questions))
            return None
        if not questions:
            questions = [Question(question=ALWAYS_QUESTION)]
        if not ctx.answer_channel_open():
            rec.warn("the agent asked a question but no answer channel is open (no terminal, no dashboard); "
                     "continuing without an answer")
            self._unanswered(questions, "no answer channel is open")
            return None
        self._tree.forget()  # the operator may edit files while deciding
        answers = await self._put_questions(questions, row.iteration)
        if answers is None:
            return StopReason.ABORTED, "stopped while waiting for an answer"
        rec.set_status(Phase.RUNNING)
        return None

    async def _ask_about_circle(self, questions: list[Question], iteration: int) -> list[Answer] | None:
        self._tree.forget()  # the operator may edit files while deciding
        answers = await self._put_questions(questions, iteration)
        self.ctx.recorder.set_status(Phase.RUNNING)
        return answers

    async def _put_questions(self, questions: list[Question], iteration: int) -> list[Answer] | None:
        """Ask the operator and wait; the answers are recorded. None when the run was stopped; an empty
        list when --answer-timeout passed (the questions are recorded as unanswered)."""
        ctx, rec = self.ctx, self.ctx.recorder
        ctx.control.begin_question_round()
        for q in questions:
            options = "".join(f"\n    {n}. {o}" for n, o in enumerate(q.options, 1))
            rec.emit(QuestionAsked(message=f"? {q.question}{options}", question=q.question, options=q.options))
        rec.set_status(Phase.WAITING_ANSWER)
        try:
            answers = await collect_answers(ctx.control, questions, iteration, ctx.answer_timeout)
        except TimeoutError:
            self._unanswered(questions, f"no answer within {format_duration(ctx.answer_timeout or 0)}")
            return []
        if answers is None:
            return None
        ctx.answers.add(answers)
        for a in answers:
            rec.emit(AnswerReceived(message=f"answer: {a.question} → {a.answer}", source=a.source))
        return answers

    async def _answer_agent(self, asked: AgentQuestion) -> list[str] | None:
        """The agent's own question tool, mid-session (serve): routed to the loop's HITL channel."""
        questions = [Question(question=q.question, options=list(q.options)) for q in asked.questions]
        text = "; ".join(q.question for q in questions)
        if self.ctx.settings.hitl == "off" or not self.ctx.answer_channel_open():
            self.ctx.recorder.warn(f"the agent asked (no answer channel, or --hitl off; it goes on without): {text}")
            return None
        answers = await self._put_questions(questions, self.state.iteration)
        self.ctx.recorder.set_status(Phase.RUNNING)
        if not answers:
            return None
        by_question = {a.question: a.answer for a in answers}
        return [by_question.get(q.question, "") for q in questions]

    def _unanswered(self, questions: list[Question], why: str) -> None:
        """Recorded in the state; the next prompt tells the agent nobody answered."""
        for q in questions:
            if q.question != ALWAYS_QUESTION:
                self.ctx.recorder.emit(QuestionUnanswered(message=f"unanswered ({why}): {q.question}",
                                                          question=q.question))

    # ------------------------------------------------------------ finish
    def _finish(self, status: StopReason, reason: str) -> None:
        rec = self.ctx.recorder
        had_errors = any(item.outcome in ("failed", "timeout") for item in self.state.iterations
                         if item.iteration >= self.state.first_iteration)
        if status is StopReason.DONE and had_errors:
            reason = f"{reason} (some iterations failed)"
        resume = "" if not status.resumable else resume_command(self.ctx.settings, self.state.run_id)
        # Best effort, step by step: a full disk must not leave the run looking alive and unexplained.
        # (report.md follows the run-finished event: the recorder writes it.)
        steps: list[tuple[str, Callable[[], object]]] = [
            ("status", lambda: rec.set_status(status, reason)),
            ("event", lambda: rec.emit(RunFinished(message=f"run {status}: {reason}",
                                                   level="heading" if status.success else "warn",
                                                   status=status, resume=resume))),
        ]
        for name, step in steps:
            try:
                step()
            except Exception as exc:  # noqa: BLE001 — report and go on with the rest
                print(f"kilo-loop: could not write the run's final {name}: {exc}", file=sys.stderr)


def _previous(state: RunState) -> dict[str, str]:
    """The last settled iteration's report, as the next prompt shows it."""
    item = next((i for i in reversed(state.iterations) if i.outcome in _DONE_OUTCOMES), None)
    if item is None:
        return {}
    return {"topic": item.topic, "summary": item.summary, "percent": f"{item.percent}%", "nextStage": item.next_stage}


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def resume_command(settings: Settings, run_id: str) -> str:
    goal = f"--goal {shlex.quote(str(settings.goal))}" if settings.goal else \
        f"--goal-text {shlex.quote(settings.goal_text or '')}"
    project = f" -C {shlex.quote(str(settings.project))}" if settings.project else ""
    dry = " --dry-run" if settings.dry_run else ""
    return f"kilo-loop {goal}{project}{dry} --resume {shlex.quote(run_id)}"


def _elapsed_ms(started_at: str) -> int:
    from datetime import datetime

    try:
        start = datetime.fromisoformat(started_at)
    except ValueError:
        return 0
    return int((datetime.now(start.tzinfo) - start).total_seconds() * 1000)
