"""The main job: resolve everything that can fail before creating anything, then run.

Direct mode (`--goal` / `--goal-text`): the dashboard is bound first (a port in use stops
here, before any file is written), then the run goes with the console, the terminal keys
and the dashboard attached; `--keep-open` keeps the dashboard up afterwards until Ctrl+C.
Launcher mode (no goal): only the dashboard runs; runs start from `POST /api/start`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from kilo_loop.durations import format_duration
from kilo_loop.errors import KiloLoopError, report_error
from kilo_loop.goal.listing import format_plan_list
from kilo_loop.goal.registry import discover_plans, named_plans
from kilo_loop.review.preflight import ask_large_budget, large_estimate, needs_large_question
from kilo_loop.run.state import RunState
from kilo_loop.run.status import exit_code_for
from kilo_loop.runner import (
    AllStagesDone,
    Attach,
    RunHandle,
    RunPlan,
    SetupError,
    attach_terminal,
    execute_run,
    plan_run,
    resolve_project,
)
from kilo_loop.settings import Settings
from kilo_loop.ui.console import ConsoleView, make_console
from kilo_loop.ui.preflight import ask_start, render_preflight, scenario_rows, should_confirm

if TYPE_CHECKING:  # the dashboard stack (FastAPI, uvicorn) is imported only when the dashboard is on
    from kilo_loop.web.controller import RunHooks
    from kilo_loop.web.server import Dashboard

Say = Callable[[str], None]


def _confirmed(plan: RunPlan, dashboard: Dashboard | None) -> tuple[bool, int | None]:
    """The pre-flight box and `Start this run? [Y/n]` (or a new review retry budget); runs before
    anything is created."""
    console = make_console(no_color=plan.settings.no_color)
    state = plan.prepared.state
    rows = scenario_rows(plan.settings, plan.goal, plan.project, state.runtime,
                         dashboard.url if dashboard else None, state.agent)
    render_preflight(console, rows, plan.goal)
    return ask_start(input, review=plan.settings.review_on)


def _prepare_dashboard(settings: Settings, project: Path, mode: Literal["launcher", "direct"]) -> Dashboard:
    from kilo_loop.web.server import prepare_dashboard

    return prepare_dashboard(settings, project, mode)


def _dashboard_line(dashboard: Dashboard) -> str:
    return f"Dashboard {dashboard.url} (Ctrl+Click to open)"


def run_main(settings: Settings, list_goals: bool = False, named: tuple[Path, ...] = ()) -> int:
    """`named`: with `list_goals`, the --goal files to list instead of the discovered plans."""
    dashboard: Dashboard | None = None
    try:
        project = resolve_project(settings)
        if list_goals:
            plans = named_plans(project, list(named)) if named else discover_plans(project)
            click.echo(format_plan_list(plans, project))
            return 0
        if settings.goal is None and not settings.goal_text:
            if not settings.dashboard:
                raise SetupError(
                    "no --goal given and the dashboard is off: pass --goal <file.json|file.md> or "
                    '--goal-text "…", or drop --no-dashboard to pick a plan in the launcher'
                )
            dashboard = _prepare_dashboard(settings, project, "launcher")
            return _launcher(settings, dashboard)
        try:
            plan = plan_run(settings, project)
        except AllStagesDone as exc:
            click.echo(f"kilo-loop: {exc}; pass --force to run it again")
            return 0
        if settings.dashboard:
            dashboard = _prepare_dashboard(settings, project, "direct")
        if should_confirm(settings) and needs_large_question(settings, plan.goal):
            answer = ask_large_budget(input, click.echo, large_estimate(settings, project))
            settings = settings.model_copy(update={"review_large_retries": answer})
            plan = dataclasses.replace(plan, settings=settings)
        if should_confirm(settings):
            start, retries = _confirmed(plan, dashboard)
            if not start:
                if dashboard is not None:
                    dashboard.sock.close()
                click.echo("Cancelled: nothing was started.")
                return 2
            if retries is not None:
                click.echo(f"Review retry budget {retries} for every stage without its own Auto-fix line.")
                settings = settings.model_copy(update={"review_retries": retries})
                plan = dataclasses.replace(plan, settings=settings)
    except KiloLoopError as exc:  # set-up: nothing was started
        if dashboard is not None:
            dashboard.sock.close()
        return report_error(exc)
    out = _Output(settings)
    view = ConsoleView(out.console, quiet=settings.quiet)
    if dashboard is None:
        state = asyncio.run(execute_run(plan, view, out.say, _steering()))
    else:
        dashboard.controller.hooks = out.hooks("the dashboard is still open")
        dashboard.ctx.notice = out.say
        state = asyncio.run(_Direct(plan).run(dashboard, view, out.say))
    if not settings.quiet:
        view.summary(state)
    return exit_code_for(state.status)


class _Output:
    """The console: lines for the operator, and what it shows of runs started from the dashboard."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.console = make_console(no_color=settings.no_color)

    def say(self, message: str) -> None:
        self.console.print(message, style="bold", soft_wrap=True)  # a URL must stay on one line

    def hooks(self, after: str) -> RunHooks:
        from kilo_loop.web.controller import RunHooks

        def started(handle: RunHandle) -> None:
            handle.bus.subscribe(ConsoleView(self.console, quiet=self.settings.quiet, keys_hint=False))
            self.say(f"run {handle.run_id} started from the dashboard: {handle.goal.title}")

        def finished(handle: RunHandle) -> None:
            if not self.settings.quiet:
                ConsoleView(self.console).summary(handle.state)
            self.say(f"run {handle.run_id} ended ({handle.state.status}); {after}")

        return RunHooks(started=started, finished=finished)


def _steering() -> list[Attach]:
    """A plan run by `--parallel` or a fleet worker takes commands and answers from its inbox file."""
    from kilo_loop.fleet.attach import attach_inbox, inbox_requested

    return [attach_inbox] if inbox_requested() else []


@dataclass
class _Direct:
    """A direct run with the dashboard: the RunHandle is made on the loop, then adopted."""

    plan: RunPlan

    async def run(self, dashboard: Dashboard, view: ConsoleView, say: Say) -> RunState:
        handle = self.plan.handle()
        handle.bus.subscribe(view)
        await dashboard.start()
        try:
            dashboard.controller.adopt(handle)
            say(_dashboard_line(dashboard))
            detach = attach_terminal(handle, say)
            try:
                state = await handle.run()
            finally:
                detach()
            keep_for = self.plan.settings.keep_open_for
            if self.plan.settings.keep_open or keep_for:
                until = "" if self.plan.settings.keep_open or not keep_for else f" for {format_duration(keep_for)}"
                say(f"Dashboard still open at {dashboard.url}{until} — press Ctrl+C to close it")
                await _until_interrupted(dashboard, say, None if self.plan.settings.keep_open else keep_for)
        finally:
            await dashboard.stop()
        return state


def _launcher(settings: Settings, dashboard: Dashboard) -> int:
    out = _Output(settings)
    dashboard.controller.hooks = out.hooks("the launcher is still open")
    dashboard.ctx.notice = out.say
    asyncio.run(_serve_launcher(dashboard, out.say))
    return 0


async def _serve_launcher(dashboard: Dashboard, say: Say) -> None:
    await dashboard.start()
    try:
        say(_dashboard_line(dashboard))
        say("Launcher mode: pick a plan and press Start run in the dashboard (Ctrl+C to quit)")
        await _until_interrupted(dashboard, say)
    finally:
        await dashboard.stop()


async def _until_interrupted(dashboard: Dashboard, say: Say, timeout: float | None = None) -> None:
    """Wait for Ctrl+C (or SIGTERM), or `timeout` seconds; a run started from the dashboard is
    stopped and saved first. A second Ctrl+C exits at once."""
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()
    presses = {"count": 0}

    def on_signal() -> None:
        presses["count"] += 1
        if presses["count"] > 1:
            say("second Ctrl+C: exiting now")
            os._exit(130)
        interrupted.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        try:
            await asyncio.wait_for(interrupted.wait(), timeout)
        except TimeoutError:
            say(f"kept open for {format_duration(timeout or 0)}")
        if dashboard.controller.busy:
            say("stopping the active run (press Ctrl+C again to force-exit)")
            await dashboard.controller.stop_active()
        say("closing the dashboard")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
