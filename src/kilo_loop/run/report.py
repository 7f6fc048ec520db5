"""Markdown reports: one per iteration and one for the whole run."""

from __future__ import annotations

from typing import Any

from kilo_loop.durations import format_duration
from kilo_loop.run.receipts import stage_receipts
from kilo_loop.run.state import IterationSummary, ReviewRoundSummary, RunState


def format_tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 1_000:
        return f"{count / 1_000:.1f}k"
    return str(count)


def masked_line(counts: dict[str, int]) -> str:
    """``Masked: 5 (environment)``, ``Masked: 7 (environment 5, mask file .env 2)``."""
    total = sum(counts.values())
    if len(counts) == 1:
        return f"Masked: {total} ({next(iter(counts))})"
    return f"Masked: {total} (" + ", ".join(f"{source} {count}" for source, count in sorted(counts.items())) + ")"


def format_cost(cost: float) -> str:
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def iteration_line(item: IterationSummary) -> str:
    """The one-line console/report summary: tokens · cost · context · topic · % · next stage."""
    parts = [
        f"{format_tokens(item.tokens)} tokens",
        format_cost(item.cost),
        f"context {format_tokens(item.context_tokens)}",
        item.topic or "(no topic)",
        f"{item.percent}%",
    ]
    if item.next_stage:
        parts.append(f"next: {item.next_stage}")
    if item.files_changed:
        parts.append(f"{len(item.files_changed)} file(s)")
    return " · ".join(parts)


def _verify_lines(item: IterationSummary) -> list[str]:
    if item.verify is None:
        return []
    v = item.verify
    verdict = "passed" if v.passed else ("timed out" if v.timed_out else f"failed (exit {v.exit_code})")
    lines = [f"- Verify: `{v.command}` {verdict} in {v.duration_ms} ms"]
    if not v.passed and v.output_tail:
        lines += ["", "```", v.output_tail.rstrip(), "```"]
    return lines


def review_lines(review: ReviewRoundSummary | None) -> list[str]:
    """The review verdict, each reviewer's cost and the findings, for an iteration report."""
    if review is None:
        return []
    gate = f", gate: {review.gate}" if review.gate else ""
    lines = ["", "## Review", "",
             (f"- Verdict: {review.verdict} (round {review.round}, {review.step}, {review.count} blocking, "
             f"budget {review.budget}{gate})")]
    for role in review.roles:
        final = " (final pass)" if role.final_pass else ""
        lines.append(f"- {role.role}{final}: {role.verdict}, {role.findings} finding(s), "
                     f"{format_tokens(role.tokens)} tokens, {format_cost(role.cost)}")
    for finding in review.findings:
        where = f" at {finding['file']}" + (f":{finding['line']}" if finding.get("line") else "") \
            if finding.get("file") else ""
        pre = " (pre-existing)" if finding.get("preExisting") else ""
        lines.append(f"  - [{finding['role']}/{finding['severity']}]{pre} {finding['title']}{where}")
    return lines


def _circle_lines(item: IterationSummary) -> list[str]:
    c = item.circles
    assert c is not None
    lines = []
    if c.same_failure_streak > 1:
        lines.append(f"- Same verify failure: {c.same_failure_streak} times in a row (signature `{c.signature}`)")
    if c.oscillation:
        lines.append(f"- Oscillation: {c.oscillation}")
    if c.ended_early:
        lines.append(f"- Ended early: {c.ended_early} (saved up to {format_tokens(c.saved_tokens)} tokens, "
                     f"{format_cost(c.saved_cost)})")
    return lines


def iteration_report_md(item: IterationSummary) -> str:
    lines = [
        f"# Iteration {item.iteration} — {item.stage_title or item.stage_id or 'goal'}",
        "",
        f"- Outcome: {item.outcome}",
        f"- Tokens: {item.tokens} (input {item.input_tokens}, output {item.output_tokens})",
        f"- Cost: {format_cost(item.cost)}",
        f"- Context: {item.context_tokens} tokens",
        f"- Topic: {item.topic or '—'}",
        f"- Percent: {item.percent}%",
        f"- Next stage: {item.next_stage or '—'}",
        f"- Session: {item.session_id or '—'}",
        f"- Tool calls: {item.tool_calls}",
        f"- Duration: {item.duration_ms / 1000:.1f} s",
    ]
    if item.retries:
        lines.append(f"- Retries: {item.retries} (last reason: {item.retry_reason})")
    if item.guard_hits:
        lines.append(f"- Guard hits: {item.guard_hits} ({item.guard_reason})")
    if item.circles is not None:
        lines += _circle_lines(item)
    lines += _verify_lines(item)
    lines += review_lines(item.review)
    if item.error:
        lines.append(f"- Error: {item.error}")
    if item.summary:
        lines += ["", "## Summary", "", item.summary]
    if item.files_changed:
        lines += ["", "## Files changed", ""] + [f"- {f}" for f in item.files_changed]
    if item.questions:
        lines += ["", "## Questions", ""] + [f"- {q.question}" for q in item.questions]
    if item.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in item.warnings]
    return "\n".join(lines) + "\n"


def _review_section(iterations: list[IterationSummary]) -> list[str]:
    reviewed = [item for item in iterations if item.review is not None]
    if not reviewed:
        return []
    lines = ["", "## Review", "", "| # | step | verdict | blocking | reviewer | tokens | cost |", "|---|---|---|---|---|---|---|"]
    for item in reviewed:
        review = item.review
        assert review is not None
        head = f"| {item.iteration} | {review.step} | {review.verdict} | {review.count} |"
        if not review.roles:
            lines.append(f"{head} — | — | — |")
        for role in review.roles:
            who = role.role + (" (final)" if role.final_pass else "")
            lines.append(f"{head} {who} | {role.tokens} | {format_cost(role.cost)} |")
    return lines


def _held_section(state: RunState) -> list[str]:
    """The stages the review holds (budget spent, nobody to answer the gate), each with its findings."""
    held = [(stage_id, review) for stage_id, review in state.review_stages.items() if review.held]
    if not held:
        return []
    lines = ["", "## Held by the review", "",
             "The retry budget of these stages is spent and nobody could answer the review gate (no terminal, "
             "no dashboard, or `--review-gate off`): no further round is run, resumes included. Fix the findings "
             "and start a new run, or answer the gate from a terminal or the dashboard."]
    for stage_id, review in held:
        stage = state.stage_state(stage_id)
        title = stage.title if stage is not None else stage_id
        lines += ["", f"### {title} — loop exit: {review.exit or 'exhausted'}, "
                      f"{review.retries} of {review.budget or 0} retries, {review.rounds} round(s)", ""]
        lines += [f"- {_finding_text(f)}" for f in review.findings] or ["- (no findings listed)"]
    return lines


def _finding_text(finding: dict[str, Any]) -> str:
    where = finding.get("file") or ""
    if where and finding.get("line"):
        where = f"{where}:{finding['line']}"
    head = f"[{finding.get('severity', 'high')}] {finding.get('role', '?')}: {finding.get('title', '')}"
    detail = str(finding.get("detail") or "").strip()
    return head + (f" at {where}" if where else "") + (f" — {detail}" if detail else "")


def run_report_md(state: RunState, iterations: list[IterationSummary] | None = None) -> str:
    """The run's report; `iterations` is the whole history (default: the ones the state keeps)."""
    totals = state.totals
    lines = [
        f"# Run {state.run_id} — {state.goal_title}",
        "",
        f"- Status: **{state.status}**" + (f" ({state.stop_reason})" if state.stop_reason else ""),
        f"- Project: {state.project}",
        f"- Goal: {state.goal_source or 'inline text'}",
        f"- Runtime: {state.runtime}" + (" (dry run)" if state.dry_run else ""),
        f"- Sandbox: {state.sandbox}",
        f"- Iterations: {state.iteration} of {state.max_iterations}",
        f"- Progress: {state.last_percent}%",
        f"- Tokens: {totals.tokens} · Cost: {format_cost(totals.cost)}",
        f"- Started: {state.started_at} · Finished: {state.finished_at or '—'}",
    ]
    if state.retry.attempt:
        lines.append(f"- Retries: last reason {state.retry.reason}")
    if state.guard_blocks:
        lines.append(f"- Guard blocks: {state.guard_blocks}")
    if state.masked:
        lines.append(f"- {masked_line(state.masked)}")
    lines += ["", "## Stages", ""]
    lines += [f"- [{'x' if s.status == 'done' else ' '}] {s.title} — {s.status}" for s in state.stages]
    lines += _receipt_lines(state)
    lines += _notes_section(state)
    lines += _circles_section(state)
    lines += ["", "## Iterations", "", "| # | stage | outcome | tokens | cost | % | verify |", "|---|---|---|---|---|---|---|"]
    history = state.iterations if iterations is None else iterations
    for item in history:
        verify = "—" if item.verify is None else ("pass" if item.verify.passed else "fail")
        lines.append(
            f"| {item.iteration} | {item.stage_title or '—'} | {item.outcome} | {item.tokens} "
            f"| {format_cost(item.cost)} | {item.percent} | {verify} |"
        )
    lines += _review_section(history)
    lines += _held_section(state)
    if state.resume_command:
        lines += ["", f"Resume this run: `{state.resume_command}`"]
    return "\n".join(lines) + "\n"


def _notes_section(state: RunState) -> list[str]:
    """`## Notes to the agent`: each note, where its life got to, and which iteration's session carried it."""
    if not state.notes:
        return []
    lines = ["", "## Notes to the agent", "", "| note | from | status | delivered | iteration | text |",
             "|---|---|---|---|---|---|"]
    for note in state.notes:
        text = " ".join(note.text.split()).replace("|", "\\|")
        text = text if len(text) <= 200 else text[:199] + "…"
        lines.append(f"| {note.id} | {note.source or '—'} | {note.status} | {note.delivered_via or '—'} "
                     f"| {note.iteration or '—'} | {text} |")
    return lines


def _circles_section(state: RunState) -> list[str]:
    """`## Going in circles`: the last circle's diagnosis, the oscillations, the sessions ended early."""
    c = state.circles
    if not (c.diagnosis or c.sessions_ended_early or c.oscillations):
        return []
    lines = ["", "## Going in circles", ""]
    if c.diagnosis:
        lines += [c.diagnosis, ""]
    if c.steps:
        lines.append("- Ladder: " + "; ".join(c.steps[-10:]))
    if c.oscillations:
        lines.append(f"- Oscillations: {c.oscillations}")
    if c.sessions_ended_early:
        lines.append(f"- Sessions ended early (doom loops): {c.sessions_ended_early}, saving up to "
                     f"{format_tokens(c.saved_tokens)} tokens, {format_cost(c.saved_cost)}")
    return lines


def _receipt_lines(state: RunState) -> list[str]:
    """`## Stage receipts`: per stage, what it took and how it was checked."""
    header = "| stage | status | iterations | duration | tokens | cost | retries | verify | review |"
    lines = ["", "## Stage receipts", "", header, "|---|---|---|---|---|---|---|---|---|"]
    receipts = stage_receipts(state)
    for r in receipts:
        lines.append(
            f"| {r.title} | {r.status} | {len(r.iterations)} | {format_duration(r.duration_ms / 1000)} | {r.tokens} "
            f"| {format_cost(r.cost)} | {r.retries} | {r.verify} | {r.review} |"
        )
    circling = [r for r in receipts if r.circles.same_failure_streak > 1 or r.circles.oscillations
                or r.circles.sessions_ended_early]
    if circling:
        lines += ["", "| stage | same-failure streak | its cost | oscillations | their cost | sessions ended early "
                      "| their cost | saved |", "|---|---|---|---|---|---|---|---|"]
        for r in circling:
            c = r.circles
            lines.append(f"| {r.title} | {c.same_failure_streak} | {format_cost(c.same_failure_cost)} | {c.oscillations} "
                         f"| {format_cost(c.oscillation_cost)} | {c.sessions_ended_early} "
                         f"| {format_cost(c.ended_early_cost)} | {format_tokens(c.saved_tokens)} tokens, "
                         f"{format_cost(c.saved_cost)} |")
    return lines
