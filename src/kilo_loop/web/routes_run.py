"""The active run: its snapshot, its live event stream, and the controls that steer it
(pause/resume/abort/stop/shared context, answers to questions, revert to a checkpoint)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query
from starlette.responses import Response, StreamingResponse

from kilo_loop.checkpoint.store import RevertResult, revert_to_checkpoint
from kilo_loop.loop.commands import CommandRefused, Revert, SendNote, SubmitAnswers, WithdrawNote, command_for
from kilo_loop.run.control import AnswerItem
from kilo_loop.web.context import DashboardContext, conflict, invalid, json_response
from kilo_loop.web.controller import LiveRun
from kilo_loop.web.deps import ActiveRun, Ctx
from kilo_loop.web.schemas import AnswerRequest, ControlRequest, NoteRequest, RevertRequest
from kilo_loop.web.sse import event_stream, parse_last_event_id


def idle_state(ctx: DashboardContext) -> dict[str, Any]:
    return {"status": "idle", "idle": True, "running": False, "seq": 0, "project": str(ctx.project)}


def _revert_payload(result: RevertResult) -> dict[str, Any]:
    return {
        "ok": True,
        "iteration": result.iteration,
        "restored": list(result.restored),
        "deleted": list(result.deleted),
        "kept": list(result.kept),
        "missing": list(result.missing),
        "forced": result.forced,
    }


def _steerable(ctx: DashboardContext) -> LiveRun:
    """The live run, or a 409 that says the run is over (a note to it would reach no agent)."""
    live = ctx.live_run(active_only=False)
    if live.finished:
        raise conflict(f"run {live.run_id} has finished ({live.state.status}): a note would reach no agent; "
                       "--resume it or start a new run")
    return live


Source = Annotated[str, Query(max_length=40, pattern=r"^[a-z-]+$")]

router = APIRouter(prefix="/api")


@router.get("/state", summary="Current run snapshot ({status: 'idle', idle: true} when no run is active)")
async def get_state(ctx: Ctx) -> Response:
    live = ctx.live
    body = live.snapshot() if live is not None else idle_state(ctx)
    return json_response({**body, "mode": ctx.mode})


@router.get(
    "/events",
    summary="SSE stream of log lines (id = seq) and state changes",
    response_class=StreamingResponse,
)
async def get_events(
    ctx: Ctx,
    after: Annotated[str | None, Query(max_length=20, description="replay events after this seq")] = None,
    run: Annotated[str | None, Query(max_length=128, description="the run the client shows")] = None,
    last_event_id: Annotated[str | None, Header(max_length=20)] = None,
) -> StreamingResponse:
    seen = parse_last_event_id(last_event_id, after)
    return StreamingResponse(
        event_stream(ctx.hub, seen, run),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


@router.post("/control", summary="pause | resume | abort-after-current | stop | set-shared-context")
async def post_control(body: ControlRequest, live: ActiveRun) -> Response:
    await live.ask(command_for(body.action, body.value))
    state = live.state
    return json_response(
        {"ok": True, "action": body.action, "paused": state.paused, "sharedContext": state.shared_context}
    )


@router.post("/answer", summary="Answer the pending questions; the answers go into the next session")
async def post_answer(body: AnswerRequest, live: ActiveRun) -> Response:
    pending = live.state.pending_questions
    if not pending or live.answered is pending:
        raise conflict("no question is waiting for an answer")
    items = tuple(
        AnswerItem(a.question, a.answer.strip(), "dashboard") for a in body.answers if a.answer.strip()
    )
    if not items:
        raise invalid("every answer is empty: type an answer or pick an option")
    live.answered = pending  # a double click sends nothing twice
    try:
        await live.ask(SubmitAnswers(items))
    except CommandRefused:
        live.answered = None
        raise
    return json_response({"ok": True, "answers": len(items)})


@router.post("/notes", summary="A note to the agent: queued, then delivered with its next model request")
async def post_note(body: NoteRequest, ctx: Ctx, source: Source = "dashboard") -> Response:
    reply = await _steerable(ctx).ask(SendNote(body.text, source))
    return json_response({"ok": True, **reply.result}, status=201)


@router.post("/notes/{note_id}/withdraw", summary="Withdraw a note that is still queued")
async def withdraw_note(note_id: str, ctx: Ctx, source: Source = "dashboard") -> Response:
    reply = await _steerable(ctx).ask(WithdrawNote(note_id[:32], source))
    return json_response({"ok": True, **reply.result})


@router.post("/revert", summary="Restore the checkpoint taken before iteration N (destructive)")
async def post_revert(body: RevertRequest, ctx: Ctx) -> Response:
    live = ctx.live
    run_id = body.run or (live.run_id if live is not None else None)
    if run_id is None:
        raise conflict("no run is active: name the saved run with 'run'")
    layout = ctx.run_layout(run_id)
    if live is not None and not live.finished:
        # The live run decides whether a revert is safe now (never mid-session, whatever run it
        # names) and records it as one of its own events.
        result = (await live.ask(Revert(body.iteration, run_id, body.force))).result
    else:
        async with ctx.lock:
            result = await asyncio.to_thread(
                revert_to_checkpoint, ctx.project, layout.checkpoints, body.iteration, body.force
            )
    return json_response(ctx.redactor_for(run_id).redact_value(_revert_payload(result)))
