"""Everything the review loop tells the run: its log lines, archived prompts and the open gate.

One narrow seam between the review package and the run's recorder: the review logic names what
happened; this module turns it into the run's typed events (declared in run/events.py), which the reducer
folds into the state and the notifier turns into notices.
"""

from __future__ import annotations

from typing import Any

from kilo_loop.run.events import (
    EVENT_TYPES,
    AnswerReceived,
    QuestionAsked,
    ReviewGateAnswered,
    ReviewGateClosed,
    ReviewGateOpened,
    RunEvent,
)
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.state import ReviewGateState, RunState
from kilo_loop.run.status import Phase


class ReviewLog:
    def __init__(self, recorder: RunRecorder) -> None:
        self._recorder = recorder

    @property
    def run_id(self) -> str:
        return self._recorder.state.run_id

    def event(self, kind: str, message: str, level: str | None = None, **data: Any) -> None:
        """One log line of the review (`review-round`, `review-started`, …) with its details."""
        envelope: dict[str, Any] = {"message": message}
        if level is not None:
            envelope["level"] = level
        self._recorder.emit(EVENT_TYPES[kind](**envelope, **data))

    def emit(self, event: RunEvent) -> None:
        self._recorder.emit(event)

    def warning(self, message: str) -> None:
        self._recorder.warn(message)

    def archive(self, iteration: int, suffix: str, text: str) -> None:
        self._recorder.archive(iteration, suffix, text)

    def gate_opened(self, gate: ReviewGateState, listing: str, costs: str) -> None:
        """The gate waits for an answer: the state shows it, the log lists its rows and asks."""
        self._recorder.emit(ReviewGateOpened(message=listing, stage_id=gate.stage_id, exit=gate.exit,
                                             rows=len(gate.rows), gate=gate.wire(), costs=costs or None))
        self._recorder.emit(QuestionAsked(message=f"? {gate.question}", question=gate.question, options=[]))
        self._recorder.set_status(Phase.WAITING_ANSWER)

    def ask(self, message: str, question: str, options: list[str]) -> None:
        """A question of the review's own (the large rework's loop policy): pending until answered."""
        self._recorder.emit(QuestionAsked(message=message, question=question, options=options))
        self._recorder.set_status(Phase.WAITING_ANSWER)

    def answered(self, question: str, reply: str, source: str) -> None:
        self._recorder.emit(AnswerReceived(message=f"answer: {question} → {reply}", source=source))

    def question_closed(self) -> None:
        self._recorder.set_status(Phase.RUNNING)

    @property
    def state(self) -> RunState:
        return self._recorder.state

    def gate_answered(self, reply: str, source: str) -> None:
        self._recorder.emit(ReviewGateAnswered(message=f"review gate answer: {reply or '(defer all)'}",
                                               reply=reply, source=source))

    def gate_closed(self) -> None:
        self._recorder.emit(ReviewGateClosed())
        self._recorder.set_status(Phase.RUNNING)
