"""The blocking count exactly as seed 004 defines it, and the retry budget's three exits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kilo_loop.review.budget import ReviewLoop, decide, parse_large_answer, resolve_budget
from kilo_loop.review.count import blocking_count, blocking_findings, waiting_findings
from kilo_loop.review.findings import Finding, ReviewReport, malformed_report


def _report(role: str, *findings: Finding, verdict: str = "block") -> ReviewReport:
    return ReviewReport(role=role, verdict=verdict, findings=findings)  # type: ignore[arg-type]


def f(role: str, severity: str = "high", *, file: str | None = None, line: int | None = None,
      pre: bool = False, kind: str = "issue", title: str = "t") -> Finding:
    return Finding(role=role, title=title, severity=severity, file=file, line=line,  # type: ignore[arg-type]
                   pre_existing=pre, kind=kind)  # type: ignore[arg-type]


def test_code_counts_critical_and_high_minus_pre_existing() -> None:
    report = _report("code", f("code", "critical", title="a"), f("code", "high", title="b"),
                     f("code", "high", pre=True, title="c"), f("code", "medium", title="d"), f("code", "low", title="e"))
    assert blocking_count([report]) == 2


def test_test_counts_critical_high_and_every_acceptance_gap() -> None:
    report = _report("test", f("test", "high", title="a"), f("test", "low", kind="acceptance-gap", title="gap1"),
                     f("test", "medium", kind="acceptance-gap", title="gap2"), f("test", "medium", title="m"))
    assert blocking_count([report]) == 3


def test_security_and_coverage_never_count_but_wait_at_the_gate() -> None:
    security = _report("security", f("security", "critical", title="sqli"))
    test = _report("test", f("test", "critical", kind="coverage", title="coverage 40%"))
    assert blocking_count([security, test]) == 0
    assert [w.title for w in waiting_findings([security, test])] == ["sqli", "coverage 40%"]


def test_duplicates_across_reviewers_count_once() -> None:
    code = _report("code", f("code", file="a.py", line=3, title="off by one"))
    test = _report("test", f("test", file="a.py", line=3, title="boundary untested"))
    assert blocking_count([code, test]) == 1
    assert blocking_findings([code, test])[0].role == "code"


def test_malformed_output_counts_even_for_security() -> None:
    assert blocking_count([malformed_report("security", "wrote no review file")]) == 1


def test_seed_reviewer_block_without_blocking_findings_still_counts_once() -> None:
    block = _report("reviewer", f("reviewer", "medium", title="naming"))
    assert blocking_count([block]) == 1
    assert blocking_count([_report("reviewer", f("reviewer", "medium"), verdict="pass")]) == 0
    assert blocking_count([_report("reviewer", f("reviewer", "high", title="x"))]) == 1


# ------------------------------------------------------------------- the loop


def _run(budget: int, counts: list[int]) -> tuple[ReviewLoop, list[str]]:
    loop, steps = ReviewLoop("s1", budget), []
    for count in counts:
        loop, step = decide(loop, count)
        steps.append(step)
        if loop.finished:
            break
    return loop, steps


def test_clean_on_first_round() -> None:
    assert _run(1, [0])[1] == ["clean"]


def test_retry_then_clean() -> None:
    loop, steps = _run(2, [2, 1, 0])
    assert steps == ["retry", "retry", "clean"] and loop.retries == 2 and loop.exit == "clean"


def test_thrash_when_the_count_does_not_decrease() -> None:
    assert _run(3, [2, 2])[1] == ["retry", "thrash"]
    assert _run(3, [2, 3])[1] == ["retry", "thrash"]


def test_exhausted_when_the_budget_is_used() -> None:
    assert _run(1, [3, 2])[1] == ["retry", "exhausted"]


def test_manual_budget_goes_straight_to_the_gate() -> None:
    assert _run(0, [1])[1] == ["exhausted"]


def test_a_finished_loop_refuses_another_round() -> None:
    loop, _ = _run(1, [0])
    with pytest.raises(ValueError, match="already exited"):
        decide(loop, 0)


@given(st.integers(0, 3), st.lists(st.integers(0, 20), min_size=1, max_size=50))
def test_always_terminates_within_budget_plus_one_rounds(budget: int, counts: list[int]) -> None:
    loop = ReviewLoop("s", budget)
    rounds = 0
    for count in counts:
        loop, _ = decide(loop, count)
        rounds += 1
        if loop.finished:
            break
    assert rounds <= budget + 1
    assert loop.finished or rounds == len(counts)
    assert loop.retries <= budget


@given(st.integers(0, 3), st.lists(st.integers(0, 20), min_size=2, max_size=10))
def test_thrash_fires_exactly_when_the_count_does_not_decrease(budget: int, counts: list[int]) -> None:
    loop = ReviewLoop("s", budget)
    for index, count in enumerate(counts):
        loop, step = decide(loop, count)
        not_decreasing = index > 0 and 0 < count >= counts[index - 1]
        assert (step == "thrash") == not_decreasing
        if loop.finished:
            break


@given(st.integers(0, 3), st.lists(st.integers(1, 20), min_size=1, max_size=10))
def test_every_step_is_one_of_the_exits_or_a_retry(budget: int, counts: list[int]) -> None:
    loop = ReviewLoop("s", budget)
    for count in counts:
        loop, step = decide(loop, count)
        assert step in ("retry", "thrash", "exhausted")
        assert (step == "retry") == (not loop.finished)
        if loop.finished:
            break


@pytest.mark.parametrize(("size", "auto_fix", "cli", "large", "expected"), [
    (None, None, None, None, 1), ("small", None, None, None, 1), ("medium", None, None, None, 1),
    ("large", None, None, None, 0), ("large", None, None, 2, 2), ("large", 3, None, 1, 3),
    ("small", None, 0, None, 0), ("small", 2, 0, None, 2),
])
def test_budget_resolution(size: str | None, auto_fix: int | None, cli: int | None, large: int | None,
                           expected: int) -> None:
    assert resolve_budget(size, auto_fix, cli, large) == expected  # type: ignore[arg-type]


def test_budget_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="0 to 3"):
        resolve_budget(None, 4, None, None)


@pytest.mark.parametrize(("reply", "expected"), [
    ("", 0), ("manual", 0), ("auto 2", 2), ("auto", 1), ("3", 3), ("auto 2 retries", 2), ("auto 4", None),
    ("maybe", None), ("manual please", None),
])
def test_large_rework_reply(reply: str, expected: int | None) -> None:
    assert parse_large_answer(reply) == expected
