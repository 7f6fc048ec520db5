"""A receipt per stage: what it took (iterations, time, tokens, cost, retries) and how it was
checked (the last verify, the last review), from the run's iteration summaries. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from kilo_loop.run.circles import CircleMark
from kilo_loop.run.state import IterationSummary, RunState


@dataclass
class StageReceipt:
    stage_id: str
    title: str
    status: str
    iterations: list[int] = field(default_factory=list)
    duration_ms: int = 0
    tokens: int = 0
    cost: float = 0.0
    retries: int = 0
    verify: str = "—"  # passed | failed (exit N) | timed out | — (never run)
    verify_command: str | None = None
    review: str = "—"
    tamper_findings: int = 0
    notes: list[str] = field(default_factory=list)  # the operator's notes its iterations' sessions carried
    circles: CircleReceipt = field(default_factory=lambda: CircleReceipt())

    def add(self, item: IterationSummary) -> None:
        self.iterations.append(item.iteration)
        self.duration_ms += item.duration_ms
        self.tokens += item.tokens
        self.cost += item.cost
        self.retries += item.retries
        self.tamper_findings += len(item.tamper_findings)
        if item.verify is not None:
            v = item.verify
            self.verify = "passed" if v.passed else ("timed out" if v.timed_out else f"failed (exit {v.exit_code})")
            self.verify_command = v.command
        review = review_verdict(item)
        if review is not None:
            self.review = review
        if item.circles is not None:
            self.circles.add(item.circles, item.cost)

    def wire(self) -> dict[str, Any]:
        return {
            "stageId": self.stage_id,
            "title": self.title,
            "status": self.status,
            "iterations": len(self.iterations),
            "iterationNumbers": self.iterations,
            "durationMs": self.duration_ms,
            "tokens": self.tokens,
            "cost": round(self.cost, 6),
            "retries": self.retries,
            "verify": self.verify,
            "verifyCommand": self.verify_command,
            "review": self.review,
            "tamperFindings": self.tamper_findings,
            **({"notes": self.notes} if self.notes else {}),  # only where notes went: older receipts keep their shape
            **self.circles.wire(),
        }


@dataclass
class CircleReceipt:
    """Going in circles in one stage, with the cost of each: the longest same-failure streak (and what
    its repeats cost), the oscillations, the sessions ended early (and what that saved)."""

    same_failure_streak: int = 0
    same_failure_cost: float = 0.0  # the iterations that failed the same way again
    oscillations: int = 0
    oscillation_cost: float = 0.0
    sessions_ended_early: int = 0
    ended_early_cost: float = 0.0
    saved_tokens: int = 0
    saved_cost: float = 0.0

    def add(self, mark: CircleMark, cost: float) -> None:
        self.same_failure_streak = max(self.same_failure_streak, mark.same_failure_streak)
        if mark.same_failure_streak > 1:
            self.same_failure_cost += cost
        if mark.oscillation:
            self.oscillations += 1
            self.oscillation_cost += cost
        if mark.ended_early:
            self.sessions_ended_early += 1
            self.ended_early_cost += cost
            self.saved_tokens += mark.saved_tokens
            self.saved_cost += mark.saved_cost

    def wire(self) -> dict[str, Any]:
        return {
            "sameFailureStreak": self.same_failure_streak,
            "sameFailureCost": round(self.same_failure_cost, 6),
            "oscillations": self.oscillations,
            "oscillationCost": round(self.oscillation_cost, 6),
            "sessionsEndedEarly": self.sessions_ended_early,
            "endedEarlyCost": round(self.ended_early_cost, 6),
            "savedTokens": self.saved_tokens,
            "savedCost": round(self.saved_cost, 6),
        }


def review_verdict(item: IterationSummary) -> str | None:
    """The reviewer's verdict on this iteration, when a review pass recorded one (the review
    loop adds it to the summary as `review`: a verdict string, or a record with one)."""
    review: Any = getattr(item, "review", None)
    if isinstance(review, BaseModel):
        review = review.model_dump()
    if isinstance(review, dict):
        verdict = review.get("verdict") or review.get("status")
        return str(verdict) if verdict else None
    return review if isinstance(review, str) and review else None


def stage_receipts(state: RunState, iterations: Iterable[IterationSummary] | None = None) -> list[StageReceipt]:
    """One receipt per stage of the goal, in goal order; iterations of no stage are left out."""
    receipts = {stage.id: StageReceipt(stage.id, stage.title, stage.status) for stage in state.stages}
    for item in state.iterations if iterations is None else iterations:
        receipt = receipts.get(item.stage_id or "")
        if receipt is not None and item.outcome != "running":
            receipt.add(item)
    for receipt in receipts.values():
        receipt.notes = [n.id for n in state.notes if n.iteration is not None and n.iteration in receipt.iterations]
    return list(receipts.values())
