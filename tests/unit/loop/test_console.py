"""The live console's lines that people copy stay whole at any terminal width."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from kilo_loop.run.events import RunFinished
from kilo_loop.run.state import RunState
from kilo_loop.ui.console import ConsoleView


def test_the_resume_command_is_one_line_on_a_narrow_terminal() -> None:
    out = io.StringIO()
    view = ConsoleView(Console(file=out, width=40, no_color=True, highlight=False, soft_wrap=False))
    command = "kilo-loop --goal plans/a-rather-long-plan-name.md --dry-run --resume 20261201-102509-6963"
    view(RunFinished(message="run stopped-budget: 13500 tokens reached --max-tokens 100",
                     status="stopped-budget", resume=command))
    assert f"Resume this run: {command}\n" in out.getvalue()


def test_the_summary_names_the_report_by_a_path_that_opens(tmp_path: Path) -> None:
    out = io.StringIO()
    view = ConsoleView(Console(file=out, width=40, no_color=True, highlight=False, soft_wrap=False))
    view.summary(RunState(run_id="20261201-102509-6963", project=str(tmp_path), goal_title="G"))
    report = tmp_path / ".kilocode-loop" / "runs" / "20261201-102509-6963" / "report.md"
    assert f"report {report}\n" in out.getvalue()


def test_into_a_pipe_long_lines_are_not_hard_wrapped(capsys: pytest.CaptureFixture[str]) -> None:
    from kilo_loop.ui.console import make_console

    console = make_console()  # stdout is captured: not a terminal
    long = "x" * 50 + " " + "y" * 50 + " " + "z" * 50
    console.print(long)
    assert capsys.readouterr().out == long + "\n"


def test_iterations_and_the_summary_carry_their_time(tmp_path: Path) -> None:
    from kilo_loop.run.events import IterationFinished, IterationStarted, RunStarted

    out = io.StringIO()
    view = ConsoleView(Console(file=out, width=200, no_color=True, highlight=False), keys_hint=True)
    view(RunStarted(message="run started", ts="2026-12-02T08:00:00.000Z"))
    view(IterationStarted(message="Iteration 1/3 — Parse", iteration=1, ts="2026-12-02T08:00:10.000Z"))
    view(IterationFinished(message="13.5k tokens", outcome="ok", iteration=1, ts="2026-12-02T08:01:15.000Z"))
    view(IterationStarted(message="Iteration 2/3 — Build", iteration=2, ts="2026-12-02T08:01:16.000Z"))
    text = out.getvalue()
    assert "Iteration 1/3 — Parse · elapsed 10s" in text
    assert "report: 13.5k tokens · 1m 5s · elapsed 1m 15s" in text
    assert "Iteration 2/3 — Build · elapsed 1m 16s" in text
    assert text.count("press ? for keys") == 1  # the first iteration only
    view.summary(RunState(run_id="r", project=str(tmp_path), goal_title="G", started_at="2026-12-02T08:00:00.000Z",
                          finished_at="2026-12-02T08:12:03.000Z"))
    assert "status starting · stages 0/0 · 0 tokens · $0.0000 · 12m 3s" in out.getvalue()


def test_no_keys_hint_without_a_terminal() -> None:
    from kilo_loop.run.events import IterationStarted

    out = io.StringIO()
    ConsoleView(Console(file=out, width=200), keys_hint=False)(IterationStarted(message="Iteration 1/1 — x"))
    assert "press ?" not in out.getvalue() and "Iteration 1/1 — x" in out.getvalue()
