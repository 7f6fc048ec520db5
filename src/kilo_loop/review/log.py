"""Everything the review loop tells the run: its log lines, archived prompts and the open gate.

One narrow seam between the review package and the run's recorder, so the review logic does not
depend on how events are represented or how the run state is written.
"""

from __future__ import annotations

from typing import Any

from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.state import Question, ReviewGateState


class ReviewLog:
    def __init__(self, recorder: RunRecorder) -> None:
        self._recorder = recorder

    @property
    def run_id(self) -> str:
        return self._recorder.state.run_id

    def event(self, kind: str, message: str, level: str = "info", **data: Any) -> None:
        """One log line of the review (`review-round`, `review-started`, …) with its details."""
        self._recorder.emit(kind, message, level, **data)

    def warning(self, message: str) -> None:
        self._recorder.warn(message)

    def archive(self, iteration: int, suffix: str, text: str) -> None:
        self._recorder.archive(iteration, suffix, text)

    def gate_opened(self, gate: ReviewGateState, listing: str) -> None:
        """The gate waits for an answer: the state shows it, the log lists its rows and asks."""
        state = self._recorder.state
        state.review_gate = gate
        state.pending_questions = [Question(question=gate.question)]
        self._recorder.emit("review-gate", listing, "warn", stage_id=gate.stage_id, exit=gate.exit,
                            rows=len(gate.rows))
        self._recorder.emit("question", f"? {gate.question}", "warn", question=gate.question, options=[])
        self._recorder.set_status("waiting-answer")
        self._recorder.save()

    def gate_answered(self, reply: str, source: str) -> None:
        self._recorder.state.pending_questions = []
        self._recorder.emit("answer", f"review gate answer: {reply or '(defer all)'}", "info", source=source)

    def gate_closed(self) -> None:
        state = self._recorder.state
        state.review_gate = None
        state.pending_questions = []
        self._recorder.set_status("running")
