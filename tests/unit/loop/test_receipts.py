"""A receipt per stage: what each stage took and how it was checked (pure, from the state)."""

from __future__ import annotations

from kilo_loop.run.receipts import stage_receipts
from kilo_loop.run.report import run_report_md
from kilo_loop.run.state import IterationSummary, RunState, StageState, VerifyResult


def state() -> RunState:
    verify_fail = VerifyResult(command="pytest -q", exit_code=1, passed=False)
    verify_pass = VerifyResult(command="pytest -q", exit_code=0, passed=True)
    return RunState(
        run_id="r1", project="/p", goal_title="Goal", status="done-with-errors",
        stages=[StageState(id="a", title="Alpha", status="done"), StageState(id="b", title="Beta", status="blocked"),
                StageState(id="c", title="Gamma")],
        iterations=[
            IterationSummary(iteration=1, stage_id="a", outcome="ok", tokens=1000, cost=0.01, duration_ms=30_000,
                             verify=verify_fail, retries=2,
                             tamper_findings=[{"file": "t.py", "line": 3, "rule": "skip-marker", "reason": "skip"}]),
            IterationSummary(iteration=2, stage_id="a", outcome="ok", tokens=500, cost=0.005, duration_ms=45_000,
                             verify=verify_pass),
            IterationSummary(iteration=3, stage_id="b", outcome="timeout", tokens=10, cost=0.001, duration_ms=600_000,
                             verify=VerifyResult(command="make", exit_code=None, passed=False, timed_out=True)),
            IterationSummary(iteration=4, stage_id="c", outcome="running", tokens=5),
            IterationSummary(iteration=5, stage_id=None, outcome="ok", tokens=7),
        ],
    )


def test_each_stage_sums_its_own_iterations() -> None:
    alpha, beta, gamma = (r.wire() for r in stage_receipts(state()))
    assert alpha == {
        "stageId": "a", "title": "Alpha", "status": "done", "iterations": 2, "iterationNumbers": [1, 2],
        "durationMs": 75_000, "tokens": 1500, "cost": 0.015, "retries": 2, "verify": "passed",
        "verifyCommand": "pytest -q", "review": "—", "tamperFindings": 1, "sameFailureStreak": 0, "sameFailureCost": 0.0,
        "oscillations": 0, "oscillationCost": 0.0, "sessionsEndedEarly": 0, "endedEarlyCost": 0.0,
        "savedTokens": 0, "savedCost": 0.0,
    }
    assert beta["verify"] == "timed out" and beta["iterations"] == 1 and beta["status"] == "blocked"
    assert gamma["iterations"] == 0 and gamma["tokens"] == 0 and gamma["verify"] == "—"  # running: not counted yet


def test_report_md_has_a_receipts_table() -> None:
    report = run_report_md(state())
    section = report.split("## Stage receipts", 1)[1].split("## Iterations", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0].startswith("| stage | status | iterations | duration | tokens | cost | retries | verify | review")
    assert rows[1] == "| Alpha | done | 2 | 1m 15s | 1500 | $0.0150 | 2 | passed | — |"
    assert rows[2] == "| Beta | blocked | 1 | 10m | 10 | $0.0010 | 0 | timed out | — |"
    assert rows[3] == "| Gamma | pending | 0 | 0s | 0 | $0.0000 | 0 | — | — |"


def test_going_in_circles_is_counted_per_stage_with_its_cost() -> None:
    from kilo_loop.run.circles import CircleMark

    items = [
        IterationSummary(iteration=1, stage_id="a", outcome="ok", cost=0.1, circles=CircleMark(same_failure_streak=1)),
        IterationSummary(iteration=2, stage_id="a", outcome="ok", cost=0.2, circles=CircleMark(same_failure_streak=2)),
        IterationSummary(iteration=3, stage_id="a", outcome="ok", cost=0.3,
                         circles=CircleMark(same_failure_streak=3, oscillation="the work tree came back")),
        IterationSummary(iteration=4, stage_id="b", outcome="ended-early", cost=0.05,
                         circles=CircleMark(ended_early="repeats", saved_tokens=900, saved_cost=0.4)),
    ]
    alpha, beta, _gamma = (r.wire() for r in stage_receipts(state(), items))
    assert (alpha["sameFailureStreak"], alpha["sameFailureCost"], alpha["oscillations"], alpha["oscillationCost"]) \
        == (3, 0.5, 1, 0.3)
    assert (beta["sessionsEndedEarly"], beta["endedEarlyCost"], beta["savedTokens"], beta["savedCost"]) \
        == (1, 0.05, 900, 0.4)
    report = run_report_md(state().model_copy(update={"iterations": items}))
    assert "| Alpha | 3 | $0.5000 | 1 | $0.3000 | 0 |" in report
