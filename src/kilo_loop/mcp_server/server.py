"""`kilo-loop mcp`: the loop as an MCP server on stdio (the official `mcp` SDK), so a chat agent can list
plans, start a budgeted run, wait on it, answer its questions, send notes, pause or stop it and read its
report and receipts. The tools are thin: each calls the `Desk` and turns a `DeskRefused` (or any
`KiloLoopError`) into a tool error the model reads; a malformed call is the SDK's validation error.

stdout carries the protocol: nothing else may print there (the runs' own lines go to events.jsonl).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import Field

from kilo_loop import __version__
from kilo_loop.errors import KiloLoopError
from kilo_loop.mcp_server.desk import CONTROLS, MAX_WAIT_S, Budget, Desk

T = TypeVar("T")
RunId = Annotated[str | None, Field(description="the run's id; omitted: the run started here (or the last saved)")]

INSTRUCTIONS = """kilo-loop runs a coding agent in a loop against this project's git repository until a plan's
stages are verified done, guarding destructive commands and checkpointing every iteration. Typical use:
list_plans -> start_run(plan, max_cost_usd=…) -> wait_for_change (repeat with the returned seq) ->
answer_question when status is waiting-answer -> send_note to steer the agent -> report."""


async def _tool(call: Callable[[], Awaitable[T]]) -> T:
    try:
        return await call()
    except KiloLoopError as exc:
        raise ToolError(str(exc)) from None


def build_server(desk: Desk) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("kilo-loop", version=__version__, instructions=INSTRUCTIONS)

    @server.tool(description="The plans (goal files) of the project, with their stages and state.")
    async def list_plans() -> list[dict[str, Any]]:
        return await _tool(_now(desk.list_plans))

    @server.tool(description="Start a run of a plan (a path relative to the project, from list_plans). Needs a "
                             "budget: max_cost_usd or max_tokens. The same checks, guard and jail as the dashboard.")
    async def start_run(
        plan: Annotated[str, Field(min_length=1, max_length=1024)],
        max_cost_usd: Annotated[float | None, Field(gt=0)] = None,
        max_tokens: Annotated[int | None, Field(gt=0)] = None,
        iterations: Annotated[int | None, Field(ge=1, le=1000)] = None,
        runtime: Annotated[str | None, Field(description="kilo, opencode, claude, codex, cursor, gemini")] = None,
        dry_run: Annotated[bool, Field(description="a simulated agent: no model calls, no cost")] = False,
    ) -> dict[str, Any]:
        async def start() -> dict[str, Any]:
            live = desk.start_run(plan, Budget(max_cost_usd, max_tokens, iterations), runtime, dry_run)
            return desk.status(live.run_id)
        return await _tool(start)

    @server.tool(description="The run's status: stages, pending questions, notes, tokens and cost, and its seq.")
    async def run_status(run_id: RunId = None) -> dict[str, Any]:
        return await _tool(_now(lambda: desk.status(run_id)))

    @server.tool(description="Wait until the run changes after `since_seq` (or ends), at most timeout_s seconds; "
                             "returns its status, the new seq and the new log lines.")
    async def wait_for_change(
        since_seq: Annotated[int, Field(ge=0)] = 0,
        timeout_s: Annotated[float, Field(gt=0, le=MAX_WAIT_S)] = 60.0,
        run_id: RunId = None,
    ) -> dict[str, Any]:
        return await _tool(lambda: desk.wait_for_change(run_id, since_seq, timeout_s))

    @server.tool(description="Answer the run's pending questions, one answer per question, in order.")
    async def answer_question(
        answers: Annotated[list[str], Field(min_length=1, max_length=50)], run_id: RunId = None,
    ) -> dict[str, Any]:
        return await _tool(lambda: desk.answer(run_id, answers))

    @server.tool(description="A note to the working agent (at most 8 KB): into its live session at once under "
                             "the serve transport, else first thing in the next iteration's prompt.")
    async def send_note(text: Annotated[str, Field(max_length=65_536)], run_id: RunId = None) -> dict[str, Any]:
        return await _tool(lambda: desk.note(run_id, text))

    @server.tool(description="Pause the run before its next iteration (resume with resume).")
    async def pause(run_id: RunId = None) -> dict[str, Any]:
        return await _tool(lambda: desk.control(run_id, "pause", CONTROLS["pause"]))

    @server.tool(description="Resume a paused run.")
    async def resume(run_id: RunId = None) -> dict[str, Any]:
        return await _tool(lambda: desk.control(run_id, "resume", CONTROLS["resume"]))

    @server.tool(description="Stop the run now: the agent's session is ended, the state and report are saved.")
    async def stop(run_id: RunId = None) -> dict[str, Any]:
        return await _tool(lambda: desk.control(run_id, "stop", CONTROLS["stop"]))

    @server.tool(description="The run's report (markdown): stages, iterations, verify results, notes.")
    async def report(run_id: RunId = None) -> str:
        return await _tool(_now(lambda: desk.report(run_id)))

    @server.resource("kilo-loop://runs/{run_id}/report", mime_type="text/markdown",
                     description="A run's report (run_id: an id, or last)")
    def report_resource(run_id: str) -> str:
        return _resource(lambda: desk.report(run_id))

    @server.resource("kilo-loop://runs/{run_id}/receipts", mime_type="application/json",
                     description="A run's stage receipts: what verified each stage (run_id: an id, or last)")
    def receipts_resource(run_id: str) -> str:
        return _resource(lambda: json.dumps(desk.receipts(run_id), indent=2))

    return server


def _now(call: Callable[[], T]) -> Callable[[], Awaitable[T]]:
    async def run() -> T:
        return call()
    return run


def _resource(call: Callable[[], str]) -> str:
    try:
        return call()
    except KiloLoopError as exc:
        raise ResourceError(str(exc)) from None
