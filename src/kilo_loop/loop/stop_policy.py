"""When a run must stop, as pure functions of the limits and the state: the operator's stop and
abort, budgets, stale iterations, guard hits. The orchestrator asks; nothing here does I/O, and
nothing here reads anything but the state the reducer built (so a replay decides the same)."""

from __future__ import annotations

from dataclasses import dataclass

from kilo_loop.run.state import RunState, Totals
from kilo_loop.run.status import StopReason
from kilo_loop.settings import Settings

Stop = tuple[StopReason, str]
STOPPED = (StopReason.ABORTED, "stopped by the operator")
ABORTED_AFTER_SESSION = (StopReason.ABORTED, "aborted after the session by the operator")


@dataclass(frozen=True)
class Limits:
    max_cost: float | None = None
    max_tokens: int | None = None
    max_stale_iterations: int | None = None
    max_guard_blocks: int = 3
    guard_stop: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(max_cost=settings.max_cost, max_tokens=settings.max_tokens,
                   max_stale_iterations=settings.max_stale_iterations, max_guard_blocks=settings.max_guard_blocks,
                   guard_stop=settings.guard_stop)


def budget_reason(limits: Limits, totals: Totals) -> str | None:
    """Why the budget stops the run, or None while it lasts."""
    if limits.max_cost is not None and totals.cost >= limits.max_cost:
        return f"cost ${totals.cost:.4f} reached --max-cost ${limits.max_cost}"
    if limits.max_tokens is not None and totals.tokens >= limits.max_tokens:
        return f"{totals.tokens} tokens reached --max-tokens {limits.max_tokens}"
    return None


def next_stale_count(previous: int, changed_files: bool, advanced: bool) -> int:
    """Iterations in a row that changed no file and advanced no stage."""
    return 0 if (changed_files or advanced) else previous + 1


def stale_reason(limits: Limits, stale: int, stages_left: bool) -> str | None:
    if limits.max_stale_iterations and stale >= limits.max_stale_iterations and stages_left:
        return f"{stale} iteration(s) changed no file and advanced no stage"
    return None


def guard_reason(limits: Limits, consecutive: int, reason: str) -> str | None:
    """Why a guard hit ends the run (after `consecutive` hits in a row), or None to go on."""
    if limits.guard_stop:
        return f"guard hit with --guard-stop: {reason}"
    if consecutive >= limits.max_guard_blocks:
        return f"{consecutive} consecutive guard hits (--max-guard-blocks)"
    return None


def before_iteration(limits: Limits, state: RunState, first_iteration: int) -> Stop | None:
    """Whether the run ends before its next iteration: a Stop, an abort after a session this process
    ran (`first_iteration` is its first), a budget spent."""
    if state.stop_requested:
        return STOPPED
    if state.abort_requested and state.iteration >= first_iteration:
        return ABORTED_AFTER_SESSION
    budget = budget_reason(limits, state.totals)
    return (StopReason.STOPPED_BUDGET, budget) if budget else None


def no_stage_left(state: RunState) -> Stop:
    """No stage to work on: every one is done, or the rest are held by the review."""
    done = set(state.completed_stages)
    held = [stage_id for stage_id in state.held_stages() if stage_id not in done]
    if held:
        return (StopReason.DONE_WITH_ERRORS,
                f"{len(held)} stage(s) held by the review ({', '.join(held)}): the retry budget is spent and nobody "
                "can answer the gate; the findings are in report.md")
    return StopReason.DONE, "all stages done"


def waits_for_resume(state: RunState) -> bool:
    return state.paused and not state.stop_requested


def no_iteration_follows(state: RunState, last_iteration: int, stages_left: bool) -> bool:
    """Nothing will read an answer: the last iteration ran, no stage is left, or the run is ending."""
    return (state.iteration >= last_iteration or not stages_left or state.abort_requested
            or state.stop_requested)
