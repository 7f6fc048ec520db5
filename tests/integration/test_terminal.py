"""Key controls on a real pseudo-terminal, with the dry-run agent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.loop_harness import REPO
from tests.integration.pty_harness import PtyRun

GOAL = str(REPO / "examples" / "goal.example.md")


@pytest.fixture
def launch(project: Path) -> Iterator:
    runs: list[PtyRun] = []

    def start(*args: str) -> PtyRun:
        run = PtyRun(["--dry-run", "--goal", GOAL, "--no-dashboard", "--no-confirm", *args], project)
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.close()


def test_pause_and_resume_with_p(launch) -> None:  # type: ignore[no-untyped-def]
    run = launch("--hitl", "off", "-n", "3")
    run.wait_for("Iteration 1/3")
    run.send("p")
    run.wait_for("P: paused")
    run.wait_for("status: paused", timeout=20)
    run.send("p")
    run.wait_for("P: resumed")
    assert run.finish() == 0
    assert "Iteration 2/3" in run.screen
    assert run.mode_restored()


def test_question_answered_by_number(launch, project: Path) -> None:  # type: ignore[no-untyped-def]
    run = launch("-n", "4")
    run.wait_for("Which approach should the next stage take?")
    run.send("2\r")
    assert run.finish() == 0
    answers = json.loads((project / ".kilocode-loop" / "answers.json").read_text())
    assert answers["answers"][0]["answer"] == "Refactor into smaller modules"
    assert run.mode_restored()


def test_q_stops_now(launch) -> None:  # type: ignore[no-untyped-def]
    run = launch("--hitl", "off")
    run.wait_for("▸ Read")
    run.send("q")
    assert run.finish() == 2
    assert "Q: stopping now" in run.screen and "run aborted" in run.screen
    assert run.mode_restored()


def test_x_aborts_after_the_current_session(launch) -> None:  # type: ignore[no-untyped-def]
    run = launch("--hitl", "off")
    run.wait_for("Iteration 1/")
    run.send("x")
    assert run.finish() == 2
    assert "Iteration 2/" not in run.screen and "aborted after the session" in run.screen


def test_s_toggles_shared_context_and_help(launch, project: Path) -> None:  # type: ignore[no-untyped-def]
    run = launch("--hitl", "off", "-n", "3")
    run.wait_for("Iteration 1/")
    run.send("?")
    run.wait_for("X abort after this session")
    run.send("s")
    run.wait_for("S: context from the next iteration: one shared session")
    assert run.finish() == 0
    state_files = list((project / ".kilocode-loop" / "runs").glob("*/state.json"))
    assert json.loads(state_files[0].read_text())["sharedContext"] is True


def test_ctrl_c_once_stops_and_restores_terminal(launch) -> None:  # type: ignore[no-untyped-def]
    run = launch("--hitl", "off")
    run.wait_for("▸ Read")
    run.ctrl_c()
    assert run.finish() == 2
    assert "Ctrl+C: stopping the run" in run.screen
    assert run.mode_restored()


def test_ctrl_c_twice_force_exits(launch) -> None:  # type: ignore[no-untyped-def]
    run = launch("--hitl", "off")
    run.wait_for("Iteration 1/")
    run.send("p")
    run.wait_for("status: paused", timeout=20)
    run.ctrl_c()
    run.wait_for("Ctrl+C: stopping")
    run.ctrl_c()
    # 130: forced exit; 2: the first Ctrl+C had already finished the run; -2: the second one landed
    # while the interpreter was shutting down (Python resets handlers to SIG_DFL then).
    assert run.finish(timeout=10) in (2, 130, -2)
    assert run.mode_restored()


def _preflight(project: Path, *extra: str) -> PtyRun:
    return PtyRun(["--dry-run", "--goal", GOAL, "--no-dashboard", "--hitl", "off", *extra], project)


def test_preflight_enter_starts_the_run(project: Path) -> None:
    run = _preflight(project)
    try:
        screen = run.wait_for("Start this run? [Y/n]")
        for needle in ("About to run", "Tidy the README", "Iterations", "fresh session per iteration",
                       "on-question" if False else "HITL", "dry run", "1. [ ] Audit the README"):
            assert needle in screen, needle
        run.send("\r")
        assert run.finish() == 0
        assert (project / ".kilocode-loop" / "runs").is_dir()
    finally:
        run.close()


def test_preflight_cancel_creates_nothing(project: Path) -> None:
    run = _preflight(project)
    try:
        run.wait_for("Start this run? [Y/n]")
        run.send("n\r")
        assert run.finish() == 2
        assert "Cancelled: nothing was started." in run.screen
        assert not (project / ".kilocode-loop").exists()
    finally:
        run.close()


def test_preflight_skipped_by_config(project: Path) -> None:
    (project / ".kilocode-loop").mkdir()
    (project / ".kilocode-loop" / "config.json").write_text('{"confirm": false}')
    run = _preflight(project, "-n", "1")
    try:
        run.finish()
        assert "Start this run?" not in run.screen and "Iteration 1/1" in run.screen
    finally:
        run.close()
