"""Why a run cannot start: found before anything is created, each with what to do."""

from __future__ import annotations

from kilo_loop.errors import UsageError
from kilo_loop.goal.model import Goal


class SetupError(UsageError, RuntimeError):
    """A problem found before anything is created; the message says what to do."""


class AllStagesDone(SetupError):
    """Every stage of the goal is done already and the run was not forced."""

    def __init__(self, goal: Goal) -> None:
        super().__init__(f"every stage of '{goal.title}' is already done")
        self.goal = goal
