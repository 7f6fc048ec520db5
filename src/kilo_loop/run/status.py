"""Run statuses and the exit code each final status maps to."""

from __future__ import annotations

from typing import Literal

RunStatus = Literal[
    "idle",
    "starting",
    "running",
    "paused",
    "waiting-answer",
    "retrying",
    "waiting-quota",
    "done",
    "done-with-errors",
    "error",
    "aborted",
    "stopped-budget",
    "stalled",
    "stopped-guard",
]

StageStatus = Literal["pending", "in_progress", "done", "blocked"]

FINAL_STATUSES: frozenset[str] = frozenset(
    {"done", "done-with-errors", "error", "aborted", "stopped-budget", "stalled", "stopped-guard"}
)

EXIT_CODES: dict[str, int] = {
    "done": 0,
    "done-with-errors": 1,
    "error": 1,
    "aborted": 2,
    "stopped-budget": 3,
    "stalled": 4,
    "stopped-guard": 5,
}


def exit_code_for(status: str) -> int:
    return EXIT_CODES.get(status, 1)


def is_final(status: str) -> bool:
    return status in FINAL_STATUSES
