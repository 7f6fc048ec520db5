"""Verification gates, budgets, stall detection, retries and resume through the real CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.integration.loop_harness import (
    FakeKilo, done_iteration, error, progress, run_loop, step, text,
)
from tests.integration.test_loop import write_goal


def test_failing_verify_blocks_until_fixed(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Make ok.txt :: verify: grep -q fixed ok.txt\n")
    first = [text("try"), {"write": "ok.txt", "text": "broken\n"}, progress("stage-1"), step()]
    second = [text("fix"), {"write": "ok.txt", "text": "fixed\n"}, progress("stage-1"), step()]
    run = run_loop(fake, project, [first, second], "--goal", str(goal), "-n", "3")
    assert run.proc.returncode == 0, run.proc.stderr + run.proc.stdout
    first_report = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert first_report["verify"]["passed"] is False
    assert "Verify failed last iteration" in run.prompt(2) and "grep -q fixed ok.txt" in run.prompt(2)
    assert goal.read_text().startswith("# One\n- [x] Make ok.txt")
    assert run.state()["completedStages"] == ["stage-1"]


def test_global_verify_flag_and_blocked_goal_not_ticked(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only\n")
    run = run_loop(fake, project, [done_iteration("stage-1", "a")], "--goal", str(goal), "-n", "1",
                   "--verify", "echo nope; exit 3")
    assert run.proc.returncode == 1
    assert "- [ ] Only" in goal.read_text()
    state = run.state()
    assert state["stages"][0]["status"] == "blocked" and state["completedStages"] == []
    assert "nope" in state["iterations"][0]["verify"]["outputTail"]


def test_max_tokens_stops_with_budget_exit_3(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    big = [text("a"), {"write": "a", "text": "a"}, progress("stage-1"), step(total=5000)]
    run = run_loop(fake, project, [big, big], "--goal", str(goal), "--max-tokens", "4000")
    assert run.proc.returncode == 3, run.proc.stdout
    assert run.state()["status"] == "stopped-budget"
    assert "--resume" in run.proc.stdout


def test_max_cost_stops_with_budget_exit_3(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    run = run_loop(fake, project, [done_iteration("stage-1", "a")], "--goal", str(goal), "--max-cost", "0.005")
    assert run.proc.returncode == 3


def test_do_nothing_agent_stalls_with_exit_4(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    idle = [text("thinking about it"), progress("stage-1", "in_progress"), step()]
    run = run_loop(fake, project, [idle], "--goal", str(goal), "-n", "10", "--max-stale-iterations", "2")
    assert run.proc.returncode == 4, run.proc.stdout
    assert run.state()["status"] == "stalled" and len(run.calls) == 2


def test_transient_failure_is_retried_in_the_same_session(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only\n")
    flaky = [text("partial"), error("fetch failed: ECONNRESET"), {"exit": 1}]
    run = run_loop(fake, project, [flaky, done_iteration("stage-1", "a", 100)], "--goal", str(goal),
                   "--retry-delay", "10", "--retry-max-delay", "20")
    assert run.proc.returncode == 0, run.proc.stdout
    retry_argv = run.calls[1]["argv"]
    assert retry_argv[retry_argv.index("--session") + 1] == "ses_fake0000"
    report = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert report["retries"] == 1 and "ECONNRESET" in report["retryReason"]


def test_no_retry_and_non_transient_errors_are_not_retried(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only\n")
    flaky = [error("socket hang up"), {"exit": 1}]
    run = run_loop(fake, project, [flaky, done_iteration("stage-1", "a")], "--goal", str(goal), "-n", "1",
                   "--no-retry")
    assert len(run.calls) == 1 and run.proc.returncode == 1


def test_report_subcommand_reads_saved_runs(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only\n")
    run = run_loop(fake, project, [done_iteration("stage-1", "a")], "--goal", str(goal), "--run-id", "r1")
    assert run.proc.returncode == 0
    env = fake.env([[]])
    base = [sys.executable, "-m", "kilo_loop", "report"]
    md = subprocess.run([*base, "--last", "-C", str(project)], capture_output=True, text=True, env=env)
    assert md.returncode == 0 and md.stdout.startswith("# Run r1")
    as_json = subprocess.run([*base, "r1", "--json", "-C", str(project)], capture_output=True, text=True, env=env)
    as_data = json.loads(as_json.stdout)
    assert as_data["runId"] == "r1"
    assert [(r["title"], r["status"], r["iterations"]) for r in as_data["stageReceipts"]] == [("Only", "done", 1)]
    assert "## Stage receipts" in md.stdout and "| Only | done | 1 |" in md.stdout
    missing = subprocess.run([*base, "nope", "-C", str(project)], capture_output=True, text=True, env=env)
    assert missing.returncode == 1 and "no saved run" in missing.stderr


def test_kill_9_mid_iteration_then_resume_last_finishes(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    slow = [text("working"), {"write": "a", "text": "a"}, {"sleep": 30}]
    env = fake.env([slow, done_iteration("stage-1", "a"), done_iteration("stage-2", "b", 100)])
    command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard",
               "--goal", str(goal), "--run-id", "k9"]
    loop = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not fake.log.exists():
        time.sleep(0.1)
    time.sleep(1.0)
    loop.send_signal(signal.SIGKILL)
    loop.wait()
    subprocess.run(["pkill", "-9", "-f", "fake_agent.py"], check=False)
    resumed = subprocess.run([*command[:-2], "--resume", "last"], env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=90)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    state = json.loads((project / ".kilocode-loop" / "runs" / "k9" / "state.json").read_text())
    assert state["status"] == "done" and state["runId"] == "k9"
    assert state["iterations"][0]["outcome"] == "interrupted"
    assert [i["iteration"] for i in state["iterations"]] == [1, 2, 3]
