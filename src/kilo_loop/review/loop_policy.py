"""The large rework's loop-policy question asked inside the run (seed 004, Step 0e), so that the
dashboard and a fleet's inbox can answer it too — not only a terminal at pre-flight.

It is asked once per run, before the first large stage's work begins, when nothing else set the
budget (a stage's `Auto-fix: N`, --review-retries, the pre-flight answer). The cost estimate comes
first; the four choices are the question's options. Nobody to ask, or no answer within
--answer-timeout, keeps the recommended manual (0).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kilo_loop.goal.model import Stage
from kilo_loop.review.budget import LARGE_CHOICES, parse_large_answer
from kilo_loop.review.estimate import CostBasis, cost_basis, estimate_text
from kilo_loop.review.log import ReviewLog
from kilo_loop.run.control import RunControl
from kilo_loop.run.layout import ProjectLayout
from kilo_loop.run.state import RunState
from kilo_loop.run.store import list_run_dirs, load_state, unreadable

MAX_ASKS = 3
CHOICES = [label for label, _ in LARGE_CHOICES]


def needs_question(stage: Stage, cli_retries: int | None, large_answer: int | None) -> bool:
    return stage.size == "large" and stage.auto_fix is None and cli_retries is None and large_answer is None


def last_run_state(project: Path, exclude: str | None = None) -> tuple[str, RunState] | None:
    """The newest saved run other than `exclude`, as (its label, its state); None when there is none."""
    for run in list_run_dirs(ProjectLayout(project)):
        if run.dir.name == exclude:
            continue
        try:
            return f"the last run ({run.dir.name})", load_state(run)
        except (OSError, ValueError) as exc:
            raise unreadable(run, exc) from exc
    return None


def basis_for(project: Path, current: RunState | None) -> CostBasis:
    """This run's average review session cost, else the last run's; unreadable runs count as none."""
    candidates: list[tuple[str, RunState]] = [("this run", current)] if current is not None else []
    try:
        last = last_run_state(project, current.run_id if current is not None else None)
    except LookupError:
        last = None
    if last is not None:
        candidates.append(last)
    return cost_basis(candidates)


def question_text(stage: Stage, estimate: str) -> str:
    """One line (dashboard and inbox show it as it is): the stage, the estimate, the choices."""
    flat = " · ".join(line.strip() for line in estimate.splitlines())
    return (f"Loop policy for the large rework '{stage.title}': how many automatic review fix retries before "
            f"the gate? {flat}")


async def ask_loop_policy(control: RunControl, log: ReviewLog, stage: Stage, roles: int, project: Path,
                          timeout: float | None, channel_open: Callable[[], bool]) -> int | None:
    """The budget chosen (0-3); None when the run was stopped while it waited."""
    estimate = estimate_text(roles, basis_for(project, log.state))
    if not channel_open():
        log.warning(f"large rework '{stage.title}': nobody can answer the loop-policy question (no terminal, "
                    "no dashboard, no inbox); it runs on manual — set `Auto-fix: N` or --review-retries to choose")
        return 0
    question = question_text(stage, estimate)
    try:
        for _ in range(MAX_ASKS):
            control.begin_question_round()
            log.ask(f"? {estimate}\n  Reply manual, auto 1, auto 2 or auto 3 (empty keeps manual).", question, CHOICES)
            try:
                items = await control.next_answers(timeout)
            except TimeoutError:
                log.warning(f"large rework '{stage.title}': no loop-policy answer in time; it runs on manual")
                return 0
            if items is None:
                return None
            reply = items[0].answer
            answer = parse_large_answer(reply)
            if answer is not None:
                log.answered(question, reply or "manual", items[0].source)
                return answer
            log.warning(f"loop policy: {reply.strip()!r} is not one of the choices; answer again")
        return 0
    finally:
        log.question_closed()
