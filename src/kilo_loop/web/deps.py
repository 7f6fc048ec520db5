"""What a route is handed, as FastAPI dependencies: the dashboard's context (kept on the app's state
by `create_app`) and the run a command is for. Routes are module-level functions that declare what
they need; nothing is captured in a closure."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from kilo_loop.web.context import DashboardContext
from kilo_loop.web.controller import LiveRun


def dashboard_context(request: Request) -> DashboardContext:
    ctx = request.app.state.dashboard
    assert isinstance(ctx, DashboardContext)
    return ctx


Ctx = Annotated[DashboardContext, Depends(dashboard_context)]


def active_run(ctx: Ctx) -> LiveRun:
    """The run a command steers; 409 when none is active."""
    return ctx.live_run()


ActiveRun = Annotated[LiveRun, Depends(active_run)]
