"""The review as the loop sees it: what the loop lends a review (its token count, its verify run, its
halt), what a review answers about a stage, and the calls the loop makes. The loop and the review are
peers over the run's state; this seam below both is all either knows of the other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kilo_loop.agent.protocol import StepFinished
from kilo_loop.goal.model import Stage
from kilo_loop.run.state import ReviewRoundSummary, VerifyResult


@dataclass
class ReviewVerdict:
    advance: bool
    summary: ReviewRoundSummary
    feedback: str | None = None
    questions: list[str] = field(default_factory=list)
    stopped: bool = False


@dataclass(frozen=True)
class ReviewHooks:
    """The loop's own means the review uses: every session's tokens count toward the run's budgets,
    verify runs as the loop runs it (a Stop cancels it), and a halted run judges no round."""

    count_tokens: Callable[[StepFinished], str | None]
    verify: Callable[[str], Awaitable[VerifyResult | None]]
    halted: Callable[[], bool]


class Reviewer(Protocol):
    def resume(self, pending_stage_ids: Sequence[str]) -> str | None:
        """A resumed run's pending fix pass: the feedback its next prompt carries, if any."""

    async def begin_iteration(self, stage: Stage, iteration: int, verify_command: str | None) -> bool:
        """Before the stage's session; True when the review wrote to the work tree (a baseline verify)."""

    def fix_touched(self, stage_id: str, files: Sequence[str]) -> None: ...

    async def review(self, stage: Stage, iteration: int, verify: VerifyResult | None,
                     tamper: Sequence[str] = ()) -> ReviewVerdict:
        """After verify passed: whether the stage may advance (the review records its own events).
        `tamper`: what the loop's tamper check said of the stage (warnings now, blocks earlier), one
        line each, for the reviewers' prompt and the gate."""


ReviewerFactory = Callable[[ReviewHooks], Reviewer]
