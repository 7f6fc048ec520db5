"""The live console's lines that people copy stay whole at any terminal width."""

from __future__ import annotations

import io
from pathlib import Path

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
