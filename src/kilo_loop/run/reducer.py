"""The one writer of RunState: `reduce(state, event) -> state`, a pure function.

The loop never changes the state; it emits events, and the recorder folds each one in
here. state.json is a snapshot of the result (with the `seq` of the last event folded in),
so a resume loads the snapshot and replays the tail of events.jsonl past it, and replaying
a whole events.jsonl from nothing gives the same state again.

The input is never modified: changed parts are copied, unchanged parts are shared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from kilo_loop.run import circles
from kilo_loop.run.controls import ControlAction
from kilo_loop.run.events import (
    AnswerReceived,
    CircleFound,
    CirclesObserved,
    ControlChanged,
    GuardBlocked,
    IterationFinished,
    IterationReported,
    IterationStarted,
    NoteAcknowledged,
    NoteDelivered,
    NoteQueued,
    NoteWithdrawn,
    ProtectedChanged,
    QuestionAsked,
    QuestionUnanswered,
    QuotaWait,
    ReviewBaseline,
    ReviewBlocked,
    ReviewGateClosed,
    ReviewGateOpened,
    ReviewHeld,
    ReviewRound,
    RunEvent,
    RunFinished,
    SecretsMasked,
    SessionEndedEarly,
    StageBlocked,
    StageDone,
    StateOpened,
    StatusChanged,
    TamperFound,
    UsageCounted,
    VerifyFinished,
    Warned,
)
from kilo_loop.run.state import (
    ITERATIONS_KEPT,
    LOG_TAIL_LINES,
    IterationFacts,
    IterationSummary,
    Note,
    Question,
    RetryState,
    ReviewGateState,
    ReviewStageState,
    RunState,
    StageState,
    Totals,
)
from kilo_loop.run.status import Phase

E = TypeVar("E", bound=RunEvent)
Changes = dict[str, Any]
_UNFINISHED = ("running", "retrying")


def reduce(state: RunState | None, event: RunEvent) -> RunState:
    """The state after `event`. Before the first StateOpened there is no state to change."""
    if isinstance(event, StateOpened):
        return _opened(state, event)
    if state is None:
        raise ValueError(f"event {event.type!r} (seq {event.seq}) before the run's state-init event")
    handler = _HANDLERS.get(type(event))
    changes: Changes = handler(state, event) if handler is not None else {}
    changes["seq"] = event.seq
    if not event.RECORD_ONLY:
        changes["log_tail"] = _tail(state.log_tail, event.to_wire())
    return state.model_copy(update=changes)


def replay(events: list[RunEvent], state: RunState | None = None) -> RunState | None:
    for event in events:
        state = reduce(state, event)
    return state


def settled_row(state: RunState, facts: IterationFacts, iteration: int | None = None) -> IterationSummary:
    """The iteration's final row: what its events built (stage, start, tokens and cost, retries) with
    what the loop learned of it. The loop reports this row in `iteration-report` (the row as
    NN-report.json holds it), and folding that event puts it in the state."""
    number = state.iteration if iteration is None else iteration
    row = state.current_iteration()
    if row is None or row.iteration != number:
        row = IterationSummary(iteration=number)
    update = {f.name: getattr(facts, f.name) for f in dataclasses.fields(facts)}
    update.update(files_changed=list(facts.files_changed), questions=list(facts.questions),
                  warnings=list(facts.warnings), tamper_findings=list(facts.tamper_findings))
    return row.model_copy(update=update)


def header_wire(state: RunState) -> dict[str, Any]:
    """What StateOpened carries: the state without its history (iterations, log tail, seq)."""
    # ``masked`` only once something was, as in state.json: a run without known secrets keeps its old shape
    hidden = {"iterations", "log_tail", "seq"} | state.empty_optional()
    return state.model_dump(mode="json", by_alias=True, exclude=hidden)


# ------------------------------------------------------------------ helpers
def _tail(tail: list[dict[str, Any]], wire: dict[str, Any]) -> list[dict[str, Any]]:
    kept = tail[-(LOG_TAIL_LINES - 1):] if len(tail) >= LOG_TAIL_LINES else tail
    return [*kept, wire]


def _stages(state: RunState, stage_id: str | None, status: str) -> list[StageState]:
    return [s.model_copy(update={"status": status}) if s.id == stage_id else s for s in state.stages]


def _with_current(state: RunState, update: Callable[[IterationSummary], Changes]) -> list[IterationSummary]:
    """The iterations with the running (last) one changed."""
    items = state.iterations
    if not items or items[-1].iteration != state.iteration:
        return items
    return [*items[:-1], items[-1].model_copy(update=update(items[-1]))]


def _interrupted(item: IterationSummary) -> IterationSummary:
    if item.outcome not in _UNFINISHED:
        return item
    return item.model_copy(update={"outcome": "interrupted", "error": "the loop process ended during this iteration"})


# ------------------------------------------------------------------ handlers
# A resume is a fresh start for the live flags and the stop conditions (the guard note, the blocked
# stages, the feedback and the review's budgets are kept): a run recorded before this was the
# reducer's rule had these already reset in its header.
_RESUMED: Changes = {
    "status": Phase.STARTING, "finished_at": None, "stop_reason": "", "resume_command": "", "pending_questions": [],
    "paused": False, "abort_requested": False, "stale_iterations": 0, "consecutive_guard_blocks": 0,
    "retry": RetryState(), "current_stage_id": None, "quota_stop": "",
}


def _opened(state: RunState | None, event: StateOpened) -> RunState:
    header = RunState.model_validate(dict(event.state))
    items = [] if state is None else state.iterations
    changes: Changes = {}
    if event.resumed:
        items = [_interrupted(item) for item in items]
        changes = dict(_RESUMED)
    tail = [] if state is None else state.log_tail
    files = list(dict.fromkeys(f for item in items for f in item.files_changed))
    return header.model_copy(update={**changes, "iterations": items, "log_tail": tail, "seq": event.seq,
                                     "first_iteration": header.iteration + 1, "run_files": files})


def _status(state: RunState, event: StatusChanged) -> Changes:
    changes: Changes = {"status": event.status}
    if event.reason:
        changes["stop_reason"] = event.reason
    if event.status != "waiting-answer" and state.pending_questions:
        changes["pending_questions"] = []
    if event.status != "waiting-quota" and state.quota_until is not None:
        changes["quota_until"] = None
    return changes


def _iteration_started(state: RunState, event: IterationStarted) -> Changes:
    number = event.iteration or state.iteration + 1
    summary = IterationSummary(iteration=number, stage_id=event.stage_id, stage_title=event.stage_title,
                               started_at=event.ts)
    items = state.iterations
    items = [*items[:-1], summary] if items and items[-1].iteration == number else [*items, summary]
    return {"iteration": number, "current_stage_id": event.stage_id, "iterations": items[-ITERATIONS_KEPT:],
            "iterations_total": max(state.iterations_total, number, len(items)),
            "stages": _stages(state, event.stage_id, "in_progress")}


def _usage(state: RunState, event: UsageCounted) -> Changes:
    t = state.totals
    totals = Totals(tokens=t.tokens + event.tokens, input=t.input + event.input, output=t.output + event.output,
                    reasoning=t.reasoning + event.reasoning, cache_read=t.cache_read + event.cache_read,
                    cache_write=t.cache_write + event.cache_write, cost=round(t.cost + event.cost, 6))
    if event.review:  # a reviewer's session: the run's totals, not the implementer's row
        return {"totals": totals, "context_tokens": event.tokens}

    def add(item: IterationSummary) -> Changes:
        return {"tokens": item.tokens + event.tokens, "input_tokens": item.input_tokens + event.input,
                "output_tokens": item.output_tokens + event.output, "cost": round(item.cost + event.cost, 6),
                "context_tokens": event.tokens}

    return {"totals": totals, "context_tokens": event.tokens, "iterations": _with_current(state, add)}


def _reported(state: RunState, event: IterationReported) -> Changes:
    summary = IterationSummary.model_validate(dict(event.summary))
    items = state.iterations
    at = next((i for i in range(len(items) - 1, -1, -1) if items[i].iteration == summary.iteration), None)
    items = [*items, summary] if at is None else [*items[:at], summary, *items[at + 1:]]
    changes: Changes = {"iterations": items[-ITERATIONS_KEPT:], "retry": RetryState(),
                        "iterations_total": max(state.iterations_total, summary.iteration, len(items))}
    if summary.outcome not in (*_UNFINISHED, "guard"):
        if summary.guard_hits:  # calls refused before they ran (serve): one hit for the whole iteration
            changes["consecutive_guard_blocks"] = state.consecutive_guard_blocks + 1
        else:
            changes.update(consecutive_guard_blocks=0, guard_note="")
    if event.session_id is not None:
        changes["session_id"] = event.session_id or None
    if event.stale_iterations is not None:
        changes["stale_iterations"] = event.stale_iterations
    if state.unanswered and summary.outcome not in _UNFINISHED:
        changes["unanswered"] = []  # the prompt of this iteration told the agent about them
    known = set(state.run_files)
    fresh = [f for f in summary.files_changed if f not in known]
    if fresh:
        changes["run_files"] = [*state.run_files, *dict.fromkeys(fresh)]
    if state.circles.note:
        changes["circles"] = circles.note_read(state.circles, summary.iteration)
    return changes


def _finished(state: RunState, event: IterationFinished) -> Changes:
    return {} if event.percent is None else {"last_percent": event.percent}


def _stage_done(state: RunState, event: StageDone) -> Changes:
    done = set(state.completed_stages) | {event.stage_id}
    order = [s.id for s in state.stages]
    known = set(order)
    completed = [i for i in order if i in done] + [i for i in state.completed_stages if i not in known]
    if event.stage_id not in completed:
        completed.append(event.stage_id)
    return {"completed_stages": completed, "stages": _stages(state, event.stage_id, "done"),
            "blocked_stages": [s for s in state.blocked_stages if s != event.stage_id], "verify_feedback": "",
            "review_feedback": ""}


def _blocked(state: RunState, stage_id: str) -> Changes:
    blocked = state.blocked_stages if stage_id in state.blocked_stages else [*state.blocked_stages, stage_id]
    return {"blocked_stages": blocked, "stages": _stages(state, stage_id, "blocked")}


def _stage_blocked(state: RunState, event: StageBlocked) -> Changes:
    return _blocked(state, event.stage_id)


def _verify(state: RunState, event: VerifyFinished) -> Changes:
    if event.passed or not event.stage_id:
        return {}
    return {**_blocked(state, event.stage_id), "verify_feedback": event.feedback or ""}


def _guard(state: RunState, event: GuardBlocked) -> Changes:
    changes: Changes = {"guard_blocks": state.guard_blocks + 1}
    if not event.before_execution:
        changes["consecutive_guard_blocks"] = state.consecutive_guard_blocks + 1
    if event.note is not None:
        changes["guard_note"] = event.note
    return changes


def _question(state: RunState, event: QuestionAsked) -> Changes:
    question = Question(question=event.question, options=list(event.options))
    return {"pending_questions": [*state.pending_questions, question]}


def _answer(state: RunState, event: AnswerReceived) -> Changes:
    return {"answers": state.answers + 1}


def _unanswered(state: RunState, event: QuestionUnanswered) -> Changes:
    return {"unanswered": [*state.unanswered, Question(question=event.question)]}


def _prompt_extra(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


_CONTROLS: dict[ControlAction, Callable[[object], Changes]] = {
    ControlAction.PAUSE: lambda value: {"paused": bool(value)},
    ControlAction.RESUME: lambda value: {"paused": False},
    # a paused loop wakes up to end the run
    ControlAction.ABORT_AFTER_CURRENT: lambda value: {"abort_requested": bool(value), "paused": False},
    ControlAction.STOP: lambda value: {"paused": False, "stop_requested": True},
    ControlAction.SET_SHARED_CONTEXT: lambda value: {"shared_context": bool(value)},
    ControlAction.SET_PROMPT_EXTRA: lambda value: {"prompt_extra": _prompt_extra(value)},
}


def _control(state: RunState, event: ControlChanged) -> Changes:
    change = _CONTROLS.get(event.action)
    return {} if change is None else change(event.value)


def _review_blocked(state: RunState, event: ReviewBlocked | ProtectedChanged) -> Changes:
    changes = _blocked(state, event.stage_id)
    if event.feedback is not None:
        changes["review_feedback"] = event.feedback
    return changes


def _gate_opened(state: RunState, event: ReviewGateOpened) -> Changes:
    return {"review_gate": ReviewGateState.model_validate(dict(event.gate))}


def _gate_closed(state: RunState, event: ReviewGateClosed) -> Changes:
    return {"review_gate": None}


def _review_stage(state: RunState, stage_id: str, update: Changes) -> Changes:
    review = state.review_stages.get(stage_id) or ReviewStageState()
    return {"review_stages": {**state.review_stages, stage_id: review.model_copy(update=update)}}


def _review_round(state: RunState, event: ReviewRound) -> Changes:
    """One judged round of a stage's loop: the budget is the run's, the retries it used are never given
    back; a round after a loop that exited starts the counts of a new loop."""
    if not event.stage_id:
        return {}
    review = state.review_stages.get(event.stage_id) or ReviewStageState()
    counts = [] if review.exit else review.counts
    update: Changes = {"counts": [*counts, event.count], "rounds": review.rounds + 1,
                       "exit": "" if event.step == "retry" else event.step,
                       "retries": review.retries + (event.step == "retry")}
    if event.budget is not None:
        update["budget"] = event.budget
    return _review_stage(state, event.stage_id, update)


def _tamper(state: RunState, event: TamperFound) -> Changes:
    return {"review_feedback": event.feedback} if event.blocked and event.feedback else {}


def _review_baseline(state: RunState, event: ReviewBaseline) -> Changes:
    if not event.stage_id:
        return {}
    return _review_stage(state, event.stage_id, {"base_tree": event.tree or None,
                                                 "verify_before": event.verify_passed})


def _review_held(state: RunState, event: ReviewHeld) -> Changes:
    findings = [dict(f) for f in event.findings]
    held = _review_stage(state, event.stage_id, {"held": True, "findings": findings,
                                                 "exit": event.exit or "exhausted"})
    return {**held, **_blocked(state, event.stage_id)}


def _warned(state: RunState, event: Warned) -> Changes:
    if event.attempt is None:
        return {}
    reason, attempt = event.reason or "", event.attempt
    retry = RetryState(attempt=attempt, max_retries=event.max_retries or 0, reason=reason)
    items = _with_current(state, lambda _item: {"retries": attempt, "retry_reason": reason})
    return {"retry": retry, "iterations": items}


def _quota(state: RunState, event: QuotaWait) -> Changes:
    if event.stop:
        return {"quota_stop": event.stop}
    return {"quota_until": event.until}


def _masked(state: RunState, event: SecretsMasked) -> Changes:
    if not event.counts:
        return {}
    masked = dict(state.masked)
    for source, count in event.counts.items():
        if isinstance(count, int):  # not a count the redactor took for a PIN (a source named like `.env.secret`)
            masked[source] = masked.get(source, 0) + count
    return {"masked": masked}


def _run_finished(state: RunState, event: RunFinished) -> Changes:
    return {"finished_at": event.ts, "current_stage_id": None, "resume_command": event.resume}


def _note_queued(state: RunState, event: NoteQueued) -> Changes:
    note = Note(id=event.note_id, text=event.text, source=event.source, queued_at=event.ts)
    return {"notes": [*state.notes, note]}


def _notes_changed(state: RunState, ids: list[str], status: str, before: tuple[str, ...],
                   update: dict[str, Any]) -> Changes:
    """The notes named in `ids` moved to `status`, those (only) that were in a status of `before`."""
    wanted = set(ids)
    notes = [note.model_copy(update={"status": status, **update}) if note.id in wanted and note.status in before
             else note for note in state.notes]
    return {"notes": notes}


def _note_withdrawn(state: RunState, event: NoteWithdrawn) -> Changes:
    return _notes_changed(state, [event.note_id], "withdrawn", ("queued",), {})


def _note_delivered(state: RunState, event: NoteDelivered) -> Changes:
    return _notes_changed(state, event.note_ids, "delivered", ("queued",),
                          {"delivered_at": event.ts, "delivered_via": event.via, "iteration": event.iteration})


def _note_acknowledged(state: RunState, event: NoteAcknowledged) -> Changes:
    return _notes_changed(state, event.note_ids, "acknowledged", ("queued", "delivered"),
                          {"acknowledged_at": event.ts, "acknowledged_how": event.how})
def _circles_observed(state: RunState, event: CirclesObserved) -> Changes:
    return {"circles": circles.observed(
        state.circles, event.iteration or state.iteration, stage_id=event.stage_id, signature=event.signature,
        signature_text=event.signature_text, streak=event.streak, files_changed=list(event.files_changed),
        cost=event.cost, tree=event.tree, start_tree=event.start_tree,
        contents={path: list(ids) for path, ids in event.contents.items()}, oscillation=event.oscillation,
        progress=event.progress)}


def _circle_found(state: RunState, event: CircleFound) -> Changes:
    changes: Changes = {"circles": circles.found(state.circles, event.iteration or state.iteration, kind=event.kind,
                                                 step=event.step,
                                                 diagnosis=event.diagnosis, note=event.note)}
    if event.step == circles.STEP_FRESH:
        changes["session_id"] = None  # a shared session starts afresh
    return changes


def _ended_early(state: RunState, event: SessionEndedEarly) -> Changes:
    return {"circles": circles.ended_early(state.circles, event.iteration or state.iteration,
                                           saved_tokens=event.saved_tokens, saved_cost=event.saved_cost,
                                           note=event.note)}


def _handler(cls: type[E], fn: Callable[[RunState, E], Changes]) -> tuple[type[RunEvent], Callable[..., Changes]]:
    return cls, fn


_HANDLERS: dict[type[RunEvent], Callable[..., Changes]] = dict([
    _handler(ReviewBlocked, _review_blocked),
    _handler(ReviewRound, _review_round),
    _handler(ReviewHeld, _review_held),
    _handler(ReviewBaseline, _review_baseline),
    _handler(TamperFound, _tamper),
    _handler(ProtectedChanged, _review_blocked),
    _handler(ReviewGateOpened, _gate_opened),
    _handler(ReviewGateClosed, _gate_closed),
    _handler(StatusChanged, _status),
    _handler(IterationStarted, _iteration_started),
    _handler(UsageCounted, _usage),
    _handler(IterationReported, _reported),
    _handler(IterationFinished, _finished),
    _handler(StageDone, _stage_done),
    _handler(StageBlocked, _stage_blocked),
    _handler(VerifyFinished, _verify),
    _handler(GuardBlocked, _guard),
    _handler(QuestionAsked, _question),
    _handler(AnswerReceived, _answer),
    _handler(QuestionUnanswered, _unanswered),
    _handler(ControlChanged, _control),
    _handler(Warned, _warned),
    _handler(QuotaWait, _quota),
    _handler(RunFinished, _run_finished),
    _handler(SecretsMasked, _masked),
    _handler(NoteQueued, _note_queued),
    _handler(NoteWithdrawn, _note_withdrawn),
    _handler(NoteDelivered, _note_delivered),
    _handler(NoteAcknowledged, _note_acknowledged),
    _handler(CirclesObserved, _circles_observed),
    _handler(CircleFound, _circle_found),
    _handler(SessionEndedEarly, _ended_early),
])
