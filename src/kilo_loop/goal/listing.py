"""`--list-goals`: the discovered plans as plain text, one line each."""

from __future__ import annotations

from pathlib import Path

from kilo_loop.goal.registry import SEARCHED_LOCATIONS, PlanInfo


def _last_run(plan: PlanInfo) -> str:
    run = plan.last_run
    if run is None:
        return ""
    return f"  (last: {run.status}, {run.iterations} it, ${run.cost:.2f})"


def format_plan_list(plans: list[PlanInfo], project: Path | None = None) -> str:
    """`[ 3/5  60%] markdown  plans/foo.md — Title  (last: done, 4 it, $0.12)` per plan,
    or where nothing was found and how to create a plan."""
    if not plans:
        where = f" under {project}" if project is not None else ""
        searched = "\n".join(f"  {location}" for location in SEARCHED_LOCATIONS)
        return (f"No plans found{where}. Searched:\n{searched}\n"
                'Create one with: kilo-loop new-plan "My plan title"')
    done_width = max(2, *(len(str(plan.done)) for plan in plans))
    total_width = max(len(str(plan.total)) for plan in plans)
    lines = []
    for plan in plans:
        if plan.error is not None:
            badge = "[" + "error".center(done_width + total_width + 6) + "]"
            text = f"{plan.title} — {plan.error}"
        else:
            badge = f"[{plan.done:>{done_width}}/{plan.total:<{total_width}} {plan.percent:>3}%]"
            text = plan.title
        lines.append(f"{badge} {plan.type:<8}  {plan.file} — {text}{_last_run(plan)}")
    return "\n".join(lines)
