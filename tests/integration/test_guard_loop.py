"""The runtime guard, redaction and resume inside the loop, with the scripted fake kilo."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.integration.loop_harness import FakeKilo, bash, done_iteration, progress, run_loop, step, text
from tests.integration.test_loop import write_goal

PUSH = [text("shipping"), bash("bash -c 'git push origin main'"), {"sleep": 30}, step()]


def test_guard_hit_aborts_the_session_and_feeds_back(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only\n")
    started = time.monotonic()
    run = run_loop(fake, project, [PUSH, done_iteration("stage-1", "a", 100)], "--goal", str(goal))
    assert time.monotonic() - started < 25, "the guard must kill the session, not wait for it"
    assert run.proc.returncode == 0, run.proc.stdout
    assert "guard blocked" in run.proc.stdout
    assert "## Loop safety feedback" in run.prompt(2) and "git push" in run.prompt(2)
    first = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert first["outcome"] == "guard" and first["guardHits"] == 1
    config = json.loads(run.calls[0]["env_config"])
    rules = config["permission"]["bash"]
    assert next(iter(rules)) == "*" and rules["git push*"] == "deny"


def test_guard_stop_exits_5_and_resume_reinjects_the_note(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only\n")
    run = run_loop(fake, project, [PUSH], "--goal", str(goal), "--guard-stop", "--run-id", "g1")
    assert run.proc.returncode == 5, run.proc.stdout
    assert run.state()["status"] == "stopped-guard"
    assert "--resume g1" in run.proc.stdout
    resumed = run_loop(fake, project, [done_iteration("stage-1", "a", 100)], "--goal", str(goal), "--resume", "g1")
    assert resumed.proc.returncode == 0, resumed.proc.stdout
    assert "## Loop safety feedback" in resumed.prompt(2)


def test_consecutive_guard_blocks_stop_the_run(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only\n")
    run = run_loop(fake, project, [PUSH], "--goal", str(goal), "-n", "9", "--max-guard-blocks", "2")
    assert run.proc.returncode == 5 and len(run.calls) == 2


def test_no_guard_lets_it_through(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only\n")
    harmless = [text("x"), bash("git push --dry-run nowhere"), {"write": "a", "text": "a"}, progress("stage-1"),
                step()]
    run = run_loop(fake, project, [harmless], "--goal", str(goal), "--no-guard")
    assert run.proc.returncode == 0
    assert json.loads(run.calls[0]["env_config"]) == {"snapshot": False}  # no deny rules injected


def test_tokens_printed_by_the_agent_never_reach_disk(project: Path, fake: FakeKilo) -> None:
    token = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm" * 2
    goal = write_goal(project, "# One\n- [ ] Only\n")
    leaky = [text(f"found {token} and password=hunter2secret in .env"), bash(f"echo {token}"),
             {"write": "a", "text": "a"},
             progress("stage-1", summary=f"used {token}", questions=[]), step()]
    run = run_loop(fake, project, [leaky], "--goal", str(goal))
    assert run.proc.returncode == 0
    for path in (project / ".kilocode-loop").rglob("*"):
        if path.is_file() and path.name != "progress.json":  # the agent's own file is its business
            content = path.read_text(errors="replace")
            assert token not in content and "hunter2secret" not in content, path
    assert token not in run.proc.stdout and "ghp_[REDACTED]" in run.proc.stdout
    unredacted = run_loop(fake, project, [leaky], "--goal", str(goal), "--no-redact", "--force")
    assert token in unredacted.proc.stdout


def test_revert_cli_restores_a_loop_checkpoint(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    (project / "README.md").write_text("edited before the run\n")
    run = run_loop(fake, project, [done_iteration("stage-1", "a.txt"), done_iteration("stage-2", "b.txt")],
                   "--goal", str(goal), "--run-id", "rv")
    assert run.proc.returncode == 0
    env = fake.env([[]])
    import sys
    result = subprocess.run([sys.executable, "-m", "kilo_loop", "revert", "--run", "last", "--before", "2", "--yes",
                             "-C", str(project)], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()
    assert (project / "README.md").read_text() == "edited before the run\n"
