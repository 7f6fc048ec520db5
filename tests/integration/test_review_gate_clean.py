"""The review gate however the loop exits (seed 004), through the real CLI with the scripted fake
agent: a clean pass shows the gate with one summary per reviewer and one Enter continues; with
nobody to answer it is skipped quietly; --answer-timeout lets a clean gate go on by itself; `off`
opts out. And the dry run's blocking reviewer rehearses retry, exhaustion, the gate and a recheck."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.integration.loop_harness import FakeKilo, LoopRun, run_loop
from tests.integration.test_init_command import Terminal
from tests.integration.test_review_loop import implement, review, wave, write_goal


def _gates(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [e for e in events if e["type"] == "review-gate"]


def test_a_clean_pass_shows_the_gate_and_one_enter_continues(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    terminal = Terminal([sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard",
                         "--goal", str(goal), "--review-wave", "-n", "2"], project,
                        fake.env([implement(), *wave(security=review("pass"))]))
    try:
        terminal.expect("Press Enter to continue")
        terminal.expect("type an answer")
        terminal.type("")  # the one keypress
        terminal.expect("run done")
    finally:
        assert _close(terminal) == 0, terminal.seen
    run = LoopRun(subprocess.CompletedProcess([], 0, terminal.seen, ""), project, fake.log)
    gates = _gates(run.events())
    assert len(gates) == 1 and gates[0]["data"]["exit"] == "clean"
    gate = gates[0]["data"]["gate"]
    assert [r["role"] for r in gate["reviewers"]] == ["code", "test", "security"]  # those who found nothing too
    assert all(r["findings"] == 0 and r["tokens"] == 500 for r in gate["reviewers"])
    assert "security reviewer: pass — no findings · 500 tokens $0.0050" in terminal.seen.replace("\r\n", "\n")
    report = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert report["review"]["gate"] == "resolved" and report["review"]["verdict"] == "pass"
    assert "[x] Add the feature" in goal.read_text()


def test_the_large_question_prints_its_estimate_and_the_start_box_takes_a_budget(project: Path,
                                                                                 fake: FakeKilo) -> None:
    goal = write_goal(project, "# Big\n\n- [ ] Rework it :: size: large :: verify: test -f feature.txt\n")
    terminal = Terminal([sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-dashboard",
                         "--goal", str(goal), "--review", "-n", "2"], project, fake.env([implement(), review("pass")]))
    try:
        terminal.expect("Auto — 3 retries: up to 4 reviewer + 3 implementer sessions")
        terminal.expect("Loop policy: reply manual, auto 1, auto 2 or auto 3")
        terminal.type("auto 2")
        terminal.expect("0-3 for the review retry budget")
        terminal.type("3")
        terminal.expect("Press Enter to continue", timeout=90)  # the clean pass's gate
        terminal.expect("type an answer")
        terminal.type("")
        terminal.expect("run done", timeout=90)
    finally:
        _close(terminal)
    seen = terminal.seen.replace("\r\n", "\n")
    estimate = seen.index("Cost estimate (1 reviewer role; no review session has cost anything yet")
    assert estimate < seen.index("A large rework: how many automatic review fix retries")
    assert "Review retry budget 3 for every stage without its own Auto-fix line" in seen
    report = next(project.glob(".kilocode-loop/runs/*/iterations/01-report.json"))
    assert json.loads(report.read_text())["review"]["budget"] == 3  # the Start reply wins over the large answer


def test_nobody_to_answer_a_clean_pass_goes_on_without_a_warning(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    run = run_loop(fake, project, [implement(), review("pass")], "--goal", str(goal), "--review", "-n", "2")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    assert not _gates(run.events()) and "no answer channel" not in run.proc.stdout
    assert json.loads((run.run_dir / "iterations" / "01-report.json").read_text())["review"]["gate"] == "skipped"


def test_the_answer_timeout_lets_a_clean_gate_go_on(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    # the dashboard is up (an answer channel) but nobody opens it
    run = run_loop(fake, project, [implement(), review("pass")], "--goal", str(goal), "--review", "-n", "2",
                   "--dashboard", "-p", "0", "--answer-timeout", "1s")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    assert len(_gates(run.events())) == 1 and "review gate: no answer within 1s; continuing" in run.proc.stdout
    assert json.loads((run.run_dir / "iterations" / "01-report.json").read_text())["review"]["gate"] == "timeout"
    assert "[x] Add the feature" in goal.read_text()


def test_review_gate_off_is_the_explicit_opt_out(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    run = run_loop(fake, project, [implement(), review("pass")], "--goal", str(goal), "--review", "-n", "2",
                   "--review-gate", "off", stdin="\n")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    assert not _gates(run.events())


def test_the_dry_run_rehearses_retry_exhaustion_the_gate_and_a_recheck(project: Path) -> None:
    goal = write_goal(project, "# Rehearse\n\n- [ ] Add the feature\n")
    proc = subprocess.run(
        [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard", "--dry-run",
         "--dry-run-review", "block", "--review", "--hitl", "on-question", "--goal", str(goal), "-n", "6"],
        input="keep it\nall\n", capture_output=True, text=True, timeout=120, cwd=project,
        env={**_env(), "KILO_LOOP_DRY_RUN_DELAY": "0"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "review round 1: 2 blocking → retry" in out and "review round 2: 1 blocking → exhausted" in out
    assert "Review gate — Add the feature (loop exit: exhausted)" in out
    assert "reviewer: block — 1 finding (1 high), 1 blocking" in out
    assert "recheck scoped to the fix: reviewer" in out and "the recheck found nothing new" in out
    assert "stage done: Add the feature" in out and "run done" in out


def test_the_dry_run_thrash_reviewer_stops_the_loop_at_once(project: Path) -> None:
    goal = write_goal(project, "# Rehearse\n\n- [ ] Add the feature\n")
    proc = subprocess.run(
        [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard", "--dry-run",
         "--dry-run-review", "thrash", "--review", "--hitl", "off", "--goal", str(goal), "-n", "3"],
        capture_output=True, text=True, timeout=120, cwd=project, stdin=subprocess.DEVNULL,
        env={**_env(), "KILO_LOOP_DRY_RUN_DELAY": "0"})
    assert "review round 1: 1 blocking → retry" in proc.stdout and "1 blocking → thrash" in proc.stdout


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("KILO_LOOP_")}


def _close(terminal: Terminal) -> int:
    """The loop's exit code; a loop still waiting after a failed expectation is killed, not left behind."""
    try:
        return terminal.close()
    except subprocess.TimeoutExpired:
        terminal.process.kill()
        terminal.process.wait()
        os.close(terminal.fd)
        raise


def test_the_large_question_is_answered_through_a_steered_runs_inbox(project: Path, fake: FakeKilo) -> None:
    """No terminal, no dashboard: a fleet worker's or a parallel plan's run takes the loop-policy
    answer (and the clean gate's) from its inbox instead of silently running on manual."""
    goal = write_goal(project, "# Big\n\n- [ ] Rework it :: size: large :: verify: test -f feature.txt\n")
    with (project.parent / "loop.log").open("w") as sink:
        loop = subprocess.Popen(
            [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard", "--goal",
             str(goal), "--review", "-n", "2"], cwd=project, stdin=subprocess.DEVNULL, stdout=sink,
            stderr=subprocess.STDOUT, env={**fake.env([implement(), review("pass")]), "KILO_LOOP_INBOX": "1"})
    try:
        for event_type, reply, answered in (("question", "Auto — 1 retry", "answer"),
                                            ("review-gate", "none", "review-gate-answer")):
            run_dir = _wait_for_event(project, loop, event_type)
            # Sent once, right after the question shows: the run follows its inbox from where it was
            # when it attached, so an answer that lands before its follower first runs still counts.
            with (run_dir / "inbox.jsonl").open("a") as inbox:
                inbox.write(json.dumps({"command": "answer", "answers": [reply]}) + "\n")
            _wait_for_event(project, loop, answered)
        loop.wait(90)
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.wait()
    out = (project.parent / "loop.log").read_text()
    assert loop.returncode == 0, out
    question = next(e for e in LoopRun(subprocess.CompletedProcess([], 0, out, ""), project, fake.log).events()
                    if e["type"] == "question")
    assert "Cost estimate (1 reviewer role" in question["data"]["question"]
    assert question["data"]["options"][1] == "Auto — 1 retry"
    report = next(project.glob(".kilocode-loop/runs/*/iterations/01-report.json"))
    assert json.loads(report.read_text())["review"]["budget"] == 1


def _wait_for_event(project: Path, loop: subprocess.Popen[bytes], event_type: str, within: float = 60.0) -> Path:
    """The run directory once its events.jsonl has an event of this type."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and loop.poll() is None:
        for events in project.glob(".kilocode-loop/runs/*/events.jsonl"):
            if any(json.loads(line)["type"] == event_type for line in events.read_text().splitlines() if line):
                return events.parent
        time.sleep(0.1)
    raise AssertionError(f"no {event_type} event (loop exit {loop.poll()}):\n"
                         + (project.parent / "loop.log").read_text(errors="replace")[-3000:])
