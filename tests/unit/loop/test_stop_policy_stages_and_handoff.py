"""The pieces split out of the orchestrator, each without a loop: the stop policy, the stage
book, the handoff store, the notices, and a guard that cannot default to allow."""

from __future__ import annotations

from pathlib import Path

from kilo_loop.goal.model import Goal, Stage
from kilo_loop.guard.runtime import GuardDecision
from kilo_loop.loop.handoff import HandoffStore
from kilo_loop.loop.stages import StageBook
from kilo_loop.loop.stop_policy import Limits, budget_reason, guard_reason, next_stale_count, stale_reason
from kilo_loop.run.events import GuardBlocked, RunFinished, StatusChanged, TextOut, VerifyFinished, Warned
from kilo_loop.run.guard_decision import checked
from kilo_loop.run.notices import notice_for
from kilo_loop.run.state import Question, RunState, StageState, Totals


def test_budget_reason() -> None:
    assert budget_reason(Limits(), Totals(cost=99, tokens=10**9)) is None
    assert "max-cost" in (budget_reason(Limits(max_cost=1.0), Totals(cost=1.0)) or "")
    assert budget_reason(Limits(max_cost=1.0), Totals(cost=0.99)) is None
    assert "max-tokens" in (budget_reason(Limits(max_tokens=100), Totals(tokens=100)) or "")


def test_stale_policy() -> None:
    assert next_stale_count(2, changed_files=True, advanced=False) == 0
    assert next_stale_count(2, changed_files=False, advanced=True) == 0
    assert next_stale_count(2, changed_files=False, advanced=False) == 3
    limits = Limits(max_stale_iterations=3)
    assert stale_reason(limits, 2, stages_left=True) is None
    assert stale_reason(limits, 3, stages_left=True)
    assert stale_reason(limits, 3, stages_left=False) is None
    assert stale_reason(Limits(max_stale_iterations=None), 99, stages_left=True) is None


def test_guard_policy() -> None:
    assert guard_reason(Limits(max_guard_blocks=3), 2, "x") is None
    assert "max-guard-blocks" in (guard_reason(Limits(max_guard_blocks=3), 3, "x") or "")
    assert "--guard-stop" in (guard_reason(Limits(guard_stop=True), 1, "force push") or "")


def test_stage_book_reads_the_state() -> None:
    goal = Goal(title="G", stages=[Stage(id="a", title="A", done=True), Stage(id="b", title="B", verify="make"),
                                   Stage(id="c", title="C")], verify="make all")
    book = StageBook(goal)
    state = RunState(run_id="r", project="/p", goal_title="G", completed_stages=["b"])
    assert book.next_stage(state) == goal.stages[2] and book.open_count(state) == 1
    assert book.completed(state) == {"a", "b"}
    assert book.verify_command(goal.stages[1], "x") == "make" and book.verify_command(goal.stages[2], None) == "make all"


def test_handoff_store_moves_the_packet_into_the_run(tmp_path: Path) -> None:
    agent, pending = tmp_path / "project-handoff.md", tmp_path / "run" / "handoff-pending.md"
    store = HandoffStore(agent, pending, lambda text: text.replace("sk-secret", "[REDACTED]"))
    assert not store.collect() and store.take() is None
    agent.write_text("# Handoff\n- key sk-secret\n")
    assert store.collect() and not agent.exists() and pending.is_file()
    assert "[REDACTED]" in pending.read_text()  # nothing unredacted lands in the run directory
    assert store.take() == "# Handoff\n- key [REDACTED]" and not pending.exists()
    store.put("# Synthesized\n")
    agent.write_text("left by a shared session\n")
    store.drop_agent_file()
    assert not agent.exists() and store.take() == "# Synthesized"
    agent.write_text("line\n" * 500)
    taken = store.take()
    assert taken is not None and taken.count("\n") <= 121  # clipped to the prompt's budget


def test_a_guard_answer_that_is_not_a_decision_denies() -> None:
    allow = GuardDecision("allow", None, "fine")
    assert checked(allow) is allow
    for wrong in (None, object(), {"decision": "allow"}, "allow"):
        decision = checked(wrong)
        assert decision.denied and decision.rule == "guard-miswired"


def test_notices_follow_events() -> None:
    state = RunState(run_id="r", project="/p", goal_title="Goal", iteration=2,
                     stages=[StageState(id="s1", title="First")],
                     pending_questions=[Question(question="DB?")], stop_reason="all stages done")
    cases = {
        "model-retry": Warned(message="w", about="retry", reason="ECONNRESET", attempt=1),
        "verify-failed": VerifyFinished(passed=False, exit_code=2, stage_id="s1", command="make"),
        "guard": GuardBlocked(rule="r", reason="force push"),
        "question": StatusChanged(status="waiting-answer"),
        "budget": StatusChanged(status="stopped-budget", reason="cost"),
        "stalled": StatusChanged(status="stalled", reason="stale"),
        "run-done": RunFinished(status="done"),
    }
    for kind, event in cases.items():
        notice = notice_for(event, state)
        assert notice is not None and notice.event == kind and notice.title.endswith("— Goal"), kind
    assert "Verify failed: First" in notice_for(cases["verify-failed"], state).title  # type: ignore[union-attr]
    assert notice_for(TextOut(message="hi"), state) is None
    assert notice_for(StatusChanged(status="running"), state) is None
