"""The review loop through the real CLI with the scripted fake agent, in real temporary git repos:
pass; block then fixed; thrash; exhausted; a security-only finding reaching the gate without a
retry; the gate's one fix pass and scoped recheck; resume mid-review and mid-fix-pass; protected files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.integration.loop_harness import FAKE_AGENT, FakeKilo, LoopRun, done_iteration, run_loop, step, text
from tests.integration.test_operator import Receiver

ONE_STAGE = "# Review me\n\n- [ ] Add the feature :: verify: test -f feature.txt :: acceptance: feature.txt exists\n"
BUG = {"severity": "high", "file": "feature.txt", "line": 1, "title": "the feature is wrong"}


def write_goal(project: Path, body: str = ONE_STAGE) -> Path:
    goal = project / "plan.md"
    goal.write_text(body)
    return goal


def implement(content: str = "feature\n", file: str = "feature.txt") -> list[dict[str, Any]]:
    return [text("implementing"), {"write": file, "text": content}, *done_iteration("stage-1")[1:]]


def review(verdict: str, *findings: dict[str, Any], questions: list[str] | None = None) -> list[dict[str, Any]]:
    return [text("reviewing"), {"review": {"verdict": verdict, "findings": list(findings),
                                           "questions": questions or []}}, step(total=500, cost=0.005)]


def wave(sessions: int = 3, **by_role: list[dict[str, Any]]) -> list[Any]:
    """One scenario entry per reviewer session; each session takes its own role's steps."""
    entry = {"by_role": {"code": review("pass"), "test": review("pass"), "security": review("pass"), **by_role}}
    return [entry] * sessions


def calls_made(fake: FakeKilo) -> int:
    return len(fake.log.read_text().splitlines()) if fake.log.exists() else 0


def kill_when(command: list[str], env: dict[str, str], ready: Callable[[], bool], stdin: str = "") -> None:
    """Start the loop, feed it `stdin`, and SIGKILL its process group once `ready()` (within 120 s)."""
    loop = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, text=True)
    assert loop.stdin is not None
    loop.stdin.write(stdin)
    loop.stdin.close()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not ready():
        time.sleep(0.2)
    os.killpg(loop.pid, signal.SIGKILL)
    loop.wait()


def loops_md(project: Path) -> str:
    path = project / ".kilocode-loop" / "ledger" / "loops.md"
    return path.read_text() if path.exists() else ""


def rounds(run: LoopRun) -> list[str]:
    return [e["data"]["step"] for e in run.events() if e["type"] == "review-round"]


def test_pass_archives_the_prompt_and_records_the_verdict(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    run = run_loop(fake, project, [implement(), review("pass")], "--goal", str(goal), "--review", "-n", "2")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    prompt = (run.run_dir / "iterations" / "01-review-prompt.md").read_text()
    assert "+feature" in prompt and "feature.txt exists" in prompt and ".kilocode-loop/review.json" in prompt
    report = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert report["review"]["verdict"] == "pass" and report["review"]["roles"][0]["tokens"] == 500
    assert "[x] Add the feature" in goal.read_text()
    assert run.state()["totals"]["cost"] == 0.015  # the reviewer's cost counts toward the run
    assert "| 1 | clean | pass | 0 | reviewer | 500 | $0.0050 |" in (run.run_dir / "report.md").read_text()
    assert "- reviewer: pass, 0 finding(s), 500 tokens" in (run.run_dir / "iterations" / "01-report.md").read_text()
    assert run.calls[1]["review"] == ".kilocode-loop/review.json"


def test_reviewer_cost_counts_toward_the_budget(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    run = run_loop(fake, project, [implement(), review("pass")], "--goal", str(goal), "--review",
                   "--max-cost", "0.012", "-n", "3")
    assert run.proc.returncode == 3, run.proc.stdout
    assert run.state()["status"] == "stopped-budget" and run.state()["totals"]["cost"] == 0.015
    assert not rounds(run)  # a round cut short by the budget is not judged
    assert "- [ ] Add the feature" in goal.read_text()


def test_block_then_fixed(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    run = run_loop(fake, project, [implement(), review("block", BUG, questions=["Keep the old name?"]),
                                   implement("fixed\n"), review("pass")],
                   "--goal", str(goal), "--review", "-n", "3", stdin="keep it\n")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    assert rounds(run) == ["retry", "clean"]
    second = run.prompt(2)
    assert "## Review findings to fix" in second and "the feature is wrong at feature.txt:1" in second
    assert "keep it" in second  # the reviewer's question went through HITL
    first = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert first["review"]["step"] == "retry" and first["review"]["verdict"] == "block"
    assert [e for e in run.events() if e["type"] == "review-block"]
    assert "[x] Add the feature" in goal.read_text()
    assert "## Loop State" not in loops_md(project) and "## Loop History" not in loops_md(project)


def test_review_block_and_gate_are_notified_with_each_reviewers_cost(project: Path, fake: FakeKilo) -> None:
    receiver = Receiver()
    try:
        goal = write_goal(project)
        run = run_loop(fake, project, [implement(), review("block", BUG), implement("b\n"), review("block", BUG)],
                       "--goal", str(goal), "--review", "-n", "2", "--notify", receiver.url, stdin="none\n")
    finally:
        receiver.server.shutdown()
    by_event = {body["event"]: body for body in receiver.bodies}
    assert {"review-block", "review-gate"} <= set(by_event), receiver.bodies
    assert "reviewer 500 tokens $0.0050" in by_event["review-block"]["text"]
    assert "1 finding(s) to decide (loop exit: thrash)" in by_event["review-gate"]["text"]
    assert run.proc.returncode == 0  # every finding deferred at the gate: the stage is done


def test_thrash_stops_the_loop_at_once(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    run = run_loop(fake, project, [implement(), review("block", BUG), implement("again\n"), review("block", BUG)],
                   "--goal", str(goal), "--review", "--review-retries", "3", "-n", "2")
    assert run.proc.returncode == 1
    assert rounds(run) == ["retry", "thrash"]
    assert "- [ ] Add the feature" in goal.read_text()
    ledger = loops_md(project)
    assert "- exit: thrash" in ledger and "round 1: 1, round 2: 1" in ledger and "## Loop State" not in ledger
    assert "gate has something to decide but no answer channel" in run.proc.stdout


def test_exhausted_when_the_budget_is_used(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    other = {**BUG, "line": 2, "title": "second bug"}
    run = run_loop(fake, project, [implement(), review("block", BUG, other), implement("b\n"), review("block", BUG)],
                   "--goal", str(goal), "--review", "-n", "2")
    assert rounds(run) == ["retry", "exhausted"]
    assert "- exit: exhausted" in loops_md(project)


def test_security_only_finding_reaches_the_gate_without_a_retry(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    leak = {"severity": "critical", "file": "feature.txt", "line": 1, "title": "token printed"}
    run = run_loop(fake, project, [implement(), *wave(security=review("block", leak))],
                   "--goal", str(goal), "--review-wave", "-n", "3", stdin="none\n")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    assert len(run.calls) == 4 and rounds(run) == ["clean"]
    gate = [e for e in run.events() if e["type"] == "review-gate"]
    assert gate and "token printed" in gate[0]["message"]
    assert [e for e in run.events() if e["type"] == "review-deferred"]
    for role in ("code", "test", "security"):
        assert (run.run_dir / "iterations" / f"01-review-{role}-prompt.md").is_file()


def test_gate_fix_pass_then_scoped_recheck(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    leak = {"severity": "medium", "file": "feature.txt", "line": 1, "title": "token printed"}
    nit = {"severity": "low", "file": "other.txt", "line": 3, "title": "naming"}
    scenario = [implement(), *wave(security=review("pass", leak), code=review("pass", nit)),
                implement("no token\n"), *wave(2)]
    run = run_loop(fake, project, scenario, "--goal", str(goal), "--review-wave", "-n", "3",
                   stdin="2 ; log less\n")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    assert "one fix pass" in run.prompt(2) and "token printed" in run.prompt(2) and "log less" in run.prompt(2)
    assert "naming" not in run.prompt(2)
    # the fix wrote feature.txt, named by the security row: only security (and code, for the change
    # request) recheck; the test reviewer is not called again
    rechecked = sorted(c["review"] for c in run.calls[5:])
    assert rechecked == [".kilocode-loop/review-code.json", ".kilocode-loop/review-security.json"]
    assert "the recheck found nothing new" in run.proc.stdout
    assert "[x] Add the feature" in goal.read_text()


def test_resume_continues_an_interrupted_review_loop(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    env = fake.env([implement(), review("block", BUG), [text("slow"), {"sleep": 20}],
                    implement("fixed\n"), review("pass")])
    command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard",
               "--goal", str(goal), "--review", "--run-id", "rv", "-n", "4"]
    # round 1 judged (ledger written), the fix session running
    kill_when(command, env, lambda: calls_made(fake) >= 3 and "## Loop State" in loops_md(project))
    assert "## Loop State" in loops_md(project) and "- run: rv" in loops_md(project)
    resumed = subprocess.run([*command, "--resume", "rv"], env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = [json.loads(line) for line in (project / ".kilocode-loop/runs/rv/events.jsonl").read_text().splitlines()]
    assert any(e["type"] == "review-resume" for e in events)
    assert [e["data"]["step"] for e in events if e["type"] == "review-round"] == ["retry", "clean"]
    assert "## Loop State" not in loops_md(project)


def test_a_leftover_loop_of_another_run_is_recorded_as_interrupted(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    ledger = project / ".kilocode-loop" / "ledger" / "loops.md"
    ledger.parent.mkdir(parents=True)
    ledger.write_text("# Review loops\n\n## Loop State\n- run: old\n- stage: stage-1\n- title: x\n- round: 1\n"
                      "- budget: 1\n- retries: 1\n- counts: 2\n- issues:\n  - (none)\n")
    run = run_loop(fake, project, [implement(), review("pass")], "--goal", str(goal), "--review", "-n", "1")
    assert run.proc.returncode == 0
    text_now = loops_md(project)
    assert "## Loop State" not in text_now and "- exit: interrupted" in text_now and "run old" in text_now


def test_protected_file_changed_blocks_the_stage(project: Path, fake: FakeKilo) -> None:
    (project / "tests").mkdir()
    (project / "tests" / "test_a.py").write_text("assert True\n")
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "tests"], cwd=project, check=True)
    goal = write_goal(project, "# P\n\n- [ ] Fix it :: protect: tests/**\n")
    cheat = implement("x\n", "tests/test_a.py")
    honest = [{"write": "tests/test_a.py", "text": "assert True\n"}, *implement("y\n", "src.txt")]
    run = run_loop(fake, project, [cheat, honest], "--goal", str(goal), "-n", "2")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    protected = [e for e in run.events() if e["type"] == "protected"]
    assert len(protected) == 1 and protected[0]["data"]["files"] == ["tests/test_a.py"]
    assert "Protected file changed: tests/test_a.py" in run.prompt(2)
    first = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert first["review"]["step"] == "protected"
    assert "[x] Fix it" in goal.read_text()  # put back as it was, the stage passes


def test_resume_continues_a_pending_gate_fix_pass(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    leak = {"severity": "medium", "file": "feature.txt", "line": 1, "title": "token printed"}
    env = fake.env([implement(), *wave(security=review("pass", leak)), [text("slow"), {"sleep": 20}],
                    implement("no token\n"), *wave(2)])
    command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard",
               "--goal", str(goal), "--review-wave", "--run-id", "rf", "-n", "4"]
    # the gate answered (its fix pass in the ledger), the fix session running
    kill_when(command, env, lambda: calls_made(fake) >= 5 and "- fix: pending" in loops_md(project),
              stdin="all ; log less\n")
    assert "- fix: pending" in loops_md(project) and "token printed" in loops_md(project)
    resumed = subprocess.run([*command, "--resume", "rf"], env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    run_dir = project / ".kilocode-loop/runs/rf"
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    resumed_at = next(i for i, e in enumerate(events) if e["type"] == "review-resume")
    assert "fix pass" in events[resumed_at]["message"]
    assert not [e for e in events[resumed_at:] if e["type"] == "review-round"]  # no review loop started anew
    last_prompt = sorted((run_dir / "iterations").glob("*-prompt.md"))
    fix_prompt = [p for p in last_prompt if "review" not in p.name][-1].read_text()
    assert "one fix pass" in fix_prompt and "token printed" in fix_prompt and "log less" in fix_prompt
    assert "the recheck found nothing new" in resumed.stdout
    assert (project / "feature.txt").read_text() == "no token\n"
    assert "## Loop State" not in loops_md(project)
    assert "[x] Add the feature" in goal.read_text()


def test_a_wave_role_runs_on_the_runtime_its_backend_names(project: Path, fake: FakeKilo, tmp_path: Path) -> None:
    """`"backend": "opencode"` for the security reviewer: the run (kilo) sets up opencode beside
    itself and that reviewer's session runs on it; the other reviewers stay on kilo."""
    goal = write_goal(project)
    (project / ".kilocode-loop").mkdir(exist_ok=True)
    (project / ".kilocode-loop" / "config.json").write_text(json.dumps(
        {"review": {"roles": ["code", {"role": "security", "backend": "opencode"}]}}))
    other = tmp_path / "opencode-fake"
    other.mkdir()
    (other / "scenario.json").write_text(json.dumps([review("pass")]))
    opencode = other / "opencode"
    opencode.write_text(f"#!/bin/sh\nFAKE_AGENT_SCENARIO='{other / 'scenario.json'}' "
                        f"FAKE_AGENT_LOG='{other / 'calls.jsonl'}' exec {sys.executable} {FAKE_AGENT} \"$@\"\n")
    opencode.chmod(0o755)
    run = run_loop(fake, project, [implement(), {"by_role": {"code": review("pass")}}], "--goal", str(goal),
                   "-n", "2", env={"OPENCODE_BIN": str(opencode)})
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    assert [c["review"] for c in run.calls] == [None, ".kilocode-loop/review-code.json"]
    on_opencode = [json.loads(line) for line in (other / "calls.jsonl").read_text().splitlines()]
    assert [c["review"] for c in on_opencode] == [".kilocode-loop/review-security.json"]
    assert "[x] Add the feature" in goal.read_text()


def test_a_wave_role_on_a_runtime_that_is_not_installed_stops_before_the_run(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    (project / ".kilocode-loop").mkdir(exist_ok=True)
    (project / ".kilocode-loop" / "config.json").write_text(json.dumps(
        {"review": {"roles": [{"role": "code", "backend": "gemini"}]}}))
    run = run_loop(fake, project, [implement()], "--goal", str(goal), "-n", "1",
                   env={"GEMINI_BIN": "/nonexistent/gemini"})
    assert run.proc.returncode == 2 and "agent CLI not found: /nonexistent/gemini" in run.proc.stderr
    assert not run.calls and not (project / ".kilocode-loop" / "runs").exists()
