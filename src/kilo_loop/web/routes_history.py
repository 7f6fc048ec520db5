"""Saved runs: the list, one run paged by iteration, its reports, checkpoints and diffs.
Everything read from disk goes through the run's redactor before it is sent."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from starlette.responses import PlainTextResponse, Response

from kilo_loop.checkpoint.store import CheckpointError
from kilo_loop.run.layout import RUN_ID_PATTERN, RunLayout
from kilo_loop.run.receipts import stage_receipts
from kilo_loop.run.state import RunState
from kilo_loop.web import history
from kilo_loop.web.context import DashboardContext, conflict, json_response, not_found
from kilo_loop.web.deps import Ctx
from kilo_loop.web.schemas import MAX_ITERATION_NUMBER
from kilo_loop.web.snapshot import compact_state

RunId = Annotated[
    str, Path(min_length=1, max_length=128, pattern=RUN_ID_PATTERN.pattern, description="a run id (or last)")
]
Iteration = Annotated[int, Path(ge=1, le=MAX_ITERATION_NUMBER, description="iteration number, from 1")]
MARKDOWN = "text/markdown; charset=utf-8"


def _text(body: str, media_type: str = MARKDOWN, filename: str | None = None) -> Response:
    headers = {"cache-control": "no-store"}
    if filename:
        headers["content-disposition"] = f'attachment; filename="{filename}"'
    return PlainTextResponse(body, media_type=media_type, headers=headers)


async def _off_loop(fn: Any, *args: Any) -> Any:
    """Disk reads that can be large run beside the loop; a missing run or checkpoint is a 404 (a
    CheckpointError of a revert is a conflict, hence the one mapping of its own here)."""
    try:
        return await asyncio.to_thread(fn, *args)
    except CheckpointError as exc:
        raise not_found(str(exc)) from exc


router = APIRouter(prefix="/api")


async def state_wire(ctx: DashboardContext, layout: RunLayout) -> dict[str, Any]:
    """The live run's state from memory (read on the loop: it changes there), else from disk."""
    live = ctx.live
    if live is not None and live.run_id == layout.run_id:
        wire = live.handle.state.wire()
    else:
        wire = await _off_loop(history.read_state_wire, layout)
    redacted = ctx.redactor_for(layout.run_id).redact_value(wire)
    assert isinstance(redacted, dict)
    return redacted


@router.get("/runs", summary="List saved runs, newest first")
async def list_runs(ctx: Ctx) -> Response:
    runs = await _off_loop(history.list_runs, ctx.layout, ctx.redact)
    return json_response({"runs": runs, "activeRunId": ctx.live.run_id if ctx.live else None})


@router.get("/runs/{run_id}", summary="Load a saved run (with its log); iterations paged by offset/limit")
async def get_run(
    ctx: Ctx,
    run_id: RunId,
    offset: Annotated[int | None, Query(ge=0, le=MAX_ITERATION_NUMBER)] = None,
    limit: Annotated[int | None, Query(ge=1, le=history.MAX_PAGE)] = None,
) -> Response:
    layout = ctx.run_layout(run_id)
    wire = await state_wire(ctx, layout)
    known = history.known_iterations(wire)
    start, end = history.page_bounds(len(known), offset, limit)
    page = await _off_loop(history.page_iterations, layout, known, start, end)
    tail = await _off_loop(history.log_tail, layout)
    redact = ctx.redactor_for(layout.run_id).redact_value
    body = compact_state({**wire, "iterations": [], "logTail": redact(tail)})
    body.update(
        iterations=redact(page),
        iterationsTotal=len(known),
        iterationsOffset=start,
        limit=end - start,
        saved=True,
        running=bool(ctx.live and ctx.live.run_id == layout.run_id and not ctx.live.finished),
    )
    return json_response(body)


@router.get(
    "/runs/{run_id}/report/{iteration}",
    summary="Iteration report (markdown)",
    response_class=PlainTextResponse,
)
async def get_iteration_report(ctx: Ctx, run_id: RunId, iteration: Iteration) -> Response:
    layout = ctx.run_layout(run_id)
    text = await _off_loop(history.iteration_report_md, layout, iteration)
    return _text(ctx.redactor_for(layout.run_id).redact(text))


@router.get(
    "/runs/{run_id}/export",
    summary="Full run report (markdown download)",
    response_class=PlainTextResponse,
)
async def export_report(ctx: Ctx, run_id: RunId) -> Response:
    layout = ctx.run_layout(run_id)
    live = ctx.live
    state: RunState | None = (
        live.handle.state if live is not None and live.run_id == layout.run_id else None
    )
    try:
        text = await _off_loop(history.run_report, layout, state)
    except ValueError as exc:
        raise not_found(f"cannot build the report of run {layout.run_id}: {exc}") from exc
    redacted = ctx.redactor_for(layout.run_id).redact(text)
    return _text(redacted, filename=f"kilo-loop-{layout.run_id}-report.md")


@router.get(
    "/runs/{run_id}/receipts",
    summary="A receipt per stage (iterations, duration, tokens, cost, retries, verify, review) and the budget",
)
async def get_receipts(ctx: Ctx, run_id: RunId) -> Response:
    layout = ctx.run_layout(run_id)
    live = ctx.live
    if live is not None and live.run_id == layout.run_id:
        state, budget = live.handle.state, history.budget_of(live.handle.settings)
    else:
        state, budget = await _off_loop(history.read_state, layout), None
    receipts = [receipt.wire() for receipt in stage_receipts(state)]
    body = {"runId": layout.run_id, "stages": receipts, "budget": budget}
    return json_response(ctx.redactor_for(layout.run_id).redact_value(body))


@router.get(
    "/runs/{run_id}/diff/{iteration}",
    summary="Checkpoint patch captured before iteration N",
    response_class=PlainTextResponse,
)
async def get_diff(ctx: Ctx, run_id: RunId, iteration: Iteration) -> Response:
    layout = ctx.run_layout(run_id)
    text = await _off_loop(history.checkpoint_patch, layout, iteration)
    return _text(ctx.redactor_for(layout.run_id).redact(text), "text/x-diff; charset=utf-8")


async def checkpoints_of(ctx: DashboardContext, run_id: str) -> Response:
    layout = ctx.run_layout(run_id)
    found = await _off_loop(history.checkpoint_list, layout)
    return json_response({"runId": layout.run_id, "checkpoints": found})


@router.get("/checkpoints", summary="Active run's checkpoints (?run=<id> for a saved run)")
async def get_checkpoints(
    ctx: Ctx,
    run: Annotated[
        str | None, Query(min_length=1, max_length=128, pattern=RUN_ID_PATTERN.pattern)
    ] = None,
) -> Response:
    run_id = run or (ctx.live.run_id if ctx.live else None)
    if run_id is None:
        raise conflict("no run is active: pass ?run=<id>")
    return await checkpoints_of(ctx, run_id)


@router.get("/runs/{run_id}/checkpoints", summary="Saved run's checkpoints")
async def get_run_checkpoints(ctx: Ctx, run_id: RunId) -> Response:
    return await checkpoints_of(ctx, run_id)
