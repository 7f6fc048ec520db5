"""What the review gate shows: one summary per reviewer (those who found nothing included), what
ended the loop (or that this is a recheck), and the numbered rows (seed 004: "one gate with three
summaries"). Pure: the controller hands it the reports and the sessions' usage."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from kilo_loop.review.count import blocking_findings, with_verdicts
from kilo_loop.review.findings import SEVERITIES, Finding, ReviewReport
from kilo_loop.review.wave import reviewer_label
from kilo_loop.run.findings import finding_line
from kilo_loop.run.state import ReviewRoleRun


def reviewer_summaries(reports: Iterable[ReviewReport], usages: Sequence[ReviewRoleRun]) -> list[dict[str, Any]]:
    """One entry per reviewer, in report order: its verdict, its findings by severity, how many of
    them count, its own summary sentence, and its latest session's tokens and cost (when it ran in
    the rounds given)."""
    latest = {usage.role: usage for usage in usages}
    found = list(reports)
    counting = {f.row_id for f in blocking_findings(found)}
    entries: list[dict[str, Any]] = []
    for report in found:
        every = with_verdicts([report])  # a seed reviewer's bare `block` counts without being a finding
        rows = [f for f in every if f.kind != "verdict"]
        usage = latest.get(report.role)
        entries.append({
            "role": report.role, "label": reviewer_label(report.role), "verdict": report.verdict,
            "findings": len(rows), "blocking": sum(1 for f in every if f.row_id in counting),
            "severities": _severities(rows), "summary": report.summary, "malformed": report.malformed,
            "tokens": usage.tokens if usage else None, "cost": usage.cost if usage else None,
        })
    return entries


def _severities(rows: Sequence[Finding]) -> str:
    by = Counter(f.severity for f in rows)
    return ", ".join(f"{by[s]} {s}" for s in SEVERITIES if by[s])


def reviewer_line(entry: dict[str, Any]) -> str:
    """`security reviewer: pass — 1 finding (1 medium), 0 blocking · 500 tokens $0.0050 — <its summary>`."""
    count = entry["findings"]
    found = "no findings" if not count else (f"{count} finding{'s' if count != 1 else ''} ({entry['severities']}), "
                                             f"{entry['blocking']} blocking")
    cost = f" · {entry['tokens']} tokens ${entry['cost']:.4f}" if entry.get("tokens") is not None else ""
    said = f" — {entry['summary']}" if entry.get("summary") else ""
    return f"{entry['label']}: {entry['verdict']} — {found}{cost}{said}"


def gate_label(exit: str, counts: Sequence[int]) -> str:
    """What brought the operator here: the loop's exit, or a recheck's new findings (no loop ran)."""
    if exit == "recheck":
        new = counts[-1] if counts else 0
        return f"recheck after the fix pass: {new} new finding{'s' if new != 1 else ''}"
    return f"loop exit: {exit}"


def gate_listing(stage_title: str, exit: str, counts: Sequence[int], reviewers: Sequence[dict[str, Any]],
                 rows: Sequence[Finding], tamper: Sequence[str] = ()) -> str:
    """The gate as the terminal prints it; a gate without rows continues with one Enter. `tamper`:
    what the loop's own tamper check said of the stage (no model involved), shown above the rows."""
    lines = [f"Review gate — {stage_title} ({gate_label(exit, counts)})", "  Reviewers:"]
    lines += [f"    {reviewer_line(entry)}" for entry in reviewers] or ["    (none ran)"]
    if tamper:
        lines.append("  Test tampering (the loop's own check):")
        lines += [f"    {line}" for line in tamper]
    if not rows:
        lines.append("  No findings. Press Enter to continue, or type `; <change>` to ask for a change.")
        return "\n".join(lines)
    lines.append("  Findings:")
    lines += [f"  {n}. {finding_line(f)}" for n, f in enumerate(rows, 1)]
    lines.append("  Reply with row numbers to fix now (`1 3`), `all`, or `none` (Enter defers them all); "
                 "add `; <change>` for a change request.")
    return "\n".join(lines)
