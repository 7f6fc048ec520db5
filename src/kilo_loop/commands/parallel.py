"""Several plans at once from the command line (`--goal a.md --goal b.md --parallel N`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kilo_loop.errors import report_error
from kilo_loop.fleet.child import plan_flags
from kilo_loop.fleet.merge_check import plan_verify_commands, verify_on_merge
from kilo_loop.fleet.parallel import DashboardFactory, MergeMode, Plan, run_parallel
from kilo_loop.fleet.worktree import MergedCheck, WorktreeError
from kilo_loop.git import NotAGitRepo, git_root
from kilo_loop.goal.model import GoalError
from kilo_loop.goal.parse import load_goal


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    return click.confirm(question, default=True)


def parallel_main(params: dict[str, Any], argv: list[str]) -> int:
    from kilo_loop.runner import new_run_id

    goals = [Path(goal) for goal in params.get("goal") or ()]
    if not goals:
        click.echo("kilo-loop: --parallel needs at least one --goal", err=True)
        return 2
    for flag in ("keep_open", "keep_open_for"):
        if params.get(flag):
            click.echo(f"kilo-loop: warning: --{flag.replace('_', '-')} has no effect on parallel plans "
                       "(their dashboard closes when the last one ends)", err=True)
    start = Path(params["project"]) if params.get("project") else Path.cwd()
    try:
        project = git_root(start.expanduser().resolve())
    except NotAGitRepo as exc:
        click.echo(f"kilo-loop: {exc}", err=True)
        return 2
    missing = [str(g) for g in goals if not (g if g.is_absolute() else Path.cwd() / g).is_file()]
    if missing:
        click.echo(f"kilo-loop: goal file not found: {', '.join(missing)}", err=True)
        return 2
    goals = [(g if g.is_absolute() else Path.cwd() / g).resolve() for g in goals]
    try:  # a plan that cannot run stops them all here, before any worktree or branch is made
        for goal in goals:
            load_goal(goal)
    except GoalError as exc:
        return report_error(exc)
    merge: MergeMode = params.get("merge") or "auto"
    limit = params.get("parallel") or len(goals)
    try:
        factory = _dashboard_factory(params)
        return run_parallel(project, goals, limit, merge, plan_flags(argv), new_run_id(),
                            lambda line: click.echo(line), _ask, params.get("resume"), factory,
                            _merge_check(params), bool(params.get("keep_branches")))
    except (WorktreeError, OSError) as exc:
        click.echo(f"kilo-loop: {exc}", err=True)
        return 2


def _merge_check(params: dict[str, Any]) -> Callable[[Plan], MergedCheck | None] | None:
    """Each plan's verify commands, run (jailed) on its merged result before it lands; none in a dry run."""
    if params.get("dry_run"):
        return None
    sandbox = params.get("sandbox") or "auto"
    timeout_s = float(params.get("verify_timeout_minutes") or 10) * 60

    def warn(line: str) -> None:
        click.echo(f"kilo-loop: warning: {line}", err=True)

    return lambda plan: verify_on_merge(plan_verify_commands(plan.goal, params.get("verify")), sandbox, timeout_s, warn)


def _dashboard_factory(params: dict[str, Any]) -> DashboardFactory | None:
    """The many-runs dashboard, bound first thing in the run (a port in use stops it before any
    worktree is made)."""
    if params.get("dashboard") is False:
        return None
    from kilo_loop.fleet.serve import fleet_dashboard

    port = params.get("port")
    return lambda source: fleet_dashboard(source, params.get("host"), 7999 if port is None else port,
                                          bool(params.get("lan")))
