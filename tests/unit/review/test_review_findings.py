"""Reviewer output → report: the schema, the line format, and output that cannot be used."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kilo_loop.review.findings import Finding, finding_from_line, json_object_in_text, parse_review


def _doc(**fields: object) -> str:
    return json.dumps(fields)


def test_pass_without_findings() -> None:
    report = parse_review(_doc(verdict="pass", findings=[], questions=[]), "code")
    assert report.verdict == "pass" and report.findings == () and not report.malformed


def test_object_findings_keep_severity_location_and_pre_existing() -> None:
    raw = _doc(verdict="block", findings=[
        {"severity": "Critical", "file": "src/a.py", "line": 12, "title": "Off by one", "detail": "use <="},
        {"severity": "high", "location": "src/b.py:7", "title": "Pre-existing: slow loop"},
        {"severity": "low", "file": "src/c.py:3:9", "message": "naming", "preExisting": "yes"},
    ], questions=["Keep the old API?", {"question": "Which port?"}])
    report = parse_review(raw, "code")
    a, b, c = report.findings
    assert (a.severity, a.file, a.line, a.title, a.detail, a.pre_existing) == (
        "critical", "src/a.py", 12, "Off by one", "use <=", False)
    assert (b.file, b.line, b.title, b.pre_existing) == ("src/b.py", 7, "slow loop", True)
    assert (c.file, c.line, c.pre_existing) == ("src/c.py", 3, True)
    assert report.questions == ("Keep the old API?", "Which port?")
    assert report.verdict == "block"


def test_acceptance_gaps_become_findings_of_that_kind() -> None:
    raw = _doc(verdict="block", findings=[{"title": "coverage 61%", "kind": "coverage", "severity": "high"}],
               acceptanceGaps=["rate limit under concurrent requests", {"title": "error message", "severity": "low"}])
    report = parse_review(raw, "test")
    kinds = [f.kind for f in report.findings]
    assert kinds == ["coverage", "acceptance-gap", "acceptance-gap"]
    assert report.findings[1].title == "rate limit under concurrent requests"


@pytest.mark.parametrize(("line", "expected"), [
    ("high src/a.py:12 Pre-existing: the loop never ends",
     Finding(role="code", title="the loop never ends", severity="high", file="src/a.py", line=12, pre_existing=True)),
    ("[medium] docs/x.md:3 - typo", Finding(role="code", title="typo", severity="medium", file="docs/x.md", line=3)),
    ("The handler swallows errors", Finding(role="code", title="The handler swallows errors")),
    ("low: naming is unclear", Finding(role="code", title="naming is unclear", severity="low")),
])
def test_one_line_findings(line: str, expected: Finding) -> None:
    assert finding_from_line(line, "code") == expected


@pytest.mark.parametrize(("raw", "problem"), [
    (None, "wrote no review file"),
    ("", "wrote an empty review file"),
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not a JSON object"),
    (_doc(verdict="maybe"), "verdict must be"),
    (_doc(findings=[]), "verdict must be"),
])
def test_unusable_output_blocks_with_a_finding_saying_so(raw: str | None, problem: str) -> None:
    report = parse_review(raw, "security")
    assert report.verdict == "block" and report.malformed
    (finding,) = report.findings
    assert finding.kind == "malformed" and problem in finding.title
    assert problem in report.warnings[0] and "counted as block" in report.warnings[0]


def test_without_a_file_the_verdict_in_the_agents_text_is_used() -> None:
    text = 'I checked it.\n```json\n{"verdict": "block", "findings": ["high a.py:1 {braces} \\"quoted\\""]}\n```\n'
    report = parse_review(None, "reviewer", fallback_text=text)
    assert report.verdict == "block" and not report.malformed
    assert report.findings[0].title == '{braces} "quoted"'


def test_json_in_text_ignores_objects_without_a_verdict() -> None:
    assert json_object_in_text('{"a": 1} and {"b": {"c": 2}}') is None


def test_odd_fields_are_warned_about_not_fatal() -> None:
    raw = _doc(verdict="pass", findings=[42, {"severity": "urgent", "title": "x", "line": "7", "file": "a.py"},
                                          {"severity": "low"}], questions="why?")
    report = parse_review(raw, "code")
    (finding,) = report.findings
    assert finding.severity == "high" and finding.line == 7
    assert len(report.warnings) == 4


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["verdict", "findings", "questions", "acceptanceGaps", "severity", "file", "line",
                         "title", "location", "preExisting", "kind", "x"]), inner, max_size=6),
    max_leaves=25)


@given(_JSON)
def test_any_json_document_gives_a_report_never_an_exception(value: object) -> None:
    report = parse_review(json.dumps(value), "test")
    assert report.verdict in ("pass", "block")
    assert report.malformed == (not (isinstance(value, dict) and str(value.get("verdict", "")).strip().lower()
                                     in ("pass", "block") and isinstance(value.get("verdict"), str)))
    assert all(f.severity in ("critical", "high", "medium", "low") for f in report.findings)


@given(st.binary(max_size=200) | st.text(max_size=200))
def test_any_bytes_give_a_report(raw: bytes | str) -> None:
    report = parse_review(raw, "code", fallback_text=raw if isinstance(raw, str) else "")
    assert report.verdict in ("pass", "block") and (report.verdict == "pass" or report.findings)


def test_duplicate_key_is_location_when_known() -> None:
    a = Finding(role="code", title="Off by one", file="a.py", line=3)
    b = Finding(role="test", title="Boundary untested", file="a.py", line=3)
    c = Finding(role="test", title="Off-by-one!", file="a.py")
    d = Finding(role="code", title="off by ONE", file="a.py")
    assert a.key == b.key and c.key == d.key and a.key != c.key
    assert a.row_id != b.row_id
