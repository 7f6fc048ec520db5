"""The launcher: discover plans, edit their verify commands and completion, trash them, and
start a run. Plan names from the client become paths only through `resolve_plan_file`."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from kilo_loop.web import launcher
from kilo_loop.web.context import DashboardContext, conflict, json_response
from kilo_loop.web.deps import Ctx
from kilo_loop.web.schemas import DoneRequest, GlobalVerifyRequest, PlanRequest, StartRequest, VerifyRequest

router = APIRouter(prefix="/api")


def global_verify(ctx: DashboardContext) -> str | None:
    if ctx.controller.global_verify is not None:
        return ctx.controller.global_verify or None
    return ctx.base.verify


def defaults(ctx: DashboardContext) -> dict[str, Any]:
    base = ctx.base
    return {
        "iterations": base.iterations,
        "agent": base.agent,
        "hitl": base.hitl,
        "dryRun": base.dry_run,
        "promptExtraFromCli": bool(base.prompt_extra),
    }


@router.get("/goals", summary="Discoverable plans/goals with per-stage completion and last run")
async def get_goals(ctx: Ctx) -> Response:
    goals = await asyncio.to_thread(launcher.list_goals, ctx.project, ctx.base.goal)
    live = ctx.live
    return json_response(
        ctx.redact(
            {
                "goals": goals,
                "globalVerify": global_verify(ctx),
                "defaults": defaults(ctx),
                "project": str(ctx.project),
                "busy": ctx.controller.busy,
                "activeRunId": live.run_id if live else None,
            }
        )
    )


@router.post(
    "/goals/verify", summary="Set a stage's verify (stageIndex omitted = plan-wide, JSON goals only)"
)
async def post_verify(body: VerifyRequest, ctx: Ctx) -> Response:
    await asyncio.to_thread(
        launcher.set_plan_verify, ctx.project, body.file, body.stage_index, body.verify
    )
    where = "plan-wide" if body.stage_index is None else f"stage {body.stage_index + 1}"
    ctx.announce(f"the verify command of {body.file} ({where})", body.verify)
    return json_response({"ok": True, "file": body.file, "stageIndex": body.stage_index})


@router.post("/goals/verify-global", summary="Default verify for all runs (.kilocode-loop/config.json)")
async def post_verify_global(body: GlobalVerifyRequest, ctx: Ctx) -> Response:
    try:
        now = await asyncio.to_thread(launcher.set_global_verify, ctx.project, body.verify)
    except OSError as exc:
        raise conflict(f"cannot write config.json: {exc.strerror or exc}") from exc
    ctx.controller.global_verify = now or ""
    ctx.announce("the default verify command for every run (.kilocode-loop/config.json)", now or "")
    return json_response({"ok": True, "verify": now})


@router.post("/goals/done", summary="Mark every stage done (done: true) or reopen them all (done: false)")
async def post_done(body: DoneRequest, ctx: Ctx) -> Response:
    changed = await asyncio.to_thread(launcher.set_plan_done, ctx.project, body.file, body.done)
    return json_response({"ok": True, "file": body.file, "changed": changed})


@router.post("/goals/trash", summary="Move a plan to .kilocode-loop/trash/ (recoverable)")
async def post_trash(body: PlanRequest, ctx: Ctx) -> Response:
    live = ctx.live
    if live is not None and not live.finished and live.handle.goal.source is not None:
        target = launcher.resolve_plan(ctx.project, body.file)
        if target == live.handle.goal.source.resolve():
            raise conflict("this plan is being run: stop the run before deleting it")
    moved = await asyncio.to_thread(launcher.trash, ctx.project, body.file)
    return json_response({"ok": True, "file": body.file, "trashedTo": moved})


@router.post(
    "/start", summary="Start a run from the launcher (409 while a run is active)", status_code=201
)
async def post_start(body: StartRequest, ctx: Ctx) -> Response:
    live = ctx.controller.start(body)
    if body.prompt_extra and body.prompt_extra.strip():
        ctx.announce(f"a custom instruction for run {live.run_id}", body.prompt_extra)
    return json_response({"ok": True, "runId": live.run_id}, status=201)
