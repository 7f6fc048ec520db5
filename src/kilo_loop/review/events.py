"""The review loop's events (one frozen dataclass per kind, like run/events.py), what they change in
the run state (the reducer folds them through `REVIEW_HANDLERS`), and the notices they raise."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kilo_loop.run.events import EVENT_TYPES, RunEvent
from kilo_loop.run.state import ReviewGateState, RunState, StageState

Changes = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ReviewStarted(RunEvent):
    TYPE = "review-started"
    level: str = "heading"
    role: str = ""
    started_at: str = ""


@dataclass(frozen=True, kw_only=True)
class ReviewFinished(RunEvent):
    TYPE = "review-finished"
    role: str = ""
    verdict: str = ""
    started_at: str = ""
    finished_at: str = ""
    tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True, kw_only=True)
class ReviewRound(RunEvent):
    TYPE = "review-round"
    stage_id: str = ""
    count: int = 0
    step: str = ""


@dataclass(frozen=True, kw_only=True)
class ReviewFinal(RunEvent):
    TYPE = "review-final"


@dataclass(frozen=True, kw_only=True)
class ReviewRecheck(RunEvent):
    TYPE = "review-recheck"
    roles: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class ReviewDeferred(RunEvent):
    TYPE = "review-deferred"
    rows: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ReviewFixPass(RunEvent):
    TYPE = "review-fix-pass"
    level: str = "heading"


@dataclass(frozen=True, kw_only=True)
class ReviewResumed(RunEvent):
    TYPE = "review-resume"


@dataclass(frozen=True, kw_only=True)
class ReviewGateOpened(RunEvent):
    """The gate waits for the operator: the state carries it for the terminal and the dashboard."""

    TYPE = "review-gate"
    level: str = "warn"
    stage_id: str = ""
    exit: str = ""
    rows: int = 0
    gate: Mapping[str, Any] = field(default_factory=dict)
    costs: str | None = None  # what each reviewer of the round cost


@dataclass(frozen=True, kw_only=True)
class ReviewGateAnswered(RunEvent):
    TYPE = "review-gate-answer"
    reply: str = ""
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class ReviewGateClosed(RunEvent):
    TYPE = "review-gate-closed"
    RECORD_ONLY = True


@dataclass(frozen=True, kw_only=True)
class ReviewBlocked(RunEvent):
    """The review keeps the stage open (un-advanced; its markdown is not ticked)."""

    TYPE = "review-block"
    level: str = "warn"
    stage_id: str = ""
    count: int | None = None
    costs: str | None = None


@dataclass(frozen=True, kw_only=True)
class ProtectedChanged(RunEvent):
    """Protected files changed since the stage began: the stage is blocked."""

    TYPE = "protected"
    level: str = "error"
    stage_id: str = ""
    files: list[str] = field(default_factory=list)


REVIEW_EVENTS: tuple[type[RunEvent], ...] = (
    ReviewStarted, ReviewFinished, ReviewRound, ReviewFinal, ReviewRecheck, ReviewDeferred, ReviewFixPass,
    ReviewResumed, ReviewGateOpened, ReviewGateAnswered, ReviewGateClosed, ReviewBlocked, ProtectedChanged,
)
BY_TYPE: dict[str, type[RunEvent]] = {cls.TYPE: cls for cls in REVIEW_EVENTS}
EVENT_TYPES.update(BY_TYPE)  # events.jsonl replays them as themselves on resume


# ------------------------------------------------------------------ reducer
def _stages(state: RunState, stage_id: str, status: str) -> list[StageState]:
    return [s.model_copy(update={"status": status}) if s.id == stage_id else s for s in state.stages]


def _blocked(state: RunState, event: ReviewBlocked | ProtectedChanged) -> Changes:
    stage_id = event.stage_id
    blocked = state.blocked_stages if stage_id in state.blocked_stages else [*state.blocked_stages, stage_id]
    return {"blocked_stages": blocked, "stages": _stages(state, stage_id, "blocked")}


def _gate_opened(state: RunState, event: ReviewGateOpened) -> Changes:
    return {"review_gate": ReviewGateState.model_validate(dict(event.gate))}


def _gate_closed(state: RunState, event: ReviewGateClosed) -> Changes:
    return {"review_gate": None}


REVIEW_HANDLERS: dict[type[RunEvent], Callable[..., Changes]] = {
    ReviewBlocked: _blocked, ProtectedChanged: _blocked, ReviewGateOpened: _gate_opened,
    ReviewGateClosed: _gate_closed,
}


# ------------------------------------------------------------------ notices
def review_notice(event: RunEvent, state: RunState) -> tuple[str, str, str] | None:
    """(notify event, title, text) for the review's out-of-band notifications."""
    stage = state.stage_state(getattr(event, "stage_id", "") or "")
    title = stage.title if stage else getattr(event, "stage_id", "")
    if isinstance(event, ReviewBlocked):
        return "review-block", f"Review blocked: {title}", "; ".join(filter(None, (event.message, event.costs)))
    if isinstance(event, ProtectedChanged):
        return "review-block", f"Protected files changed: {title}", ", ".join(event.files)
    if isinstance(event, ReviewGateOpened):
        text = f"{event.rows} finding(s) to decide (loop exit: {event.exit})"
        return "review-gate", f"Review gate: {title}", "; ".join(filter(None, (text, event.costs)))
    return None
