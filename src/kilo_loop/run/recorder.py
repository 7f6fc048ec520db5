"""Owns a run's state and its files: every change is an event; state.json and
reports are written atomically, through the one redactor."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kilo_loop.run.bus import EventBus
from kilo_loop.run.events import RunEvent, StatusChanged, Warned, now_iso
from kilo_loop.run.files import write_json_atomic, write_text_atomic
from kilo_loop.run.layout import RunLayout
from kilo_loop.run.report import iteration_report_md, run_report_md
from kilo_loop.run.state import LOG_TAIL_LINES, IterationSummary, RunState
from kilo_loop.run.status import RunStatus


class RunRecorder:
    def __init__(self, layout: RunLayout, state: RunState, bus: EventBus, redact: Callable[[Any], Any]) -> None:
        self.layout = layout
        self.state = state
        self.bus = bus
        self._redact = redact
        bus.subscribe(self._keep_tail)
        self._state_listeners: list[Callable[[RunState], None]] = []
        # Finished iterations never change again: redact each once, not on every save.
        self._redacted_iterations: dict[int, Any] = {}

    def on_state(self, listener: Callable[[RunState], None]) -> None:
        self._state_listeners.append(listener)

    def _keep_tail(self, event: RunEvent) -> None:
        tail = self.state.log_tail
        tail.append(event.to_wire())
        if len(tail) > LOG_TAIL_LINES:
            del tail[: len(tail) - LOG_TAIL_LINES]

    def emit(self, event: RunEvent) -> RunEvent:
        if event.iteration is None and self.state.iteration:
            event = dataclasses.replace(event, iteration=self.state.iteration)
        return self.bus.emit(event)

    def warn(self, message: str, **data: Any) -> None:
        self.emit(Warned(message=message, **data))

    def set_status(self, status: RunStatus, reason: str = "") -> None:
        if status == self.state.status and not reason:
            return
        self.state.status = status
        if reason:
            self.state.stop_reason = reason
        self.emit(StatusChanged(message=f"status: {status}" + (f" — {reason}" if reason else ""), status=status))
        self.save()

    def save(self, durable: bool = True) -> None:
        state = self.state
        wire = self._redact(state.model_dump(mode="json", by_alias=True, exclude={"iterations", "log_tail"}))
        wire["iterations"] = [self._iteration_wire(item) for item in state.iterations]
        wire["logTail"] = state.log_tail  # events were redacted by the bus before they got here
        write_json_atomic(self.layout.state, wire, durable)
        for listener in list(self._state_listeners):
            listener(self.state)

    def _iteration_wire(self, item: IterationSummary) -> Any:
        cached = self._redacted_iterations.get(item.iteration)
        return cached if cached is not None else self._redact(item.wire())

    def archive(self, iteration: int, suffix: str, text: str) -> None:
        # Archives are regenerable records, so no fsync: state.json is what resume relies on.
        write_text_atomic(self.layout.iteration_file(iteration, suffix), self._redact(text), durable=False)

    def start_iteration(self, summary: IterationSummary) -> None:
        self._redacted_iterations.pop(summary.iteration, None)
        self._put(summary)
        # Renamed into place, so a kill -9 still finds it; the fsync waits for the iteration's end.
        self.save(durable=False)

    def record_iteration(self, summary: IterationSummary) -> None:
        """The iteration's final report: NN-report.json / .md, and state.json."""
        summary.finished_at = summary.finished_at or now_iso()
        self._put(summary)
        wire = self._redact(summary.wire())
        self._redacted_iterations[summary.iteration] = wire
        write_json_atomic(self.layout.iteration_file(summary.iteration, "report.json"), wire, durable=False)
        self.archive(summary.iteration, "report.md", iteration_report_md(summary))
        self.save()

    def _put(self, summary: IterationSummary) -> None:
        items = self.state.iterations
        if items and items[-1].iteration == summary.iteration:
            items[-1] = summary
        else:
            items.append(summary)

    def write_run_report(self) -> None:
        write_text_atomic(self.layout.report, self._redact(run_report_md(self.state)))
