"""The main job: resolve everything that can fail before creating anything, then run."""

from __future__ import annotations

import asyncio

import click

from kilo_loop.goal.listing import format_plan_list
from kilo_loop.goal.model import Goal
from kilo_loop.goal.registry import discover_plans
from kilo_loop.run.status import exit_code_for
from kilo_loop.runner import SetupError, execute_run, make_backend, prepare_run, resolve_goal, resolve_project
from kilo_loop.settings import Settings
from kilo_loop.ui.console import ConsoleView, make_console


def _reopen_all(goal: Goal) -> Goal:
    return goal.model_copy(update={"stages": [s.model_copy(update={"done": False}) for s in goal.stages]})


def run_main(settings: Settings, list_goals: bool = False) -> int:
    try:
        project = resolve_project(settings)
        if list_goals:
            click.echo(format_plan_list(discover_plans(project), project))
            return 0
        if settings.goal is None and not settings.goal_text:
            raise SetupError(
                "no --goal given. Launcher mode (pick a plan in the dashboard) is not built yet: "
                "pass --goal <file.json|file.md> or --goal-text \"…\", or see plans with --list-goals"
            )
        goal = resolve_goal(settings, project)
        if goal.all_done() and not settings.resume:
            if not settings.force:
                click.echo(f"kilo-loop: every stage of '{goal.title}' is already done; pass --force to run it again")
                return 0
            goal = _reopen_all(goal)
        backend, runtime = make_backend(settings)
        prepared = prepare_run(settings, goal, project, runtime)
    except SetupError as exc:
        click.echo(f"kilo-loop: {exc}", err=True)
        return 2
    console = make_console(no_color=settings.no_color)
    view = ConsoleView(console, quiet=settings.quiet)
    state = asyncio.run(
        execute_run(settings, project, goal, backend, runtime, prepared, view, lambda m: console.print(m, style="bold"))
    )
    if not settings.quiet:
        view.summary(state)
    return exit_code_for(state.status)
