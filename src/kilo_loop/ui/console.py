"""The live console: a section per iteration, a heading per tool action, the
iteration report line and an end-of-run summary. Renders redacted RunEvents only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

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
    # Rich honours NO_COLOR itself; --no-color forces it off.
    return Console(no_color=no_color or None, highlight=False, stderr=stderr, soft_wrap=False)


class ConsoleView:
    def __init__(self, console: Console, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self._handlers: dict[type[RunEvent], Callable[[RunEvent], None]] = {
            IterationStarted: self._on_iteration_started, ToolUsed: self._on_tool, TextOut: self._on_text,
            ReasoningOut: self._on_reasoning, SessionOpened: self._on_session,
            IterationFinished: self._on_iteration_finished, QuestionAsked: self._on_question,
            StatusChanged: self._on_status, RunFinished: self._on_run_finished,
        }

    def __call__(self, event: RunEvent) -> None:
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
        self.console.print(Rule(Text(event.message, style="bold"), align="left"))

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
        self._line("  report: " + event.message, "bold green" if event.data.get("outcome") == "ok" else "bold yellow")

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
        self._line(f"status {state.status} · stages {done}/{len(state.stages)} · {format_tokens(state.totals.tokens)}"
                   f" tokens · {format_cost(state.totals.cost)}", "bold")
        if report is not None:  # a path to open or copy: one line at any width
            self.console.print(Text(f"report {report}", style="bold"), soft_wrap=True)
