"""`kilo-loop mcp`: serve this project's loop to a chat agent over MCP on stdio."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click

from kilo_loop.git import project_root


@click.command(help="Serve the loop to a chat agent over MCP (stdio): plans, budgeted runs, questions, notes, "
                    "reports.\n\nTools: list_plans, start_run (needs max_cost_usd or max_tokens), run_status, "
                    "wait_for_change, answer_question, send_note, pause, resume, stop, report; resources "
                    "kilo-loop://runs/{id}/report and /receipts.")
@click.option("-C", "--project", type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="repository (default: cwd's git root)")
@click.option("--transport", type=click.Choice(["serve", "run"]), help="how kilo/opencode runs are driven")
@click.option("--sandbox", type=click.Choice(["auto", "bwrap", "off"]), help="the jail around the agent")
def mcp_command(project: Path | None, transport: str | None, sandbox: str | None) -> None:
    from kilo_loop.mcp_server.desk import Desk
    from kilo_loop.mcp_server.server import build_server

    values: dict[str, Any] = {"dashboard": False, "confirm": False}
    for key, value in (("transport", transport), ("sandbox", sandbox)):
        if value is not None:
            values[key] = value
    desk = Desk(project_root(project), values)
    asyncio.run(_serve(desk, build_server(desk)))


async def _serve(desk: Any, server: Any) -> None:
    try:
        await server.run_stdio_async()
    finally:
        await desk.aclose()  # a run still going is stopped and saved when the chat client goes away
