"""The pull request's title and body: what the run did, stage by stage with its receipt, and — when the
run ended before every stage was done — what is left. Pure."""

from __future__ import annotations

from kilo_loop.run.receipts import stage_receipts
from kilo_loop.run.report import format_cost, format_tokens
from kilo_loop.run.state import RunState

MARKER = "<!-- kilo-loop run -->"  # the body's first line: this pull request is the loop's to update


def pr_title(state: RunState) -> str:
    return " ".join(state.goal_title.split())[:200] or f"kilo-loop run {state.run_id}"


def pr_body(state: RunState, closes: str | None = None) -> str:
    """`closes`: the issue the run's goal came from (`#12`, or `owner/repo#12` in another repository)."""
    receipts = stage_receipts(state)
    done = [r for r in receipts if r.status == "done"]
    left = [r for r in receipts if r.status != "done"]
    lines = [MARKER, ""]
    if closes is not None:
        lines += [f"Closes {closes}", ""]
    summary = (f"kilo-loop run `{state.run_id}`: {len(done)} of {len(receipts)} stage(s) done, each verified by "
               f"the loop and committed on its own · {format_tokens(state.totals.tokens)} tokens · "
               f"{format_cost(state.totals.cost)}.")
    lines += [summary, "", "## Stages", ""]
    for receipt in receipts:
        verify = f"`{receipt.verify_command}` {receipt.verify}" if receipt.verify_command else "no verify command"
        mark = "x" if receipt.status == "done" else " "
        lines.append(f"- [{mark}] **{receipt.title}** — {receipt.status}; verify: {verify}; review: {receipt.review}; "
                     f"{len(receipt.iterations)} iteration(s), {format_tokens(receipt.tokens)} tokens, "
                     f"{format_cost(receipt.cost)}")
    if left:
        lines += ["", "## What is left", "",
                  f"The run ended ({state.stop_reason or state.status}) before these stages were done; this pull "
                  "request stays a draft until they are:", ""]
        lines += [f"- {receipt.title}" for receipt in left]
        if state.resume_command:
            lines += ["", f"Resume: `{state.resume_command}`"]
    return "\n".join(lines) + "\n"
