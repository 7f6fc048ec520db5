"""The terminal as a person sees it: a dry run in a real tty (tmux), keys typed, the screen read back.

Shows the time on every iteration header and report line and in the final summary, the one-time
"press ? for keys" hint, `?` at a question printing the keys instead of becoming the answer, and `X`
saying in words what it will do."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.git import git
from tests.support.paths import EXAMPLES, SRC
from tests.support.tmux import TmuxScreen

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed (scripts/test.sh installs it)")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    shutil.copy(EXAMPLES / "goal.example.md", root / "goal.md")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "goal")
    return root


@pytest.fixture
def screen(project: Path) -> Iterator[TmuxScreen]:
    command = [sys.executable, "-m", "kilo_loop", "--dry-run", "--goal", "goal.md", "-n", "4",
               "--no-dashboard", "--no-confirm"]
    env = {"PYTHONPATH": str(SRC), "HOME": os.environ.get("HOME", str(project)), "TERM": "xterm-256color"}
    screen = TmuxScreen(command, cwd=project, env=env)
    yield screen
    screen.close()


def first_answer(project: Path, timeout: float = 30.0) -> str:
    """The first answer the run recorded (events.jsonl is written in batches: wait for it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for events_file in (project / ".kilocode-loop" / "runs").glob("*/events.jsonl"):
            for line in events_file.read_text().splitlines():
                record = json.loads(line) if line.strip() else {}
                if record.get("type") == "answer":  # "answer: <question> → <answer>"
                    return str(record["message"]).rsplit(" → ", 1)[-1]
        time.sleep(0.1)
    raise AssertionError(f"no answer recorded within {timeout:.0f} s")


def test_a_dry_run_in_a_real_terminal(screen: TmuxScreen, project: Path) -> None:
    screen.wait_for(r"^Iteration 1/4 — .* · elapsed \d+s")
    screen.wait_for(r"press \? for keys \(P pause, X stop after this session, Q stop now\)")
    # the iteration's duration, then the run's (the line may wrap at the pane's edge)
    screen.wait_for(r"^  report: [^▸]*?· \d+s · elapsed \d+s$")

    question = screen.wait_for(r"type an answer \(a number picks an option\)")
    screen.type("?")
    screen.wait_for(r"^keys: X abort after this session", after=question.end())
    screen.type("1")
    third = screen.wait_for(r"^Iteration 3/4 — ", after=question.end())
    assert first_answer(project) == "Keep the current structure", "the ? typed at the question became the answer"

    screen.type("X", enter=False)
    screen.wait_for(r"stopping after this session", after=third.start())
    summary = screen.wait_for(r"^status \S+ · stages \d/3 · [^▸]*? · \d+s$", timeout=90)
    assert "control: stop = True" not in screen.text()
    assert "Iteration 4/4" not in screen.text()[third.start():summary.start()]
