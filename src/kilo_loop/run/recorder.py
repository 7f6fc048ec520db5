"""Owns a run's state and its files: every change is an event on the bus; the reducer folds
it into the state; state.json (a snapshot), the iteration reports and the run report are
written from what the bus already redacted."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from kilo_loop.run.bus import EventBus
from kilo_loop.run.events import (
    AnswerReceived,
    ControlChanged,
    IterationReported,
    IterationStarted,
    NoteAcknowledged,
    NoteDelivered,
    NoteQueued,
    NoteWithdrawn,
    QuestionUnanswered,
    QuotaWait,
    Reverted,
    RunEvent,
    RunFinished,
    SecretsMasked,
    StageBlocked,
    StageDone,
    StateOpened,
    StatusChanged,
    VerifyFinished,
    Warned,
    now_iso,
)
from kilo_loop.run.files import read_json, write_json_atomic, write_text_atomic
from kilo_loop.run.layout import RunLayout
from kilo_loop.run.reducer import header_wire, reduce, settled_row
from kilo_loop.run.report import iteration_report_md, masked_line, run_report_md
from kilo_loop.run.state import IterationFacts, IterationSummary, RunState
from kilo_loop.run.status import RunStatus

# After these the snapshot is written (fsynced for the ones that end something): about once per
# iteration. After the others it is not — a resume replays them from events.jsonl — but the
# ones in _SHOW_AFTER still tell the state's watchers (the dashboard) that it changed.
_SAVE_AFTER: dict[type[RunEvent], bool] = {
    StateOpened: True, StatusChanged: True, IterationReported: True, RunFinished: True,
    ControlChanged: False, AnswerReceived: False, QuestionUnanswered: False, QuotaWait: False, Reverted: False,
    NoteQueued: False, NoteWithdrawn: False, NoteDelivered: False, NoteAcknowledged: False,
}
_SHOW_AFTER: frozenset[type[RunEvent]] = frozenset({IterationStarted, StageDone, StageBlocked, VerifyFinished})


class RunRecorder:
    def __init__(self, layout: RunLayout, state: RunState, bus: EventBus, redact: Callable[[Any], Any],
                 mask_counts: Callable[[], Mapping[str, int]] | None = None) -> None:
        self.layout = layout
        self._mask_counts = mask_counts
        self._counted: dict[str, int] = {}
        self.state = state
        self.bus = bus
        self._redact = redact
        self._state_listeners: list[Callable[[RunState], None]] = []
        bus.subscribe(self._fold, first=True)
        bus.subscribe(self._write_after)

    def redact(self, value: Any) -> Any:
        return self._redact(value)

    def on_state(self, listener: Callable[[RunState], None]) -> None:
        self._state_listeners.append(listener)

    def _fold(self, event: RunEvent) -> None:
        self.state = reduce(self.state, event)

    def _write_after(self, event: RunEvent) -> None:
        """The files that follow from an event: the iteration's reports, the snapshot, the run report."""
        if isinstance(event, IterationReported):
            self._write_iteration_reports(IterationSummary.model_validate(dict(event.summary)))
        durable = _SAVE_AFTER.get(type(event))
        if durable is not None:
            self.save(durable)
        elif type(event) in _SHOW_AFTER:
            self._changed()
        if isinstance(event, RunFinished):
            write_text_atomic(self.layout.report, run_report_md(self.state, self._all_iterations()))

    def _all_iterations(self) -> list[IterationSummary]:
        """Every iteration for the run report: the state keeps the newest, the rest are on disk."""
        kept = {item.iteration: item for item in self.state.iterations}
        first_kept = min(kept, default=self.state.iterations_total + 1)
        older = (self._read_report(number) for number in range(1, first_kept))
        return [item for item in older if item is not None] + list(kept.values())

    def _read_report(self, number: int) -> IterationSummary | None:
        try:
            return IterationSummary.model_validate(read_json(self.layout.iteration_file(number, "report.json")))
        except (OSError, ValueError):
            return None

    def _changed(self) -> None:
        for listener in list(self._state_listeners):
            listener(self.state)

    def open(self, state: RunState, resumed: bool) -> None:
        """Start (or resume) the run from `state`'s header: the first event of this process."""
        self.emit(StateOpened(state=header_wire(state), resumed=resumed))

    def emit(self, event: RunEvent) -> RunEvent:
        if isinstance(event, RunFinished):
            self._count_masks()
        if event.iteration is None and self.state.iteration:
            event = dataclasses.replace(event, iteration=self.state.iteration)
        return self.bus.emit(event)

    def _count_masks(self) -> None:
        """Before the run's end: the known secrets masked since the last count, by source."""
        if self._mask_counts is None:
            return
        now = dict(self._mask_counts())
        fresh = {source: count - self._counted.get(source, 0) for source, count in now.items()}
        fresh = {source: count for source, count in fresh.items() if count > 0}
        self._counted = now
        if fresh:
            self.emit(SecretsMasked(message=masked_line(fresh).lower(), counts=fresh))

    def warn(self, message: str, **data: Any) -> None:
        self.emit(Warned(message=message, **data))

    def set_status(self, status: RunStatus, reason: str = "") -> None:
        if status == self.state.status and not reason:
            return
        message = f"status: {status}" + (f" — {reason}" if reason else "")
        self.emit(StatusChanged(message=message, status=status, reason=reason or None))

    def save(self, durable: bool = True) -> None:
        """state.json: the reducer's state, built from redacted events, so written as it is."""
        write_json_atomic(self.layout.state, self.state.snapshot(), durable)
        self._changed()

    def archive(self, iteration: int, suffix: str, text: str) -> None:
        # Archives are regenerable records, so no fsync: state.json is what resume relies on.
        write_text_atomic(self.layout.iteration_file(iteration, suffix), self._redact(text), durable=False)

    def record_iteration(
        self, facts: IterationFacts, session_id: str | None = None, stale_iterations: int | None = None
    ) -> IterationSummary:
        """The iteration's final report, as an event: its row is the one the events built, settled with
        what the loop learned (`settled_row`); the reducer and the report files take it from there."""
        summary = settled_row(self.state, facts)
        wire = summary.wire()
        wire["finishedAt"] = wire.get("finishedAt") or now_iso()
        self.emit(IterationReported(summary=wire, session_id=session_id, stale_iterations=stale_iterations,
                                    iteration=summary.iteration))
        return self.state.current_iteration() or summary

    def _write_iteration_reports(self, item: IterationSummary) -> None:
        # Regenerable records (the event holds the same), so no fsync.
        write_json_atomic(self.layout.iteration_file(item.iteration, "report.json"), item.wire(), durable=False)
        write_text_atomic(self.layout.iteration_file(item.iteration, "report.md"), iteration_report_md(item),
                          durable=False)
