"""`kilo-loop init`: a guided first setup in a project — finds the agent CLIs, checks the chosen one
is logged in, asks the few choices that matter, writes `.kilocode-loop/config.json` and a first plan,
and prints the command for the first real run. With `--yes` (or no terminal) it asks nothing."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click
import orjson

from kilo_loop.errors import UsageError
from kilo_loop.git import project_root
from kilo_loop.goal.scaffold import DEFAULT_DIR, ScaffoldedPlan, build_plan, write_plan
from kilo_loop.onboarding.choices import (
    PREFERENCE,
    Choices,
    config_document,
    conflicts,
    default_runtime,
    first_run_command,
    install_hint,
)
from kilo_loop.onboarding.login import login_state
from kilo_loop.project_config import CONFIG_RELATIVE, ConfigFileError, read_config_file
from kilo_loop.run.files import write_bytes_atomic


class InitRefused(UsageError):
    """init would replace a file the user has: nothing is written."""


def installed_clis(environ: dict[str, str]) -> dict[str, str]:
    """runtime -> binary, for each agent CLI found the way a run finds it (`*_BIN`, then PATH)."""
    from kilo_loop.doctor.probe import find

    found = {runtime: find(runtime, environ) for runtime in PREFERENCE}
    return {runtime: path for runtime, path in found.items() if path}


def _show_clis(installed: dict[str, str]) -> None:
    click.echo("Agent CLIs (one is enough):")
    for runtime in PREFERENCE:
        if runtime in installed:
            click.echo(f"  ✓ {runtime:<9} {installed[runtime]}")
        else:
            click.echo(f"  · {runtime:<9} not installed; to install: {install_hint(runtime)}")


def _check_runtime(runtime: str, installed: dict[str, str], environ: dict[str, str]) -> None:
    binary = installed.get(runtime)
    if binary is None:
        click.echo(f"! {runtime} is not installed: {install_hint(runtime)} (or point "
                   f"{runtime.upper()}_BIN at it); the config is written anyway")
        return
    state = login_state(runtime, binary, environ)
    if state.status == "ok":
        click.echo(f"✓ {runtime} is ready: {state.detail}")
    else:
        click.echo(f"! {runtime}: {state.detail}: {state.fix(runtime)}")


def _optional_text(prompt: str, default: str | None) -> str | None:
    answer = click.prompt(prompt, default=default or "", show_default=bool(default))
    return str(answer).strip() or None


def _optional_cost(default: float | None) -> float | None:
    while True:
        text = _optional_text("Budget per run in USD (blank: no budget)", str(default) if default is not None else None)
        if text is None:
            return None
        try:
            value = float(text.removeprefix("$"))
        except ValueError:
            value = -1.0
        if value >= 0:
            return value
        click.echo("Enter a number of dollars, e.g. 5, or leave it blank.")


def ask(given: Choices, installed: dict[str, str], environ: dict[str, str]) -> Choices:
    """The questions, each defaulting to what the flags said."""
    runtime = click.prompt("Agent CLI", type=click.Choice(PREFERENCE), default=given.runtime)
    _check_runtime(runtime, installed, environ)
    model = _optional_text("Model, as the CLI names it (blank: the CLI's default)", given.model)
    max_cost = _optional_cost(given.max_cost)
    dashboard = click.confirm("Serve the dashboard during runs", default=given.dashboard)
    plan = _optional_text("Describe the first plan in one line (blank: write one later)", given.plan)
    return Choices(runtime=runtime, model=model, max_cost=max_cost, dashboard=dashboard, plan=plan)


def _existing_config(path: Path) -> dict[str, Any] | None:
    """The keys kept under --force; a broken file is replaced whole."""
    try:
        return read_config_file(path)
    except ConfigFileError:
        return None


def _plan_for(root: Path, description: str | None) -> ScaffoldedPlan | None:
    return build_plan(root, description, directory=DEFAULT_DIR, stamp_name=False) if description else None


def refuse_to_replace(root: Path, paths: list[Path], force: bool) -> None:
    taken = conflicts(paths, force)
    if taken:
        names = ", ".join(str(path.relative_to(root)) for path in taken)
        raise InitRefused(f"{names} already exist{'s' if len(taken) == 1 else ''}: pass --force to replace "
                          f"{'it' if len(taken) == 1 else 'them'} (other keys of config.json are kept)")


def write_setup(root: Path, choices: Choices, force: bool) -> tuple[Path, ScaffoldedPlan | None]:
    """config.json and the plan; refuses (writing nothing) when either exists, unless `force`."""
    config_path = root / CONFIG_RELATIVE
    plan = _plan_for(root, choices.plan)
    refuse_to_replace(root, [config_path, *([plan.path] if plan else [])], force)
    existing = _existing_config(config_path) if config_path.is_file() else None
    document = config_document(choices, existing)
    config_path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(config_path, orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    if plan:
        write_plan(plan, force=force)
    return config_path, plan


@click.command("init")
@click.option("--runtime", type=click.Choice(PREFERENCE), help="agent CLI (default: the first one installed)")
@click.option("-m", "--model", help="model, as the CLI names it (default: the CLI's own)")
@click.option("--max-cost", type=click.FloatRange(min=0), help="budget per run in USD (default: none)")
@click.option("--dashboard/--no-dashboard", default=True, help="serve the dashboard during runs (default: on)")
@click.option("--plan", "plan", metavar="TEXT", help="one-line description of the first plan (written to "
              f"{DEFAULT_DIR}/<slug>.md)")
@click.option("-y", "--yes", is_flag=True, help="ask nothing: take the flags and the defaults")
@click.option("--force", is_flag=True, help="replace an existing config.json (its other keys are kept) and plan")
@click.option("-C", "--project", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="the project (default: the git repository of the current directory)")
def init_command(runtime: str | None, model: str | None, max_cost: float | None, dashboard: bool,
                 plan: str | None, yes: bool, force: bool, project: Path | None) -> None:
    """Set up this project: pick the agent CLI, check its login, write config.json and a first plan."""
    root = project_root(project.resolve() if project else None)
    refuse_to_replace(root, [root / CONFIG_RELATIVE], force)  # before any question is asked
    environ = dict(os.environ)
    installed = installed_clis(environ)
    click.echo(f"Setting up kilo-loop in {root}")
    if not (root / ".git").exists():
        click.echo(f"! {root} is not a git repository: a run needs one (git init)")
    _show_clis(installed)
    given = Choices(runtime=runtime or default_runtime(list(installed)), model=model, max_cost=max_cost,
                    dashboard=dashboard, plan=plan)
    interactive = not yes and sys.stdin.isatty()
    if interactive:
        choices = ask(given, installed, environ)
    else:
        choices = given
        _check_runtime(choices.runtime, installed, environ)
    config_path, written = write_setup(root, choices, force)
    click.echo(f"Wrote {config_path.relative_to(root)}")
    if written:
        click.echo(f"Wrote {written.relative}")
    else:
        click.echo('Write a plan with: kilo-loop new-plan "What you want done" (then name it with --goal)')
    command = first_run_command(written.relative if written else None, root, Path.cwd(), choices.runtime,
                                hasattr(os, "geteuid") and os.geteuid() == 0, environ.get("IS_SANDBOX") == "1")
    click.echo("\nStart the first real run with:\n")
    click.echo(f"  {command}\n")
    click.echo("Try it first without a model: add --dry-run. Stop any time with Q; kilo-loop --help lists every flag.")
