"""A stage's review loop lives in the run's state, written by the reducer from the review events: the
budget is the stage's for the whole run (a later loop starts with the retries already spent), a held
stage is blocked and skipped, and the state survives a snapshot and a resume."""

from __future__ import annotations

from kilo_loop.goal.parse import parse_markdown_goal
from kilo_loop.loop import stop_policy
from kilo_loop.loop.stages import StageBook
from kilo_loop.review.budget import decide, running_loop
from kilo_loop.run.events import ReviewHeld, ReviewRound, StateOpened
from kilo_loop.run.reducer import header_wire, reduce, replay
from kilo_loop.run.report import run_report_md
from kilo_loop.run.state import RunState, StageState
from kilo_loop.run.status import StopReason

FINDING = {"role": "reviewer", "title": "the feature is wrong", "severity": "high", "file": "a.py", "line": 3}


def opened() -> RunState:
    state = RunState(run_id="r", project="/p", goal_title="G",
                     stages=[StageState(id="stage-1", title="One"), StageState(id="stage-2", title="Two")])
    result = replay([StateOpened(state=header_wire(state))])
    assert result is not None
    return result


def rounds(state: RunState, *steps: tuple[int, str]) -> RunState:
    for count, step in steps:
        state = reduce(state, ReviewRound(stage_id="stage-1", count=count, step=step, budget=2))
    return state


def test_rounds_record_the_budget_retries_and_counts_of_the_loop() -> None:
    state = rounds(opened(), (3, "retry"), (2, "retry"))
    review = state.review_stages["stage-1"]
    assert (review.budget, review.retries, review.counts, review.rounds, review.exit) == (2, 2, [3, 2], 2, "")
    loop = running_loop("stage-1", review, budget=9)
    assert loop.budget == 2 and loop.counts == (3, 2) and loop.retries == 2
    _, step = decide(loop, 1)
    assert step == "exhausted"


def test_a_later_loop_of_the_stage_gets_no_fresh_budget() -> None:
    state = rounds(opened(), (3, "retry"), (2, "retry"), (1, "exhausted"))
    loop = running_loop("stage-1", state.review_stages["stage-1"], budget=2)
    assert loop.counts == () and loop.retries == 2
    _, step = decide(loop, 5)
    assert step == "exhausted"  # the first round of the new loop goes straight to the gate
    again = rounds(state, (5, "exhausted")).review_stages["stage-1"]
    assert again.counts == [5] and again.rounds == 4 and again.retries == 2


def test_a_held_stage_is_blocked_skipped_and_reported_with_its_findings() -> None:
    state = rounds(opened(), (1, "retry"), (1, "thrash"))
    state = reduce(state, ReviewHeld(stage_id="stage-1", exit="thrash", findings=[FINDING]))
    assert state.held_stages() == ["stage-1"] and state.blocked_stages == ["stage-1"]
    goal = parse_markdown_goal("# G\n\n- [ ] One\n- [ ] Two\n")
    book = StageBook(goal)
    nxt = book.next_stage(state)
    assert nxt is not None and nxt.id == "stage-2"
    assert stop_policy.no_stage_left(state)[0] is StopReason.DONE_WITH_ERRORS
    report = run_report_md(state)
    assert "## Held by the review" in report and "the feature is wrong at a.py:3" in report


def test_the_review_state_survives_the_snapshot_and_a_resume() -> None:
    state = rounds(opened(), (3, "retry"))
    saved = RunState.model_validate(state.snapshot())
    resumed = reduce(saved, StateOpened(state=header_wire(saved), resumed=True))
    assert resumed.review_stages == state.review_stages


def test_a_run_without_a_review_keeps_its_wire_shape() -> None:
    assert "reviewStages" not in opened().snapshot() and "reviewStages" not in header_wire(opened())


def test_rounds_recorded_before_the_budget_was_an_event_field_use_the_configured_budget() -> None:
    state = reduce(opened(), ReviewRound(stage_id="stage-1", count=2, step="retry"))
    loop = running_loop("stage-1", state.review_stages["stage-1"], budget=3)
    assert loop.budget == 3 and loop.retries == 1


def test_the_stage_baseline_is_the_runs_so_a_resume_diffs_since_the_stage_began() -> None:
    from kilo_loop.run.events import ReviewBaseline

    state = reduce(opened(), ReviewBaseline(stage_id="stage-1", tree="abc123", verify_passed=True))
    saved = RunState.model_validate(state.snapshot())
    resumed = reduce(saved, StateOpened(state=header_wire(saved), resumed=True))
    review = resumed.review_stages["stage-1"]
    assert review.base_tree == "abc123" and review.verify_before and not review.rounds
    assert running_loop("stage-1", review, budget=1).budget == 1
