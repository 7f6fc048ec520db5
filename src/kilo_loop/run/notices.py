"""Which events the operator hears about out of band (webhook, ntfy, Slack, Telegram):
a pure mapping from an event and the state it produced to a notice. The notifier is one
more subscriber of the bus; the loop never calls it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kilo_loop.run.events import (
    GuardBlocked,
    ProtectedChanged,
    QuotaWait,
    ReviewBlocked,
    ReviewGateOpened,
    RunEvent,
    RunFinished,
    StatusChanged,
    VerifyFinished,
    Warned,
)
from kilo_loop.run.state import RunState


@dataclass(frozen=True)
class Notice:
    event: str  # question | model-retry | verify-failed | guard | budget | stalled | run-done | quota
    title: str
    text: str


def notice_for(event: RunEvent, state: RunState) -> Notice | None:
    notice = _notice(event, state)
    if notice is None:
        return None
    return Notice(notice.event, f"{notice.title} — {state.goal_title}", notice.text)


def _notice(event: RunEvent, state: RunState) -> Notice | None:
    review = _review_notice(event, state)
    if review is not None:
        return review
    if isinstance(event, Warned) and event.about == "retry":
        return Notice("model-retry", f"Retrying iteration {state.iteration}", f"{event.reason} (attempt {event.attempt})")
    if isinstance(event, Warned) and event.about == "unasked":
        return Notice("question", "The agent asked a question (run ending)", event.reason or "")
    if isinstance(event, VerifyFinished) and not event.passed and event.stage_id:
        stage = state.stage_state(event.stage_id)
        why = "timed out" if event.exit_code is None else f"exited {event.exit_code}"
        return Notice("verify-failed", f"Verify failed: {stage.title if stage else event.stage_id}",
                      f"`{event.command}` {why}")
    if isinstance(event, QuotaWait):
        return Notice("quota", "Usage limit reached: waiting for the reset", event.message)
    if isinstance(event, GuardBlocked):
        return Notice("guard", "Guard blocked a command", event.reason)
    if isinstance(event, StatusChanged):
        return _status_notice(event, state)
    if isinstance(event, RunFinished):
        return Notice("run-done", f"Run {event.status}", state.stop_reason)
    return None


def _review_notice(event: RunEvent, state: RunState) -> Notice | None:
    """The review's out-of-band notices: a stage held back, protected files changed, a gate to answer."""
    if not isinstance(event, ReviewBlocked | ProtectedChanged | ReviewGateOpened):
        return None
    stage = state.stage_state(event.stage_id)
    title = stage.title if stage else event.stage_id
    if isinstance(event, ReviewBlocked):
        return Notice("review-block", f"Review blocked: {title}", "; ".join(filter(None, (event.message, event.costs))))
    if isinstance(event, ProtectedChanged):
        return Notice("review-block", f"Protected files changed: {title}", ", ".join(event.files))
    text = f"{event.rows} finding(s) to decide (loop exit: {event.exit})"
    return Notice("review-gate", f"Review gate: {title}", "; ".join(filter(None, (text, event.costs))))


def _status_notice(event: StatusChanged, state: RunState) -> Notice | None:
    if event.status == "waiting-answer":
        return Notice("question", "The agent needs a decision", "\n".join(q.question for q in state.pending_questions))
    if event.status == "stopped-budget":
        return Notice("budget", "Budget reached", event.reason or "")
    if event.status == "stalled":
        return Notice("stalled", "Run stalled", event.reason or "")
    return None


def notice_subscriber(
    state: Callable[[], RunState], send: Callable[[str, str, str], None]
) -> Callable[[RunEvent], None]:
    def on_event(event: RunEvent) -> None:
        notice = notice_for(event, state())
        if notice is not None:
            send(notice.event, notice.title, notice.text)

    return on_event
