"""The gate decision, the one fix pass, the scoped recheck, reviewer prompts, ledger and protect."""

from __future__ import annotations

import pytest

from kilo_loop.goal.model import Stage
from kilo_loop.goal.protect import ProtectError, compile_glob, protected_changes
from kilo_loop.review.budget import ReviewLoop
from kilo_loop.review.findings import Finding, ReviewReport
from kilo_loop.review.gate import (
    GateAnswer,
    GateReplyError,
    chosen_rows,
    fix_pass_feedback,
    gate_needed,
    gate_rows,
    new_findings,
    parse_gate_reply,
    recheck_roles,
    reply_from_marks,
    skip_is_quiet,
)
from kilo_loop.review.ledger import (
    history_entry,
    loop_from_record,
    read_fix,
    read_state,
    render_fix,
    render_state,
    resume_action,
    with_history,
    with_state,
)
from kilo_loop.review.prompt import ReviewPromptInput, build_review_prompt, review_file
from kilo_loop.session.workspace import protected_between

CODE = Finding(role="code", title="off by one", file="src/a.py", line=3)
SEC = Finding(role="security", title="token in log", severity="medium", file="src/log.py", line=9)
TEST = Finding(role="test", title="no test for limit", kind="acceptance-gap")


def _reports(*findings: Finding, verdict: str = "pass") -> list[ReviewReport]:
    roles = dict.fromkeys(f.role for f in findings)
    return [ReviewReport(role=r, verdict=verdict, findings=tuple(f for f in findings if f.role == r))  # type: ignore[arg-type]
            for r in roles]


def test_the_gate_runs_however_the_loop_exits_and_off_opts_out() -> None:
    assert gate_needed("auto", "clean", True)  # a clean pass too: one keypress continues
    assert gate_needed("auto", "thrash", False)
    assert gate_needed("auto", "exhausted", False)
    assert gate_needed("always", "clean", True)
    assert not gate_needed("off", "clean", True) and not gate_needed("off", "exhausted", False)


def test_a_quiet_recheck_goes_on_unless_every_gate_is_wanted() -> None:
    assert not gate_needed("auto", "recheck", True)
    assert gate_needed("always", "recheck", True)
    assert gate_needed("auto", "recheck", False)  # new findings after the fix pass: the operator decides


def test_only_a_clean_auto_gate_is_skipped_without_a_warning() -> None:
    assert skip_is_quiet("auto", True)
    assert not skip_is_quiet("auto", False) and not skip_is_quiet("always", True)


def test_typed_reply_picks_rows_and_a_change_request() -> None:
    rows = gate_rows(_reports(CODE, SEC))
    answer = parse_gate_reply("2 ; also rename the logger", rows)
    assert answer == GateAnswer((SEC.row_id,), "also rename the logger")
    assert parse_gate_reply("all", rows).mitigate == (CODE.row_id, SEC.row_id)
    assert not parse_gate_reply("", rows).asks_for_fix
    assert parse_gate_reply("; only this", rows).asks_for_fix
    with pytest.raises(GateReplyError, match="from 1 to 2"):
        parse_gate_reply("3", rows)


def test_dashboard_marks_become_the_typed_reply() -> None:
    rows = gate_rows(_reports(CODE, SEC))
    ids = [r.row_id for r in rows]
    reply = reply_from_marks(ids, {CODE.row_id: "mitigate", SEC.row_id: "defer"}, " ")
    assert reply == "1" and parse_gate_reply(reply, rows) == GateAnswer((CODE.row_id,), "")
    reply = reply_from_marks(ids, {}, "rename;\n the logger")
    assert parse_gate_reply(reply, rows) == GateAnswer((), "rename; the logger")
    with pytest.raises(GateReplyError, match="unknown finding"):
        reply_from_marks(ids, {"nope": "mitigate"}, "")
    with pytest.raises(GateReplyError, match="use mitigate or defer"):
        reply_from_marks(ids, {CODE.row_id: "maybe"}, "")


def test_fix_pass_carries_every_chosen_row_and_the_request() -> None:
    rows = gate_rows(_reports(CODE, SEC, TEST))
    text = fix_pass_feedback(chosen_rows(rows, GateAnswer((CODE.row_id, TEST.row_id), "log less")), "log less")
    assert "off by one at src/a.py:3" in text and "[acceptance gap]" in text and "log less" in text
    assert "token in log" not in text


def test_recheck_is_scoped_to_rows_and_written_files() -> None:
    active = ["code", "test", "security"]
    assert recheck_roles([CODE, SEC], "", ["src/a.py"], active) == ["code"]
    assert recheck_roles([CODE, SEC], "", ["src/log.py", "src/a.py"], active) == ["code", "security"]
    assert recheck_roles([TEST], "", ["src/x.py"], active) == ["test"]  # a row without a file
    assert recheck_roles([CODE], "", [], active) == []
    assert recheck_roles([], "rename it", ["tests/test_a.py"], active) == ["code", "test"]
    assert recheck_roles([], "rename it", ["src/a.py"], ["reviewer"]) == ["reviewer"]


def test_new_findings_are_those_no_earlier_report_named() -> None:
    before = _reports(CODE, SEC)
    moved = Finding(role="test", title="other words", file="src/a.py", line=3)
    fresh = Finding(role="code", title="new bug", file="src/b.py", line=1)
    assert new_findings(before, _reports(moved, fresh)) == [fresh]


# ------------------------------------------------------------------ prompts


def test_reviewer_prompt_has_stage_criteria_diff_verify_and_the_file_to_write() -> None:
    stage = Stage(id="s2", title="Rate limit /login", acceptance="429 after 5 tries")
    prompt = build_review_prompt(ReviewPromptInput(
        role="test", goal_title="Auth", stage=stage, diff="+limit = 5\n", verify_command="pytest -q",
        verify_output="3 passed", verify_passed_before=True, round=2, earlier=[TEST]))
    for needed in ("Rate limit /login", "429 after 5 tries", "+limit = 5", "pytest -q", "3 passed",
                   "Verify proves nothing here", "acceptanceGaps", review_file("test"), "no test for limit",
                   "do not edit"):
        assert needed in prompt
    seed = build_review_prompt(ReviewPromptInput(role="reviewer", goal_title="g", stage=stage, diff=""))
    assert ".kilocode-loop/review.json" in seed and "acceptanceGaps" not in seed
    assert "No verify command" in seed and "(empty:" in seed


def test_the_prompt_carries_what_the_tamper_check_said_only_when_it_said_something() -> None:
    stage = Stage(id="s1", title="Fix it")
    line = "iteration 2 was blocked: tests/test_a.py:4 [skip-marker] skip added: @pytest.mark.skip"
    prompt = build_review_prompt(ReviewPromptInput(role="test", goal_title="g", stage=stage, diff="", tamper=[line]))
    assert "Test tampering the loop found" in prompt and f"- {line}" in prompt
    assert "tampering" not in build_review_prompt(ReviewPromptInput(role="test", goal_title="g", stage=stage, diff=""))


# ------------------------------------------------------------------- ledger


def test_ledger_state_round_trips_and_is_deleted_on_exit() -> None:
    loop = ReviewLoop("s2", budget=2, counts=(3, 1), retries=2)
    text = with_state("", render_state("run-1", "s2", "Rate limit", loop, [CODE]))
    assert "## Loop State" in text and "off by one" in text
    record = read_state(text)
    assert record is not None and loop_from_record(record) == ReviewLoop("s2", 2, (3, 1), 2)
    assert resume_action(record, "run-1", ["s2"]) == "continue"
    assert resume_action(record, "run-2", ["s2"]) == "interrupted"
    assert resume_action(record, "run-1", ["s3"]) == "interrupted"
    gone = with_state(text, None)
    assert "## Loop State" not in gone and read_state(gone) is None


def test_history_entries_accumulate_beside_the_state() -> None:
    entry = history_entry("2026-11-30T22:00Z", "run-1", "s2", "Rate limit", "thrash", [2, 2], 1, 2)
    text = with_history(with_state("", render_state("run-1", "s2", "t", ReviewLoop("s2", 1), [])), entry)
    text = with_history(text, entry.replace("thrash", "interrupted"))
    assert text.count("### 2026-11-30T22:00Z") == 2 and "round 1: 2, round 2: 2" in text
    assert "- exit: interrupted" in text
    cleared = with_state(text, None)
    assert "## Loop History" in cleared and "## Loop State" not in cleared
    assert read_state("## Loop State\n- run: x\n- budget: two\n") is None


# ------------------------------------------------------------------ protect


@pytest.mark.parametrize(("pattern", "path", "hit"), [
    ("tests/**", "tests/unit/test_a.py", True), ("tests/**", "src/tests.py", False),
    ("tests/", "tests/a.py", True), ("verify.sh", "scripts/verify.sh", True), ("/verify.sh", "verify.sh", True),
    ("*.snap", "a/b/c.snap", True), ("src/*.py", "src/a/b.py", False), ("src/**/*.py", "src/a.py", True),
    (".github/workflows/*", ".github/workflows/ci.yml", True), ("a?c", "abc", True), ("a?c", "a/c", False),
])
def test_protect_globs(pattern: str, path: str, hit: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is hit


def test_protected_changes_between_snapshots() -> None:
    before = {"tests/test_a.py": (" M", 1, 10)}
    after = {"tests/test_a.py": (" M", 2, 12), "src/a.py": (" M", 2, 3), "tests/fixtures/x.json": ("??", 1, 1)}
    assert protected_between(["tests/**"], before, after) == ["tests/fixtures/x.json", "tests/test_a.py"]
    assert protected_changes([], ["tests/a.py"]) == []


@pytest.mark.parametrize("pattern", ["", "  ", "../x", "a/../../b"])
def test_bad_protect_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(ProtectError):
        compile_glob(pattern)


def test_a_pending_fix_pass_round_trips_through_the_ledger() -> None:
    rows = [Finding("security", "token printed", "medium", "feature.txt", 1, detail="a | b\nc", pre_existing=True),
            Finding("code", "naming", "low", "other.txt", None, kind="acceptance-gap")]
    section = render_fix("rv", "stage-1", "Add it", rows, [rows[0].row_id], 'log "less"')
    text = with_state("# Review loops\n", section)
    fix = read_fix(text)
    assert fix is not None and fix.run_id == "rv" and fix.stage_id == "stage-1"
    assert fix.rows == tuple(rows) and fix.chosen_rows == [rows[0]] and fix.change_request == 'log "less"'
    assert read_state(text) is None  # not a retry loop's record
    assert resume_action(fix, "rv", ["stage-1"]) == "continue" and resume_action(fix, "rv", []) == "interrupted"


@pytest.mark.parametrize("broken", ["- rows: [", "- rows: [1]", '- rows: [{"role": "x"}]'])
def test_an_unreadable_fix_pass_is_none(broken: str) -> None:
    text = f'## Loop State\n- run: r\n- stage: s\n- fix: pending\n- chosen: []\n{broken}\n'
    assert read_fix(text) is None
    assert read_fix("## Loop State\n- run: r\n- stage: s\n- round: 1\n") is None
