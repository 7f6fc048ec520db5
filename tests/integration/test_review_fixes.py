"""Regressions found in review: runs that must not hang, stop or mis-count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson

from kilo_loop.goal.model import Goal, Stage
from kilo_loop.loop.orchestrator import resume_command
from kilo_loop.loop.prompt import PromptInput, build_prompt, clip_handoff
from kilo_loop.run.state import Answer
from kilo_loop.session.workspace import snapshot_worktree
from kilo_loop.settings import Settings
from tests.integration.loop_harness import FakeKilo, done_iteration, progress, run_loop, step, text
from tests.integration.test_loop import write_goal


def test_no_wait_for_an_answer_when_no_iteration_follows(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only\n")
    env = fake.env([done_iteration("stage-1", "a")])
    command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "-p", "0",
               "--goal", str(goal), "--hitl", "always", "-n", "1"]
    proc = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=60)  # the dashboard is up: an answer channel exists
    finally:
        proc.kill()
    assert proc.returncode == 0, out


def test_budget_reached_on_the_final_step_keeps_the_finished_stage(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    run = run_loop(fake, project, [[text("a"), {"write": "a", "text": "a"}, progress("stage-1"), step(total=5000)]],
                   "--goal", str(goal), "--max-tokens", "4000")
    assert run.proc.returncode == 3
    assert run.state()["completedStages"] == ["stage-1"]


def test_verify_output_does_not_hide_a_stall(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only :: verify: date > coverage.xml; false\n")
    idle = [text("done, honest"), progress("stage-1"), step()]
    run = run_loop(fake, project, [idle], "--goal", str(goal), "-n", "6", "--max-stale-iterations", "2")
    assert run.proc.returncode == 4, run.proc.stdout
    assert len(run.calls) == 2


def test_non_utf8_file_names_are_reported_not_fatal(project: Path) -> None:
    fd = os.open(os.fsencode(str(project)) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY)
    os.close(fd)
    snapshot = snapshot_worktree(project)
    assert "caf\ufffd.txt" in snapshot
    orjson.dumps(sorted(snapshot))  # JSON-safe


def test_resume_command_is_shell_safe_and_keeps_dry_run() -> None:
    settings = Settings(goal_text="fix it's broken", dry_run=True)
    assert resume_command(settings, "r1") == "kilo-loop --goal-text 'fix it'\"'\"'s broken' --dry-run --resume r1"


def test_newest_answers_survive_clipping_and_handoff_is_capped() -> None:
    answers = [Answer(question=f"question {i}?", answer="x" * 200) for i in range(60)]
    goal = Goal(title="g", stages=[Stage(id="s", title="t")])
    prompt = build_prompt(PromptInput(goal=goal, stage=goal.stages[0], iteration=1, max_iterations=1,
                                      completed=set(), answers=answers))
    assert "question 59?" in prompt and "earlier answer(s) omitted" in prompt
    assert len(clip_handoff("y" * 200_000)) < 17_000


def test_interrupted_resume_resets_stop_counters(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    idle = [text("thinking"), progress("stage-1", "in_progress"), step()]
    first = run_loop(fake, project, [idle], "--goal", str(goal), "--max-stale-iterations", "2", "--run-id", "st")
    assert first.proc.returncode == 4
    fake.log.unlink()  # the fake agent numbers its calls from this log
    again = run_loop(fake, project, [done_iteration("stage-1", "a"), done_iteration("stage-2", "b")],
                     "--goal", str(goal), "--resume", "st", "--max-stale-iterations", "2")
    assert again.proc.returncode == 0, again.proc.stdout
    assert json.loads((project / ".kilocode-loop" / "runs" / "st" / "state.json").read_text())["status"] == "done"
