"""The blocking count (seed 004): what makes the implementer retry without asking.

- code (and the seed's single reviewer): every critical or high finding, except Pre-existing rows;
- test: every critical or high finding, plus every acceptance-criteria gap, except Pre-existing rows
  (a defect the change did not introduce never makes the implementer loop);
- security: nothing — its findings always wait for the operator at the gate;
- coverage findings never count (the implementer cannot fix an unmeasurable figure);
- a reviewer whose output could not be read counts (never a silent pass), and so does a protected
  file the implementer changed;
- the same issue reported by several reviewers counts once.
"""

from __future__ import annotations

from collections.abc import Iterable

from kilo_loop.review.findings import BLOCKING_SEVERITIES, Finding, ReviewReport
from kilo_loop.review_roles import SEED_ROLE

_ALWAYS_COUNT = frozenset({"malformed", "protected"})


def counts(finding: Finding) -> bool:
    """True when this finding alone feeds the retry loop."""
    if finding.kind in _ALWAYS_COUNT:
        return True
    if finding.role == "security" or finding.kind == "coverage" or finding.pre_existing:
        return False
    if finding.kind == "acceptance-gap":
        return finding.role == "test"
    if finding.kind == "verdict":
        return True
    return finding.severity in BLOCKING_SEVERITIES


def with_verdicts(reports: Iterable[ReviewReport]) -> list[Finding]:
    """Every finding, plus one for a seed reviewer that said `block` without a counting finding
    (its verdict un-advances the stage by itself)."""
    found: list[Finding] = []
    for report in reports:
        found.extend(report.findings)
        if report.role == SEED_ROLE and report.verdict == "block" and not any(counts(f) for f in report.findings):
            found.append(Finding(role=SEED_ROLE, title="The reviewer's verdict is block", kind="verdict"))
    return found


def blocking_findings(reports: Iterable[ReviewReport]) -> list[Finding]:
    """The findings that count, one per issue (the first reviewer to name it keeps it)."""
    seen: set[str] = set()
    blocking: list[Finding] = []
    for finding in with_verdicts(reports):
        if counts(finding) and finding.key not in seen:
            seen.add(finding.key)
            blocking.append(finding)
    return blocking


def blocking_count(reports: Iterable[ReviewReport]) -> int:
    return len(blocking_findings(reports))


def waiting_findings(reports: Iterable[ReviewReport]) -> list[Finding]:
    """Findings that do not count: they wait for the operator's decision at the gate."""
    return [f for f in with_verdicts(reports) if not counts(f)]


def roles_behind(findings: Iterable[Finding]) -> list[str]:
    """The reviewers whose reports the given findings came from, in first-seen order."""
    return list(dict.fromkeys(f.role for f in findings))
