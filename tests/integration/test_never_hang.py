"""Issue 13 item 4 through the real command line: nothing waits for an answer nobody can give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.integration.loop_harness import REPO

GOAL = str(REPO / "examples" / "goal.example.md")


def cli(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILO_LOOP_")}
    env.update({"PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p),
                "KILO_LOOP_DRY_RUN_DELAY": "0.01", "NO_COLOR": "1", "COLUMNS": "200"})
    return subprocess.run([sys.executable, "-m", "kilo_loop", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=timeout, check=False)


def test_the_readme_dry_run_finishes_by_itself_with_the_dashboard_up(project: Path) -> None:
    result = cli(["--dry-run", "--goal", GOAL, "-n", "4", "--no-confirm", "--port", "0"], project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Dashboard http://127.0.0.1:" in result.stdout
    run = next((project / ".kilocode-loop" / "runs").iterdir())
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert [e["type"] for e in events].count("unanswered") == 1  # the simulated question timed out
    assert json.loads((run / "state.json").read_text())["status"] == "done"
    assert "## Unanswered questions" in (run / "iterations" / "03-prompt.md").read_text()


def test_answer_timeout_flag(project: Path) -> None:
    result = cli(["--dry-run", "--goal", GOAL, "-n", "4", "--no-confirm", "--port", "0", "--answer-timeout", "1s"],
                 project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "unanswered (no answer within 1s): Which approach" in result.stdout


def test_hitl_always_without_anyone_to_answer_is_refused_before_anything_starts(project: Path) -> None:
    result = cli(["--dry-run", "--goal", GOAL, "--no-confirm", "--no-dashboard", "--hitl", "always"], project)
    assert result.returncode == 2
    assert "--hitl always needs someone to answer" in result.stderr
    assert not (project / ".kilocode-loop" / "runs").exists()


def test_a_bad_duration_is_a_clear_error(project: Path) -> None:
    result = cli(["--dry-run", "--goal", GOAL, "--no-confirm", "--no-dashboard", "--answer-timeout", "soon"], project)
    assert result.returncode == 2 and "not a duration" in result.stderr
