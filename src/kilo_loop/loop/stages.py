"""The stage book: which stage is next, which are done or blocked — pure views of the goal
and the run state (the reducer owns the state; the book only reads it)."""

from __future__ import annotations

from kilo_loop.goal.model import Goal, Stage
from kilo_loop.run.state import RunState


class StageBook:
    def __init__(self, goal: Goal) -> None:
        self.goal = goal

    def is_done(self, stage: Stage, state: RunState) -> bool:
        return stage.done or stage.id in state.completed_stages

    def next_stage(self, state: RunState) -> Stage | None:
        return next((s for s in self.goal.stages if not self.is_done(s, state)), None)

    def open_count(self, state: RunState) -> int:
        return sum(1 for s in self.goal.stages if not self.is_done(s, state))

    def completed(self, state: RunState) -> set[str]:
        return {s.id for s in self.goal.stages if self.is_done(s, state)}

    def verify_command(self, stage: Stage, fallback: str | None) -> str:
        return (stage.verify or self.goal.verify or fallback or "").strip()
