"""The large rework's loop-policy question: its cost estimate, the choices as the dashboard sends
them, and the Start question that takes a new retry budget."""

from __future__ import annotations

import pytest

from kilo_loop.goal.parse import parse_markdown_goal
from kilo_loop.review.budget import parse_large_answer
from kilo_loop.review.estimate import CostBasis, cost_basis, estimate_lines, estimate_text, sessions_for
from kilo_loop.review.loop_policy import CHOICES, needs_question, question_text
from kilo_loop.review.preflight import ask_large_budget
from kilo_loop.run.state import IterationSummary, ReviewRoleRun, ReviewRoundSummary, RunState
from kilo_loop.ui.preflight import ask_start


def _state(run_id: str, review_costs: list[float], implementer: float) -> RunState:
    roles = [ReviewRoleRun(role="code", cost=c) for c in review_costs]
    item = IterationSummary(iteration=1, session_id="ses_1", cost=implementer,
                            review=ReviewRoundSummary(roles=roles) if roles else None)
    return RunState(run_id=run_id, project="/p", goal_title="G", iterations=[item])


def test_a_budget_bounds_the_sessions_by_the_loops_own_rules() -> None:
    assert sessions_for(0, 3) == (3, 0)  # manual: one round of every role
    assert sessions_for(2, 3) == (11, 2)  # 3 rounds of 3, a final pass by at most 2, 2 implementer retries
    assert sessions_for(1, 1) == (2, 1)


def test_the_estimate_prices_each_choice_from_the_average_session() -> None:
    basis = cost_basis([("this run", _state("r2", [], 0.0)), ("the last run (r1)", _state("r1", [0.01, 0.03], 0.1))])
    assert basis == CostBasis(0.02, 0.1, "the last run (r1)")  # this run has no review yet: the last run's
    lines = estimate_lines(3, basis)
    assert lines[0] == "Manual (recommended): up to 3 reviewer sessions ≈ $0.0600"
    assert lines[3] == "Auto — 3 retries: up to 14 reviewer + 3 implementer sessions ≈ $0.5800"
    text = estimate_text(3, basis)
    assert text.startswith("Cost estimate (3 reviewer roles; average reviewer session $0.0200, implementer "
                           "session $0.1000, from the last run (r1)):")


def test_without_any_priced_session_the_estimate_gives_session_counts() -> None:
    text = estimate_text(1, cost_basis([]))
    assert "no review session has cost anything yet" in text and "$" not in text
    assert "Auto — 1 retry: up to 2 reviewer + 1 implementer sessions" in text


def test_the_question_carries_the_estimate_on_one_line_and_the_four_choices() -> None:
    goal = parse_markdown_goal("# G\n\n- [ ] Rework :: size: large\n")
    stage = goal.stages[0]
    text = question_text(stage, estimate_text(3, CostBasis(0.01, None, "this run")))
    assert "\n" not in text and "Rework" in text and "Manual (recommended): up to 3 reviewer sessions" in text
    assert CHOICES == ["Manual (recommended)", "Auto — 1 retry", "Auto — 2 retries", "Auto — 3 retries"]
    assert needs_question(stage, None, None)
    assert not needs_question(stage, 1, None) and not needs_question(stage, None, 0)


@pytest.mark.parametrize(("label", "budget"), list(zip(CHOICES, range(4), strict=True)))
def test_each_choice_label_is_a_valid_reply(label: str, budget: int) -> None:
    assert parse_large_answer(label) == budget


def test_the_terminal_menu_prints_the_estimate_before_the_choices() -> None:
    said: list[str] = []
    assert ask_large_budget(lambda _prompt: "auto 1", said.append, "Cost estimate (…)") == 1
    assert said[0] == "Cost estimate (…)" and "Manual (recommended)" in said[1]


@pytest.mark.parametrize(("reply", "review", "expected"), [
    ("", True, (True, None)), ("y", False, (True, None)), ("n", True, (False, None)),
    ("2", True, (True, 2)), ("retries 0", True, (True, 0)), ("4", True, (False, None)),
    ("2", False, (False, None)),
])
def test_the_start_question_takes_a_review_retry_budget(reply: str, review: bool,
                                                         expected: tuple[bool, int | None]) -> None:
    prompts: list[str] = []

    def read(prompt: str) -> str:
        prompts.append(prompt)
        return reply

    assert ask_start(read, review=review) == expected
    assert ("0-3 for the review retry budget" in prompts[0]) is review
