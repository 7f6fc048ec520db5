"""Review events: what the reducer makes of them, how they replay from the wire, what they notify."""

from __future__ import annotations

from kilo_loop.run.events import (
    ProtectedChanged,
    ReviewBlocked,
    ReviewGateClosed,
    ReviewGateOpened,
    ReviewRound,
    StateOpened,
    from_wire,
)
from kilo_loop.run.notices import notice_for
from kilo_loop.run.reducer import header_wire, reduce
from kilo_loop.run.state import ReviewGateState, RunState, StageState

BASE = RunState(run_id="r1", project="/p", goal_title="Auth",
                stages=[StageState(id="s1", title="Rate limit"), StageState(id="s2", title="Docs")])
GATE = ReviewGateState(stage_id="s1", stage_title="Rate limit", exit="thrash", counts=[2, 2],
                       rows=[{"id": "code:a.py:3", "role": "code", "title": "off by one"}], question="Review gate?")


def _start() -> RunState:
    return reduce(None, StateOpened(state=header_wire(BASE)))


def test_gate_opens_and_closes_in_the_state() -> None:
    state = reduce(_start(), ReviewGateOpened(message="gate", stage_id="s1", exit="thrash", rows=1, gate=GATE.wire()))
    assert state.review_gate == GATE
    assert reduce(state, ReviewGateClosed()).review_gate is None


def test_review_block_and_protected_block_the_stage() -> None:
    state = reduce(_start(), ReviewBlocked(message="blocked", stage_id="s1", count=2))
    assert state.blocked_stages == ["s1"] and state.stages[0].status == "blocked"
    state = reduce(state, ProtectedChanged(message="p", stage_id="s2", files=["tests/a.py"]))
    assert state.blocked_stages == ["s1", "s2"]


def test_review_events_replay_as_themselves() -> None:
    event = ReviewRound(message="round 1", stage_id="s1", count=2, step="retry", iteration=3, seq=9, ts="t")
    again = from_wire(event.to_wire())
    assert again == event


def test_notices() -> None:
    state = _start()
    block = notice_for(ReviewBlocked(message="review: 2 blocking", stage_id="s1", count=2,
                                     costs="code 500 tokens $0.0050"), state)
    assert block is not None and (block.event, block.title) == ("review-block", "Review blocked: Rate limit — Auth")
    assert block.text == "review: 2 blocking; code 500 tokens $0.0050"
    gate = notice_for(ReviewGateOpened(stage_id="s1", exit="thrash", rows=1, gate=GATE.wire()), state)
    assert gate is not None and gate.event == "review-gate" and "1 finding(s)" in gate.text
    protected = notice_for(ProtectedChanged(stage_id="s2", files=["tests/a.py"]), state)
    assert protected is not None and protected.text == "tests/a.py"
    assert notice_for(ReviewRound(stage_id="s1", count=1, step="retry"), state) is None
