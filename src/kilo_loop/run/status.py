"""Where a run is (`Phase`) and why it stopped (`StopReason`): one vocabulary for the wire, the exit
code, the wording and whether `--resume` can go on.

state.json's `status` holds either: a live run's phase, or, once it ends, its stop reason. Both are
`str` enums, so their values are the wire names and compare equal to the plain strings an older
state.json (or the dashboard) carries.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class Phase(StrEnum):
    """Where a live run is."""

    IDLE = "idle"
    STARTING = "starting"
    RUNNING = "running"
    PAUSED = "paused"
    WAITING_ANSWER = "waiting-answer"
    RETRYING = "retrying"
    WAITING_QUOTA = "waiting-quota"


class StopReason(StrEnum):
    """Why a run ended; owns its exit code, its wording and whether the run can be resumed
    (the shape of ralph-orchestrator's `TerminationReason`)."""

    DONE = "done"
    DONE_WITH_ERRORS = "done-with-errors"
    ERROR = "error"
    ABORTED = "aborted"
    STOPPED_BUDGET = "stopped-budget"
    STALLED = "stalled"
    STOPPED_GUARD = "stopped-guard"

    @property
    def exit_code(self) -> int:
        return _EXIT_CODES[self]

    @property
    def wording(self) -> str:
        """What the run's end says in a sentence's middle: 'the run {wording}'."""
        return _WORDING[self]

    @property
    def resumable(self) -> bool:
        """A finished goal has nothing left to resume; every other end leaves work to go on with."""
        return self is not StopReason.DONE

    @property
    def success(self) -> bool:
        return self is StopReason.DONE


_EXIT_CODES: dict[StopReason, int] = {
    StopReason.DONE: 0,
    StopReason.DONE_WITH_ERRORS: 1,
    StopReason.ERROR: 1,
    StopReason.ABORTED: 2,
    StopReason.STOPPED_BUDGET: 3,
    StopReason.STALLED: 4,
    StopReason.STOPPED_GUARD: 5,
}

_WORDING: dict[StopReason, str] = {
    StopReason.DONE: "finished every stage",
    StopReason.DONE_WITH_ERRORS: "used its iterations with stages still open",
    StopReason.ERROR: "failed",
    StopReason.ABORTED: "was stopped by the operator",
    StopReason.STOPPED_BUDGET: "hit a budget",
    StopReason.STALLED: "made no progress",
    StopReason.STOPPED_GUARD: "was stopped by the guard",
}

RunStatus = Phase | StopReason
StageStatus = Literal["pending", "in_progress", "done", "blocked"]

FINAL_STATUSES: frozenset[str] = frozenset(StopReason)
EXIT_CODES: dict[str, int] = {reason.value: reason.exit_code for reason in StopReason}


def stop_reason(status: str) -> StopReason | None:
    """The stop reason a wire status names; None for a live phase or a name this version does not know."""
    try:
        return StopReason(status)
    except ValueError:
        return None


def exit_code_for(status: str) -> int:
    reason = stop_reason(status)
    return 1 if reason is None else reason.exit_code


def is_final(status: str) -> bool:
    return status in FINAL_STATUSES
