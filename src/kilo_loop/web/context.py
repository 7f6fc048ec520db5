"""What every dashboard route needs: the project, the run controller, the SSE hub, and the
redactor for what is read from disk — plus the refusals routes raise."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import click
import orjson
from starlette.responses import Response

from kilo_loop.errors import KiloLoopError
from kilo_loop.loop.commands import Refusal
from kilo_loop.redact import Redactor
from kilo_loop.run.layout import ProjectLayout, RunLayout
from kilo_loop.settings import Settings
from kilo_loop.web.controller import LiveRun, RunController
from kilo_loop.web.history import find_run
from kilo_loop.web.sse import EventHub

Mode = Literal["launcher", "direct"]


def _echo_to_terminal(message: str) -> None:
    click.echo(message, err=True)


class RequestRefused(KiloLoopError):
    """A request the dashboard will not carry out, and why: its kind (conflict, not found, invalid),
    never an HTTP status; web/errors.py answers it."""

    def __init__(self, refusal: Refusal, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal
        self.message = message


def conflict(message: str) -> RequestRefused:
    return RequestRefused(Refusal.CONFLICT, message)


def not_found(message: str) -> RequestRefused:
    return RequestRefused(Refusal.NOT_FOUND, message)


def invalid(message: str) -> RequestRefused:
    return RequestRefused(Refusal.INVALID, message)


def json_response(value: Any, status: int = 200) -> Response:
    return Response(
        orjson.dumps(value),
        status_code=status,
        media_type="application/json",
        headers={"cache-control": "no-store"},
    )


@dataclass
class DashboardContext:
    project: Path
    base: Settings
    controller: RunController
    hub: EventHub
    redactor: Redactor
    mode: Mode = "launcher"
    # Tells the operator at the terminal what the dashboard changed that will run as them
    # (verify commands, custom instructions); the command line points it at its console.
    notice: Callable[[str], None] = _echo_to_terminal
    # Revert and controls take turns: a resume must not start an iteration mid-revert.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def layout(self) -> ProjectLayout:
        return ProjectLayout(self.project)

    @property
    def live(self) -> LiveRun | None:
        return self.controller.live

    def redact(self, value: Any) -> Any:
        return self.redactor.redact_value(value)

    def announce(self, what: str, text: str) -> None:
        """`dashboard set <what>: <text>` on the terminal, redacted; an empty text reads as cleared."""
        shown = self.redactor.redact(text.strip()) if text.strip() else "(cleared)"
        self.notice(f"dashboard set {what}: {shown}")

    def live_run(self, active_only: bool = True) -> LiveRun:
        live = self.controller.live
        if live is None or (active_only and live.finished):
            raise conflict("no run is active")
        return live

    def run_layout(self, run_id: str) -> RunLayout:
        """The run's files: the live run's, or a saved run's (id checked before it becomes a path)."""
        live = self.controller.live
        if live is not None and run_id == live.run_id:
            return live.handle.layout
        return find_run(self.layout, run_id)  # RunNotFound is answered 404 (web/errors.py)

    def redactor_for(self, run_id: str) -> Redactor:
        live = self.controller.live
        return live.handle.redactor if live is not None and live.run_id == run_id else self.redactor
