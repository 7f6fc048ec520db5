"""The retry budget around one review wave and its three exits (seed 004).

After each review round the loop looks at the blocking count:
- **clean**: the count is 0 — the loop exits successfully;
- **thrash**: a retry ran and the count did not decrease — stop at once, retrying is not helping;
- **exhausted**: the budget of automatic retries is used (a budget of 0 is the manual mode: every
  blocking finding goes straight to the gate);
- otherwise **retry**: the blocking findings go to the implementer without asking.

Every round that does not retry ends the loop, and every retry uses one unit of a finite budget,
so a loop takes at most budget + 1 rounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from kilo_loop.run.state import ReviewStageState

Exit = Literal["clean", "thrash", "exhausted"]
Step = Literal["retry", "clean", "thrash", "exhausted"]
Size = Literal["small", "medium", "large"]
SIZES: tuple[Size, ...] = ("small", "medium", "large")
MAX_RETRIES = 3
# small and medium preset one automatic retry; a large rework asks (Manual / Auto 1 / 2 / 3).
PRESETS: dict[Size, int] = {"small": 1, "medium": 1}
LARGE_CHOICES: tuple[tuple[str, int], ...] = (
    ("Manual (recommended)", 0), ("Auto — 1 retry", 1), ("Auto — 2 retries", 2), ("Auto — 3 retries", 3),
)


@dataclass(frozen=True)
class ReviewLoop:
    """One loop around the review wave of one stage."""

    stage_id: str
    budget: int
    counts: tuple[int, ...] = ()
    retries: int = 0
    exit: Exit | None = None
    history: tuple[str, ...] = field(default=())

    @property
    def round(self) -> int:
        return len(self.counts)

    @property
    def finished(self) -> bool:
        return self.exit is not None


def decide(loop: ReviewLoop, count: int) -> tuple[ReviewLoop, Step]:
    """Record one round's blocking count and say what happens next."""
    if loop.finished:
        raise ValueError(f"the review loop of {loop.stage_id} already exited ({loop.exit})")
    if count < 0:
        raise ValueError("a blocking count cannot be negative")
    previous = loop.counts[-1] if loop.counts else None
    counts = (*loop.counts, count)
    step: Step
    if count == 0:
        step = "clean"
    elif previous is not None and count >= previous:
        step = "thrash"
    elif loop.retries >= loop.budget:
        step = "exhausted"
    else:
        step = "retry"
    if step == "retry":
        return replace(loop, counts=counts, retries=loop.retries + 1, history=(*loop.history, step)), step
    return replace(loop, counts=counts, exit=step, history=(*loop.history, step)), step


def running_loop(stage_id: str, review: ReviewStageState | None, budget: int) -> ReviewLoop:
    """The stage's loop as the run's state records it. The budget is the stage's for the whole run:
    the one its first round recorded, with every retry used since (a later loop starts with no
    counts, but with those retries spent). `budget` is for a stage no round has judged yet."""
    if review is None:
        return ReviewLoop(stage_id=stage_id, budget=budget)
    counts = () if review.exit else tuple(review.counts)
    return ReviewLoop(stage_id=stage_id, budget=budget if review.budget is None else review.budget, counts=counts,
                      retries=review.retries)


def clamp_budget(value: int) -> int:
    if not 0 <= value <= MAX_RETRIES:
        raise ValueError(f"a review retry budget is 0 to {MAX_RETRIES}, not {value}")
    return value


def resolve_budget(size: Size | None, stage_auto_fix: int | None, cli_retries: int | None,
                   large_answer: int | None) -> int:
    """The budget for a stage: the stage's own `Auto-fix: N` wins, then --review-retries, then the
    size preset (a large rework uses the pre-flight answer; no answer keeps manual, 0)."""
    if stage_auto_fix is not None:
        return clamp_budget(stage_auto_fix)
    if cli_retries is not None:
        return clamp_budget(cli_retries)
    if (size or "medium") == "large":
        return clamp_budget(large_answer) if large_answer is not None else 0
    return PRESETS[size or "medium"]


def parse_large_answer(reply: str) -> int | None:
    """The reply to the loop-policy question: `auto 2`, `2`, `manual`, empty (manual), or a choice's
    label as the dashboard sends it. None when the reply is not one of the four choices."""
    words = reply.strip().lower().replace("—", " ").split()
    if not words or words[0] in ("manual", "m"):
        return 0 if len(words) <= 1 or words[1:] == ["(recommended)"] else None
    if words[0] == "auto":
        words = words[1:] or ["1"]
    if len(words) == 1 or (len(words) == 2 and words[1].startswith("retr")):
        digit = words[0]
        if digit.isdigit() and 0 <= int(digit) <= MAX_RETRIES:
            return int(digit)
    return None
