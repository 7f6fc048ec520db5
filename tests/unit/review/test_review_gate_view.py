"""What the gate shows: one summary per reviewer (those who found nothing included), and a recheck
gate that says it is a recheck, not a loop exit."""

from __future__ import annotations

from kilo_loop.review.findings import Finding, ReviewReport, parse_review
from kilo_loop.review.gate import gate_rows
from kilo_loop.review.gate_view import gate_label, gate_listing, reviewer_line, reviewer_summaries
from kilo_loop.run.state import ReviewRoleRun

BUG = Finding(role="code", title="off by one", severity="high", file="src/a.py", line=3)
NIT = Finding(role="code", title="naming", severity="low")
LEAK = Finding(role="security", title="token in log", severity="medium")


def _wave() -> list[ReviewReport]:
    return [ReviewReport("code", "block", (BUG, NIT), summary="Read the diff; one real bug."),
            ReviewReport("test", "pass"),
            ReviewReport("security", "pass", (LEAK,))]


def test_one_summary_per_reviewer_including_those_who_found_nothing() -> None:
    usages = [ReviewRoleRun(role="code", tokens=900, cost=0.01), ReviewRoleRun(role="test", tokens=500, cost=0.005)]
    entries = reviewer_summaries(_wave(), usages)
    assert [e["role"] for e in entries] == ["code", "test", "security"]
    code, test, security = entries
    assert (code["findings"], code["blocking"], code["severities"]) == (2, 1, "1 high, 1 low")
    assert test["findings"] == 0 and test["verdict"] == "pass"
    assert security["blocking"] == 0  # security findings wait at the gate, they never count
    assert reviewer_line(test) == "test reviewer: pass — no findings · 500 tokens $0.0050"
    assert reviewer_line(code).endswith("1 blocking · 900 tokens $0.0100 — Read the diff; one real bug.")
    assert "tokens" not in reviewer_line(security)  # it did not run in the rounds given


def test_a_seed_reviewer_that_blocks_without_a_finding_shows_no_phantom_row() -> None:
    entry = reviewer_summaries([ReviewReport("reviewer", "block")], [])[0]
    assert entry["findings"] == 0 and entry["blocking"] == 1 and entry["label"] == "reviewer"


def test_a_recheck_gate_is_labelled_a_recheck() -> None:
    assert gate_label("exhausted", (2, 1)) == "loop exit: exhausted"
    assert gate_label("recheck", (1,)) == "recheck after the fix pass: 1 new finding"
    assert "loop exit" not in gate_listing("Stage", "recheck", (2,), [], [])


def test_a_clean_gate_continues_with_one_enter() -> None:
    reports = [ReviewReport("code", "pass"), ReviewReport("security", "pass")]
    listing = gate_listing("Add it", "clean", (0,), reviewer_summaries(reports, []), gate_rows(reports))
    assert "(loop exit: clean)" in listing and "Press Enter to continue" in listing
    assert "code reviewer: pass — no findings" in listing and "security reviewer: pass — no findings" in listing


def test_the_listing_numbers_every_row() -> None:
    reports = _wave()
    listing = gate_listing("S", "exhausted", (2, 1), reviewer_summaries(reports, []), gate_rows(reports))
    assert "  1. " in listing and "  3. " in listing and "token in log" in listing


def test_the_reviewer_summary_sentence_is_read_and_clipped_to_one_line() -> None:
    report = parse_review('{"verdict": "pass", "summary": "Checked  the\\n diff.", "findings": []}', "code")
    assert report.summary == "Checked the diff."
    assert parse_review('{"verdict": "pass", "summary": 3}', "code").summary == ""


def test_the_gate_shows_what_the_tamper_check_said() -> None:
    line = "found now (--tamper warn, not blocked): tests/test_a.py [deleted-test-file] test file deleted"
    listing = gate_listing("S", "clean", (0,), [], [], [line])
    assert "Test tampering (the loop's own check):" in listing and f"    {line}" in listing
    assert "tampering" not in gate_listing("S", "clean", (0,), [], [])
