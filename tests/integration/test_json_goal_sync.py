"""JSON goals remember which stages passed: through the real CLI with the scripted fake `kilo`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.integration.loop_harness import FakeKilo, done_iteration, run_loop

GOAL = """{
  "title": "Two JSON stages",
  "stages": [
    { "id": "first", "title": "First stage" },
    {
      "id": "second",
      "title": "Second stage",
      "verify": "true"
    }
  ]
}
"""


def list_goals(project: Path, fake: FakeKilo) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kilo_loop", "-C", str(project), "--list-goals"],
        check=False, capture_output=True, text=True, env=fake.env([]), timeout=60, cwd=project,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def write_goal(project: Path) -> Path:
    path = project / ".kilocode-loop" / "goals" / "two.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(GOAL)
    return path


def test_a_json_goal_run_twice_does_its_stages_once(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    scenario = [done_iteration("first", "a.txt"), done_iteration("second", "b.txt")]
    first = run_loop(fake, project, scenario, "--goal", str(goal), "-n", "4")
    assert first.proc.returncode == 0, first.proc.stderr + first.proc.stdout
    assert len(first.calls) == 2
    assert goal.read_text() == GOAL.replace(
        '"title": "First stage" }', '"title": "First stage", "done": true }'
    ).replace('"verify": "true"\n', '"verify": "true",\n      "done": true\n')
    assert "[ 2/2 100%] json" in list_goals(project, fake)

    again = run_loop(fake, project, scenario, "--goal", str(goal), "-n", "4")
    assert again.proc.returncode == 0
    assert "already done" in again.proc.stdout
    assert len(again.calls) == 2  # no new agent session: no tokens spent again


def test_no_sync_goal_leaves_the_json_file_alone(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    scenario = [done_iteration("first", "a.txt"), done_iteration("second", "b.txt")]
    run = run_loop(fake, project, scenario, "--goal", str(goal), "-n", "4", "--no-sync-goal")
    assert run.proc.returncode == 0, run.proc.stderr
    assert run.state()["completedStages"] == ["first", "second"]
    assert goal.read_text() == GOAL
    assert "[ 0/2   0%] json" in list_goals(project, fake)


def test_a_goal_broken_mid_run_is_left_as_it_is_with_a_warning(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    broken = GOAL.replace('"First stage" }', '"First stage" ')  # the user is mid-edit
    breaker = {"write": str(goal), "text": broken}
    scenario = [[*done_iteration("first", "a.txt")[:-1], breaker, done_iteration("first")[-1]]]
    run = run_loop(fake, project, scenario, "--goal", str(goal), "-n", "1")
    assert goal.read_text() == broken
    assert "could not tick 'First stage'" in run.proc.stdout + run.proc.stderr
