"""The goal a run works towards: a title and ordered stages."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kilo_loop.errors import UsageError

GoalKind = Literal["json", "markdown", "text"]


class GoalError(UsageError):
    """A goal that cannot be used; the message names the file, line and problem."""

    label = "goal error"

    def __init__(self, message: str, source: Path | None = None, line: int | None = None) -> None:
        self.message = message
        self.source = source
        self.line = line
        where = str(source) if source else "goal"
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {message}")


class Stage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    details: str = ""
    done: bool = False
    verify: str | None = None
    acceptance: str | None = None
    model: str | None = None
    agent: str | None = None
    variant: str | None = None
    runtime: str | None = None  # the agent CLI for this stage (kilo, claude, …); None: the run's
    # Paths the implementer must not change in this stage (globs; see goal/protect.py).
    protect: list[str] = []
    # Review retry budget: the stage's size picks the preset; `Auto-fix: N` overrides it.
    size: Literal["small", "medium", "large"] | None = None
    auto_fix: int | None = None
    # 1-based line of the checklist item in a markdown goal (used to tick it in place).
    line: int | None = None


class Goal(BaseModel):
    title: str
    description: str = ""
    stages: list[Stage]
    source: Path | None = None
    kind: GoalKind = "text"
    # Goal-wide verify command (JSON goals' top-level "verify"); a stage's own verify wins.
    verify: str | None = None
    # Goal-wide protect globs; a stage's own protect list adds to them.
    protect: list[str] = []

    def protected_for(self, stage: Stage) -> list[str]:
        return list(dict.fromkeys([*self.protect, *stage.protect]))

    def pending_stages(self) -> list[Stage]:
        return [stage for stage in self.stages if not stage.done]

    def all_done(self) -> bool:
        return all(stage.done for stage in self.stages)

    def stage(self, stage_id: str) -> Stage | None:
        return next((stage for stage in self.stages if stage.id == stage_id), None)
