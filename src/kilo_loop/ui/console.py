"""The live console: a section per iteration, a heading per tool action, the
iteration report line and an end-of-run summary. Renders redacted RunEvents only."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from kilo_loop.durations import format_duration
from kilo_loop.run.events import (
    IterationFinished,
    IterationStarted,
    QuestionAsked,
    ReasoningOut,
    RunEvent,
    RunFinished,
    SessionOpened,
    StatusChanged,
    TextOut,
    ToolUsed,
)
from kilo_loop.run.layout import ProjectLayout
from kilo_loop.run.report import format_cost, format_tokens
from kilo_loop.run.state import RunState

_STYLES = {"warn": "yellow", "error": "bold red", "tool": "cyan", "info": ""}
_QUIET_TYPES: frozenset[type[RunEvent]] = frozenset({RunFinished, QuestionAsked, StatusChanged})
_TEXT_PREVIEW_LINES = 3


def make_console(no_color: bool = False, stderr: bool = False) -> Console:
    # Rich honours NO_COLOR itself; --no-color forces it off. Into a file or a pipe, lines are not
    # hard-wrapped at Rich's 80 columns (a log keeps one line per line); rules and tables keep that width.
    console = Console(no_color=no_color or None, highlight=False, stderr=stderr, soft_wrap=False)
    console.soft_wrap = not console.is_terminal
    return console


def _moment(ts: str) -> datetime | None:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")) if ts else None
    except ValueError:
        return None


def run_duration(state: RunState) -> str | None:
    """The whole run's duration from its state (None while it has no start or end)."""
    started, finished = _moment(state.started_at), _moment(state.finished_at or "")
    return format_duration((finished - started).total_seconds()) if started and finished else None


class ConsoleView:
    """`keys_hint`: the first iteration says "press ? for keys" (default: when stdin is a terminal)."""

    def __init__(self, console: Console, quiet: bool = False, keys_hint: bool | None = None) -> None:
        self.console = console
        self.quiet = quiet
        self.keys_hint = sys.stdin.isatty() if keys_hint is None else keys_hint
        self._started: datetime | None = None  # the first event this view saw: the run's elapsed time
        self._iteration_started: datetime | None = None
        self._handlers: dict[type[RunEvent], Callable[[RunEvent], None]] = {
            IterationStarted: self._on_iteration_started, ToolUsed: self._on_tool, TextOut: self._on_text,
            ReasoningOut: self._on_reasoning, SessionOpened: self._on_session,
            IterationFinished: self._on_iteration_finished, QuestionAsked: self._on_question,
            StatusChanged: self._on_status, RunFinished: self._on_run_finished,
        }

    def _elapsed(self, event: RunEvent) -> str:
        now = _moment(event.ts)
        return f"elapsed {format_duration((now - self._started).total_seconds())}" if now and self._started else ""

    def __call__(self, event: RunEvent) -> None:
        if self._started is None:
            self._started = _moment(event.ts)
        if event.RECORD_ONLY:
            return
        if self.quiet and type(event) not in _QUIET_TYPES and event.level != "error":
            return
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)
        else:
            self._line(event.message, _STYLES.get(event.level, ""))

    def _line(self, message: str, style: str = "") -> None:
        self.console.print(Text(message, style=style))

    def _on_iteration_started(self, event: RunEvent) -> None:
        first = self._iteration_started is None
        self._iteration_started = _moment(event.ts)
        elapsed = self._elapsed(event)
        title = f"{event.message} · {elapsed}" if elapsed else event.message
        self.console.print(Rule(Text(title, style="bold"), align="left"))
        if first and self.keys_hint:
            self._line("  press ? for keys (P pause, X stop after this session, Q stop now)", "dim")

    def _on_tool(self, event: RunEvent) -> None:
        self._line("  " + event.message, "red" if event.data.get("status") == "error" else "cyan")

    def _on_text(self, event: RunEvent) -> None:
        lines = event.message.splitlines()
        shown = lines[:_TEXT_PREVIEW_LINES] + (["…"] if len(lines) > _TEXT_PREVIEW_LINES else [])
        self._line("\n".join("  " + line for line in shown), "dim")

    def _on_reasoning(self, event: RunEvent) -> None:
        self._line("  (thinking) " + event.message.splitlines()[0][:200], "dim italic")

    def _on_session(self, event: RunEvent) -> None:
        self._line("  " + event.message, "dim")

    def _on_iteration_finished(self, event: RunEvent) -> None:
        now, began = _moment(event.ts), self._iteration_started
        took = format_duration((now - began).total_seconds()) if now and began else ""
        times = " · ".join(part for part in (took, self._elapsed(event)) if part)
        line = f"  report: {event.message}" + (f" · {times}" if times else "")
        self._line(line, "bold green" if event.data.get("outcome") == "ok" else "bold yellow")

    def _on_question(self, event: RunEvent) -> None:
        self._line(event.message, "bold magenta")
        self._line("  type an answer (a number picks an option) and press Enter", "magenta")

    def _on_status(self, event: RunEvent) -> None:
        if event.data.get("status") in {"paused", "retrying", "waiting-answer", "waiting-quota"}:
            self._line(event.message, "yellow")

    def _on_run_finished(self, event: RunEvent) -> None:
        status = str(event.data.get("status", ""))
        self.console.print(Rule())
        self._line(event.message, "bold green" if status == "done" else "bold yellow")
        if event.data.get("resume"):  # a command to copy: one line at any terminal width
            self.console.print(Text(f"Resume this run: {event.data['resume']}", style="bold"), soft_wrap=True)

    def summary(self, state: RunState) -> None:
        table = Table(title=f"Run {state.run_id}", show_header=True, header_style="bold")
        for column in ("#", "stage", "outcome", "tokens", "cost", "%", "verify"):
            table.add_column(column)
        for item in state.iterations[-30:]:
            verify = "—" if item.verify is None else ("pass" if item.verify.passed else "fail")
            table.add_row(str(item.iteration), item.stage_title or "—", item.outcome, format_tokens(item.tokens),
                          format_cost(item.cost), str(item.percent), verify)
        self.console.print(table)
        done = sum(1 for s in state.stages if s.status == "done")
        report = ProjectLayout(Path(state.project)).run(state.run_id).report if state.project else None
        took = run_duration(state)
        self._line(f"status {state.status} · stages {done}/{len(state.stages)} · {format_tokens(state.totals.tokens)}"
                   f" tokens · {format_cost(state.totals.cost)}" + (f" · {took}" if took else ""), "bold")
        if report is not None:  # a path to open or copy: one line at any width
            self.console.print(Text(f"report {report}", style="bold"), soft_wrap=True)
