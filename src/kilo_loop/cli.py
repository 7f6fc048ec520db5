"""The `kilo-loop` command line: the run itself (the group's own options) and its subcommands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from kilo_loop import __version__
from kilo_loop.goal.model import GoalError
from kilo_loop.settings import ConfigError, load_settings

_HELP = """Run a headless coding agent (kilo run / opencode run) against a git repository,
iteration after iteration, until a goal's stages are done — verified, guarded,
checkpointed and within budget.

\b
Examples:
  kilo-loop --dry-run --goal examples/goal.example.md -n 3    offline rehearsal
  kilo-loop --goal .kilocode-loop/goal.json -n 5              real run with kilo
  KILO_BIN=opencode kilo-loop --goal plan.md --agent build    real run with opencode
  kilo-loop report --last                                     the latest run's report
"""


def _options(func: Any) -> Any:
    opts = [
        # Goal
        click.option("--goal", type=click.Path(path_type=Path), help=".json goal or .md checklist"),
        click.option("--goal-text", help="inline goal (one implicit stage)"),
        click.option("-n", "--iterations", type=int, help="loop count (default 5)"),
        # Execution
        click.option("-C", "--project", type=click.Path(path_type=Path), help="repository the agent works in (default cwd)"),
        click.option("-a", "--agent", help="agent name (default: the CLI's own default agent)"),
        click.option("-m", "--model", help="model override (provider/model)"),
        click.option("--variant", help="reasoning variant (e.g. high, max)"),
        click.option("--thinking", is_flag=True, default=None, help="capture reasoning parts"),
        click.option("--auto/--no-auto", default=None, help="auto-approve permissions (default: auto)"),
        click.option("--shared-context/--no-shared-context", default=None,
                     help="one growing session across iterations (default: fresh session + handoff)"),
        click.option("--session-mode", type=click.Choice(["continue", "fresh"]), help="legacy alias: continue = shared"),
        click.option("--hitl", type=click.Choice(["always", "on-question", "off"]), help="human in the loop"),
        click.option("--runtime", type=click.Choice(["auto", "kilo", "opencode"]), help="agent CLI (auto: from the binary name)"),
        click.option("--max-iteration-minutes", type=float, help="per-iteration hard timeout (default 30)"),
        click.option("--context-warn-tokens", type=int, help="warn when the context passes this size"),
        click.option("--prompt-extra", help="extra instructions for every iteration (a file or the text)"),
        # Verification & safety
        click.option("--verify", help="loop-run check; a stage is not done until it exits 0"),
        click.option("--verify-timeout-minutes", type=float, help="verify timeout (default 10)"),
        click.option("--checkpoint/--no-checkpoint", default=None, help="git checkpoint before every iteration"),
        click.option("--guard/--no-guard", default=None, help="deny destructive bash; a hit aborts the session"),
        click.option("--guard-stop", is_flag=True, default=None, help="stop the run on the first guard hit"),
        click.option("--max-guard-blocks", type=int, help="consecutive guard hits tolerated (default 3)"),
        click.option("--redact/--no-redact", default=None, help="redact secrets in everything written"),
        click.option("--max-cost", type=float, help="stop at this cost in USD (stopped-budget)"),
        click.option("--max-tokens", type=int, help="stop at this many tokens (stopped-budget)"),
        click.option("--max-stale-iterations", type=int, help="stop after N iterations with no change (default 3)"),
        click.option("--retry/--no-retry", default=None, help="retry an iteration on a transient model error"),
        click.option("--max-retries", type=int, help="retry attempts per iteration (default 3)"),
        click.option("--retry-delay", type=int, help="first backoff delay in ms (default 2000, doubles)"),
        click.option("--retry-max-delay", type=int, help="backoff cap in ms (default 60000)"),
        click.option("--review", is_flag=True, default=None, help="reviewer session after a stage passes verify"),
        click.option("--review-agent", help="agent for the reviewer(s) (default: the run's agent)"),
        click.option("--review-wave", is_flag=True, default=None,
                     help="code, test and security reviewers in parallel sessions (implies --review)"),
        click.option("--review-retries", type=click.IntRange(0, 3),
                     help="automatic fix retries before the gate (default by stage size: 1; large asks)"),
        click.option("--review-gate", type=click.Choice(["always", "auto", "off"]),
                     help="when the review gate asks the operator (default auto)"),
        click.option("--auto-fresh-tokens", type=int, help="shared mode: switch to a fresh session past this context"),
        click.option("--sync-goal/--no-sync-goal", default=None, help="tick [x] in a markdown goal (default on)"),
        click.option("--force", is_flag=True, default=None, help="run even when every stage is marked done"),
        click.option("--list-goals", is_flag=True, help="list discovered plans + state, then exit"),
        click.option("--notify", help="notification targets (space/comma separated)"),
        # Dashboard
        click.option("-p", "--port", type=int, help="dashboard port (default 7999)"),
        click.option("--host", help="dashboard host (default 127.0.0.1)"),
        click.option("--lan", is_flag=True, default=None, help="bind 0.0.0.0 so a phone on the same Wi-Fi can open it"),
        click.option("--local", is_flag=True, default=None, help="force loopback (overrides config lan)"),
        click.option("--keep-open", is_flag=True, default=None, help="keep the dashboard up after the loop"),
        click.option("--dashboard/--no-dashboard", default=None, help="serve the dashboard (default on)"),
        # Utility
        click.option("--dry-run", is_flag=True, default=None, help="simulate the agent (no API calls)"),
        click.option("--resume", help="continue a saved run (<runId>, last or latest)"),
        click.option("--run-id", help="name the run directory"),
        click.option("--quiet", is_flag=True, default=None, help="suppress the live console stream"),
        click.option("--no-color", is_flag=True, default=None, help="no colours (NO_COLOR is honoured too)"),
        click.option("--no-confirm", "--yes", "no_confirm", is_flag=True, default=None,
                     help="start immediately (skip the pre-flight confirmation)"),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def _given(ctx: click.Context, params: dict[str, Any]) -> dict[str, Any]:
    """Only the flags the user actually typed, so config and environment fill the rest."""
    values: dict[str, Any] = {}
    for name, value in params.items():
        if value is None or ctx.get_parameter_source(name) != ParameterSource.COMMANDLINE:
            continue
        values[name] = value
    if "session_mode" in values:
        values.setdefault("shared_context", values.pop("session_mode") == "continue")
    if "no_confirm" in values:
        values["confirm"] = not values.pop("no_confirm")
    values.pop("list_goals", None)
    return values


def fail(message: str, code: int = 2) -> None:
    click.echo(f"kilo-loop: {message}", err=True)
    sys.exit(code)


@click.group(invoke_without_command=True, help=_HELP, context_settings={"help_option_names": ["-h", "--help"],
                                                                         "max_content_width": 110})
@click.version_option(__version__, prog_name="kilo-loop")
@_options
@click.pass_context
def main(ctx: click.Context, /, **params: Any) -> None:
    if ctx.invoked_subcommand is not None:
        return
    cli_values = _given(ctx, params)
    project_hint = cli_values.get("project")
    try:
        settings = load_settings(cli_values, Path(project_hint) if project_hint else _project_guess())
    except ConfigError as exc:
        fail(str(exc))
        return
    from kilo_loop.commands.run import run_main

    try:
        code = run_main(settings, list_goals=bool(params.get("list_goals")))
    except GoalError as exc:
        fail(f"goal error: {exc}")
        return
    except KeyboardInterrupt:  # a Ctrl+C outside the run's own handlers (set-up, final summary)
        click.echo("kilo-loop: interrupted", err=True)
        sys.exit(130)
    sys.exit(code)


def _project_guess() -> Path | None:
    from kilo_loop.loop.workspace import NotAGitRepo, git_root

    try:
        return git_root(Path.cwd())
    except NotAGitRepo:
        return None


def _register_subcommands() -> None:
    from kilo_loop.commands.guard import guard_group
    from kilo_loop.commands.new_plan import new_plan_command
    from kilo_loop.commands.redact import redact_command
    from kilo_loop.commands.report import report_command
    from kilo_loop.commands.revert import revert_command

    main.add_command(guard_group, "guard")
    main.add_command(redact_command, "redact")
    main.add_command(revert_command, "revert")
    main.add_command(report_command, "report")
    main.add_command(new_plan_command, "new-plan")


_register_subcommands()


