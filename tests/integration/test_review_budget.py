"""The review's retry budget holds without an operator (issue 27 item 1): with no terminal and no
dashboard, a reviewer that never lets the stage pass costs at most budget + 1 review rounds for the
whole run; the stage is held with its findings in report.md, the run moves on to the next stage, and
`--resume` grants no new budget. Real CLI, scripted fake agent, real temporary git repo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.loop_harness import FakeKilo, done_iteration, run_loop
from tests.integration.test_review_loop import implement, review

TWO_STAGES = ("# Budget\n\n- [ ] Add the feature :: verify: test -f feature.txt\n"
              "- [ ] Write the notes :: verify: test -f notes.txt\n")


def bug(n: int) -> dict[str, Any]:
    return {"severity": "high", "file": "feature.txt", "line": n, "title": f"bug number {n}"}


def review_sessions(calls: list[dict[str, Any]]) -> int:
    return sum(1 for call in calls if call["review"])


def test_a_spent_budget_holds_the_stage_for_the_whole_run_and_its_resumes(project: Path, fake: FakeKilo) -> None:
    (project / "plan.md").write_text(TWO_STAGES)
    # The reviewer blocks every round of stage 1 (three findings, then two, then one: never thrash,
    # so the budget is what ends it); the script's last entry repeats, so any extra round would block too.
    always_blocks = review("block", bug(1))
    scenario = [implement(), review("block", bug(1), bug(2), bug(3)),
                implement("b\n"), review("block", bug(1), bug(2)),
                implement("c\n"), review("block", bug(1)),
                done_iteration("stage-2", "notes.txt"), review("pass"),
                implement("d\n"), always_blocks]
    args = ("--goal", "plan.md", "--review", "--review-retries", "2", "--run-id", "held", "-n", "12")
    run = run_loop(fake, project, scenario, *args)

    assert run.proc.returncode == 1, run.proc.stdout + run.proc.stderr
    rounds = [(e["data"]["stage_id"], e["data"]["step"]) for e in run.events() if e["type"] == "review-round"]
    assert rounds == [("stage-1", "retry"), ("stage-1", "retry"), ("stage-1", "exhausted"), ("stage-2", "clean")]
    assert review_sessions(run.calls) == 3 + 1  # budget 2 + 1 rounds for stage 1, one for stage 2
    assert len(run.calls) == 8  # no implementer session on stage 1 after it was held
    state = run.state()
    assert state["status"] == "done-with-errors" and "held by the review (stage-1)" in state["stopReason"]
    held = state["reviewStages"]["stage-1"]
    assert held["held"] and held["retries"] == 2 and held["budget"] == 2 and held["rounds"] == 3
    assert state["completedStages"] == ["stage-2"] and "stage-1" in state["blockedStages"]
    report = (run.run_dir / "report.md").read_text()
    assert "## Held by the review" in report and "bug number 1 at feature.txt:1" in report
    assert "- [ ] Add the feature" in (project / "plan.md").read_text()

    resumed = subprocess.run(
        [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard", *args,
         "--resume", "held"],
        env=fake.env(scenario), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90, check=False)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert len(run.calls) == 8  # the resume ran no session at all: no new budget, no paid round
    state = json.loads((run.run_dir / "state.json").read_text())
    assert state["reviewStages"]["stage-1"]["held"] and "held by the review" in state["stopReason"]
    assert "bug number 1 at feature.txt:1" in (run.run_dir / "report.md").read_text()


def test_review_gate_off_holds_the_stage_even_with_a_terminal(project: Path, fake: FakeKilo) -> None:
    (project / "plan.md").write_text("# One\n\n- [ ] Add the feature :: verify: test -f feature.txt\n")
    scenario = [implement(), review("block", bug(1)), implement("b\n"), review("block", bug(1))]
    run = run_loop(fake, project, scenario, "--goal", "plan.md", "--review", "--review-gate", "off", "-n", "6",
                   stdin="all\n")
    assert run.proc.returncode == 1, run.proc.stdout + run.proc.stderr
    assert [e["data"]["step"] for e in run.events() if e["type"] == "review-round"] == ["retry", "thrash"]
    assert len(run.calls) == 4 and [e for e in run.events() if e["type"] == "review-held"]
