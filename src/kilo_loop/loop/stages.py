"""The stage book: which stage is next, which are done or blocked — pure views of the goal
and the run state (the reducer owns the state; the book only reads it)."""

from __future__ import annotations

from kilo_loop.goal.model import Goal, Stage
from kilo_loop.run.state import RunState


class StageBook:
    def __init__(self, goal: Goal) -> None:
        self.goal = goal

    def completed(self, state: RunState) -> set[str]:
        """Done in the goal file or during the run (a set: a 1,000-stage goal is checked per iteration)."""
        done = set(state.completed_stages)
        return {s.id for s in self.goal.stages if s.done or s.id in done}

    def is_done(self, stage: Stage, state: RunState) -> bool:
        return stage.done or stage.id in state.completed_stages

    def next_stage(self, state: RunState) -> Stage | None:
        """The first stage not done and not held by the review (its budget spent, nobody to answer)."""
        skip = set(state.completed_stages).union(state.held_stages())
        return next((s for s in self.goal.stages if not (s.done or s.id in skip)), None)

    def open_count(self, state: RunState) -> int:
        return len(self.goal.stages) - len(self.completed(state))

    def verify_command(self, stage: Stage, fallback: str | None) -> str:
        return (stage.verify or self.goal.verify or fallback or "").strip()
