"""The loop's side of going in circles: observe each iteration, end a doom-looping session, and climb
the response ladder. Every detector call is guarded: an exception is a warning event and the run goes
on as if nothing had been seen."""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from kilo_loop.agent.protocol import ToolUse
from kilo_loop.loop.circles import ladder
from kilo_loop.loop.circles.doom import DoomWatch, saving
from kilo_loop.loop.circles.ladder import Circle
from kilo_loop.loop.circles.watch import CircleWatch, Iteration
from kilo_loop.run.circles import STEP_ASK, STEP_FRESH, STEP_STOP, CircleMark
from kilo_loop.run.events import CircleFound, SessionEndedEarly, Warned
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.report import format_cost, format_tokens
from kilo_loop.run.state import Answer, IterationSummary, Question
from kilo_loop.run.status import StopReason

T = TypeVar("T")
Ask = Callable[[list[Question], int], Awaitable[list[Answer] | None]]
Stop = tuple[StopReason, str]


class SessionDoom:
    """One session's doom-loop counter, as the session runner calls it on every finished tool call."""

    def __init__(self, watch: DoomWatch, warn: Callable[[str], None]) -> None:
        self._watch = watch
        self._warn = warn
        self._ended = False

    def __call__(self, event: ToolUse) -> str | None:
        if self._ended or event.status not in ("completed", "error"):
            return None
        try:
            doom = self._watch.observe(event.tool, event.input, event.status == "error")
        except Exception as exc:  # noqa: BLE001 - a detector must not end the run
            self._warn(f"doom-loop detector failed ({type(exc).__name__}: {exc}); the session goes on")
            return None
        self._ended = doom is not None
        return None if doom is None else doom.reason


class CircleHooks:
    def __init__(self, project: Path, recorder: RunRecorder, *, max_same_failure: int, max_repeat_calls: int,
                 max_failed_calls: int) -> None:
        self._rec = recorder
        self._watch = CircleWatch(project, max_same_failure)
        self._doom = (max_repeat_calls, max_failed_calls)
        self._circle: Circle | None = None

    # ------------------------------------------------------------ doom loops
    def session(self) -> SessionDoom | None:
        if not any(self._doom):
            return None
        return SessionDoom(DoomWatch(*self._doom), self._rec.warn)

    def ended_early(self, reason: str | None, calls: int, summary: IterationSummary, limit_s: float | None) -> bool:
        """After a session: when its doom-loop counter ended it, say so with what that saved."""
        if reason is None:
            return False
        tokens, cost = summary.tokens, summary.cost
        saved_tokens, saved_cost = saving(tokens, cost, summary.duration_ms / 1000, limit_s)
        note = (f"Your last session was ended early by the loop: {reason}. Repeating a call gives the same "
                "answer; use what it returned, or try something else.")
        summary.outcome, summary.error = "ended-early", f"ended early: {reason}"
        summary.circles = (summary.circles or CircleMark()).model_copy(update={
            "ended_early": reason, "saved_tokens": saved_tokens, "saved_cost": saved_cost})
        self._rec.emit(SessionEndedEarly(
            message=(f"session ended early after {calls} tool call(s): {reason}; it had spent "
                     f"{format_tokens(tokens)} tokens, {format_cost(cost)}; saved up to {format_tokens(saved_tokens)} "
                     f"tokens, {format_cost(saved_cost)} (its own average rate until the iteration's time limit)"),
            reason=reason, calls=calls, tokens=tokens, cost=cost, saved_tokens=saved_tokens,
            saved_cost=saved_cost, note=note))
        return True

    # ------------------------------------------------------------ each iteration
    def observe(self, it: Iteration, summary: IterationSummary) -> None:
        """Run the detectors on what the iteration left; the circle, if any, waits for `respond`."""
        self._circle = None
        seen = self._guarded("circle detectors", lambda: self._watch.observe(self._rec.state.circles, it))
        if seen is None:
            return
        self._rec.emit(seen.event)
        self._circle = seen.circle
        mark = summary.circles or CircleMark()
        summary.circles = mark.model_copy(update={
            "same_failure_streak": seen.event.streak, "signature": seen.event.signature,
            "oscillation": seen.event.oscillation})
        if summary.circles == CircleMark():
            summary.circles = None

    async def respond(self, summary: IterationSummary, can_ask: bool, ask: Ask) -> Stop | None:
        """The ladder's next rung for the circle this iteration found: a fresh session with a step-back
        prompt, the operator's word, or the stop with its diagnosis."""
        circle, self._circle = self._circle, None
        if circle is None:
            return None
        circles = self._rec.state.circles
        step = ladder.next_step(circles.ladder, can_ask)
        spent = circles.streak_cost if circle.kind == "thrash" else summary.cost
        diagnosis = ladder.diagnosis(circles, circle, spent)
        if step == STEP_FRESH:
            self._found(circle, step, diagnosis, ladder.step_back_note(circle, circles),
                        "the next iteration starts a fresh session with a step-back prompt")
            return None
        if step == STEP_ASK:
            self._found(circle, step, diagnosis, "", "asking the operator")
            answers = await ask([Question(question=ladder.question(circle), options=["stop"])], summary.iteration)
            if answers is None:
                return StopReason.ABORTED, "stopped while waiting for an answer"
            if answers and not any(ladder.wants_stop(a.answer) for a in answers):
                return None  # the answer is in the next prompt, with the operator's other answers
        why = f"going in circles ({circle.kind}): {circle.what}"
        self._found(circle, STEP_STOP, diagnosis, "", "stopping the run")
        return StopReason.STALLED, why

    def _found(self, circle: Circle, step: str, diagnosis: str, note: str, doing: str) -> None:
        self._rec.emit(CircleFound(message=f"going in circles ({circle.kind}): {circle.what}; {doing}",
                                   kind=circle.kind, step=step, stage_id=self._rec.state.circles.stage_id or "",
                                   diagnosis=diagnosis, note=note))

    def _guarded(self, what: str, call: Callable[[], T]) -> T | None:
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - no detector can end a run
            self._rec.emit(Warned(message=f"{what} failed ({type(exc).__name__}: {exc}); the run goes on",
                                  reason=traceback.format_exc(limit=3)[-1000:]))
            return None
