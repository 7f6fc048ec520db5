"""The `kilo-loop` command line: the run itself (the group's own options) and its subcommands."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from kilo_loop import __version__
from kilo_loop.cli_help import did_you_mean, write_panels
from kilo_loop.errors import KiloLoopError, report_error

if TYPE_CHECKING:  # the settings stack (pydantic) is imported only when a run is set up
    from kilo_loop.settings import Settings

# Subcommands: name -> (module:attribute, the help line `kilo-loop --help` shows). Each is imported
# only when it runs, so `--help` and a Claude Code hook (`guard hook`) import none of the others —
# no settings, dashboard or notification stack. tests/unit/cli/test_cli_startup.py keeps the lines true.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "doctor": ("kilo_loop.commands.doctor:doctor_command",
               "Check the agent CLIs, their flags, provider injection, usage DB, git and the dashboard port."),
    "init": ("kilo_loop.commands.init:init_command",
             "Set up this project: pick the agent CLI, check its login, write config.json and a first plan."),
    "guard": ("kilo_loop.commands.guard:guard_group",
              "Check shell commands against the destructive-command guard."),
    "merge": ("kilo_loop.commands.merge:merge_command",
              "Land a parallel plan's result left needs-merge, after a fix (verified on the merged result)."),
    "new-plan": ("kilo_loop.commands.new_plan:new_plan_command",
                 "Scaffold a plan from <project>/.kilo/templates/plan.md ({{title}}, {{date}}, {{slug}})."),
    "redact": ("kilo_loop.commands.redact:redact_command",
               "Redact secrets from stdin to stdout, line by line (for pipes and saved logs)."),
    "report": ("kilo_loop.commands.report:report_command",
               "Print a saved run's report.md (default: the most recent run), or its state with --json."),
    "note": ("kilo_loop.commands.note:note_command",
             "Send a note to the agent of a running loop, or withdraw one still queued."),
    "watch": ("kilo_loop.commands.watch:watch_command",
              "Watch and steer a running loop in the terminal (a Textual UI over the dashboard's API)."),
    "mcp": ("kilo_loop.commands.mcp:mcp_command",
            "Serve the loop to a chat agent over MCP (stdio): plans, budgeted runs, questions, notes, reports."),
    "revert": ("kilo_loop.commands.revert:revert_command",
               "Restore the working tree to the checkpoint taken before iteration N of a run."),
    "worker": ("kilo_loop.commands.fleet:worker_command",
               "Run plans from the queue (a Dramatiq worker on Redis) until Ctrl+C."),
    "submit": ("kilo_loop.commands.fleet:submit_command", "Queue a plan for the fleet."),
    "fleet": ("kilo_loop.commands.fleet:fleet_command",
              "Watch and steer every run of every worker: one list, one inbox, controls per run."),
}


def load_subcommand(name: str) -> click.Command:
    module_name, _, attribute = SUBCOMMANDS[name][0].partition(":")
    command = getattr(importlib.import_module(module_name), attribute)
    assert isinstance(command, click.Command)
    return command


def help_stand_in(name: str) -> click.Command:
    """A command that only carries the subcommand's help text, for listing it without importing it."""
    return click.Command(name, help=SUBCOMMANDS[name][1])


def _looks_like_a_plan(word: str) -> bool:
    """A word typed where a subcommand goes that is a goal file (`kilo-loop plan.md` without --goal)."""
    return Path(word).suffix.lower() in (".md", ".markdown", ".json") or Path(word).is_file()


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use; `--help` lists them from SUBCOMMANDS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in SUBCOMMANDS:
            self.add_command(load_subcommand(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name not in SUBCOMMANDS and name not in self.commands and _looks_like_a_plan(name):
            raise click.UsageError(f"No such command '{name}'; to run a plan, name it with --goal: "
                                   f"kilo-loop --goal {name}", ctx)
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            flags = [flag for param in self.params for flag in (*param.opts, *param.secondary_opts)]
            raise click.UsageError(did_you_mean(name, self.list_commands(ctx), flags), ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KiloLoopError as exc:
            ctx.exit(report_error(exc))

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The subcommands first, then the run's options in panels (cli_help.PANELS)."""
        self.format_commands(ctx, formatter)
        write_panels(ctx, formatter, self.get_params(ctx))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        rows = [(name, self._short_help(ctx, name, 10_000)) for name in names]  # the whole line, wrapped
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _short_help(self, ctx: click.Context, name: str, limit: int) -> str:
        if name in SUBCOMMANDS and name not in self.commands:
            return help_stand_in(name).get_short_help_str(limit)
        command = super().get_command(ctx, name)
        return command.get_short_help_str(limit) if command else ""

_HELP = """Run a headless coding agent (kilo, opencode, Claude Code, Codex, Gemini CLI, Cursor) against a git repository,
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
        click.option("--goal", type=click.Path(path_type=Path), multiple=True,
                     help=".json goal or .md checklist (repeat it to run several plans in parallel)"),
        click.option("--parallel", type=click.IntRange(1, 64),
                     help="plans at once, each in its own git worktree (default: all given)"),
        click.option("--merge", type=click.Choice(["auto", "ask", "never"]),
                     help="parallel plans: apply each result to your tree (auto), ask, or only save it"),
        click.option("--keep-branches", is_flag=True, default=None,
                     help="parallel plans: keep each plan's kilo-loop/<runId> branch after its result landed"),
        click.option("--goal-text", help="inline goal (one implicit stage)"),
        click.option("-n", "--iterations", type=int, help="loop count (default 5)"),
        # Execution
        click.option("-C", "--project", type=click.Path(path_type=Path), help="repository the agent works in (default cwd)"),
        click.option("-a", "--agent", help="agent name (default: the CLI's own default agent)"),
        click.option("--mode", "mode", hidden=True, help="compatibility alias for --agent"),
        click.option("-m", "--model", help="model override (provider/model)"),
        click.option("--variant", help="reasoning variant (e.g. high, max)"),
        click.option("--thinking", is_flag=True, default=None, help="capture reasoning parts"),
        click.option("--auto/--no-auto", default=None, help="auto-approve permissions (default: auto)"),
        click.option("--shared-context/--no-shared-context", default=None,
                     help="one growing session across iterations (default: fresh session + handoff)"),
        click.option("--session-mode", type=click.Choice(["continue", "fresh"]), help="legacy alias: continue = shared"),
        click.option("--hitl", type=click.Choice(["always", "on-question", "off"]), help="human in the loop"),
        click.option("--answer-timeout", help="go on without an answer after this long, e.g. 90s, 10m "
                     "(default: wait; a dry run on a non-terminal: 20s)"),
        click.option("--runtime", type=click.Choice(["auto", "kilo", "opencode", "claude", "codex", "cursor", "gemini"]),
                     help="agent CLI (auto: from the binary name in KILO_BIN, or the *_BIN set)"),
        click.option("--isolate-home", is_flag=True, default=None,
                     help="run the agent with HOME/XDG_* in the run directory (mode 0700)"),
        click.option("--usage-db/--no-usage-db", default=None,
                     help="also read each session's usage from kilo's own kilo.db (default: on)"),
        click.option("--provider-config-mode", type=click.Choice(["auto", "legacy_env", "none"]),
                     help="kilo/opencode: OPENAI_* endpoint as an {env:} provider (auto), legacy KILO_OPENAI_* "
                          "variables, or none"),
        click.option("--transport", type=click.Choice(["serve", "run"]),
                     help="serve: one warm agent server, guard before execution (default); run: `<cli> run` per turn"),
        click.option("--max-iteration-minutes", type=float, help="per-iteration hard timeout (default 30)"),
        click.option("--context-warn-tokens", type=int, help="warn when the context passes this size"),
        click.option("--prompt-extra", help="extra instructions for every iteration (a file or the text)"),
        # Verification & safety
        click.option("--verify", help="loop-run check; a stage is not done until it exits 0"),
        click.option("--verify-timeout-minutes", type=float, help="verify timeout (default 10)"),
        click.option("--checkpoint/--no-checkpoint", default=None, help="git checkpoint before every iteration"),
        click.option("--guard/--no-guard", default=None,
                     help="judge every shell command (serve: a denied one never runs and the agent goes on; "
                          "run: a hit ends the session)"),
        click.option("--sandbox", type=click.Choice(["auto", "bwrap", "off"]),
                     help="jail the agent and verify in bubblewrap: auto (when it works here, default), bwrap "
                          "(required), off"),
        click.option("--sandbox-network", type=click.Choice(["full", "model", "none"]),
                     help="the jail's network: full (default), model (the model endpoint and --sandbox-allow-host "
                          "only, through the loop's proxy), none (the model endpoint only)"),
        click.option("--sandbox-allow-host", "sandbox_allow_hosts", multiple=True,
                     help="with --sandbox-network model: a host (host, host:port, *.domain) the jail may reach too"),
        click.option("--guard-stop", is_flag=True, default=None, help="stop the run on the first guard hit"),
        click.option("--tamper", type=click.Choice(["block", "warn", "off"]),
                     help="a stage whose diff deletes, skips or weakens tests or edits what verify reads: block "
                          "(not done though verify passed; default), warn, off"),
        click.option("--finish", type=click.Choice(["none", "commit", "branch", "pr"]),
                     help="when a stage is done, the loop commits exactly its changes: on this branch (commit), on a "
                          "new branch kilo-loop/<slug>-<runId> (branch), that branch pushed with a pull request "
                          "(pr; token from GITHUB_TOKEN, GITLAB_TOKEN or GITEA_TOKEN), or not at all (none, default)"),
        click.option("--commit-author", metavar='"NAME <EMAIL>"',
                     help="author of the loop's commits (default: git's configured identity)"),
        click.option("--remote", help="--finish pr: the git remote to push to (default origin)"),
        click.option("--forge", type=click.Choice(["auto", "github", "gitlab", "gitea"]),
                     help="--finish pr: the forge (default: from the remote's host)"),
        click.option("--forge-url", metavar="URL",
                     help="--finish pr: the forge's REST API (default: GITHUB_API_URL, CI_API_V4_URL, GITEA_URL or "
                          "the remote's host)"),
        click.option("--forge-repo", metavar="OWNER/REPO", help="--finish pr: the repository, when the remote's URL "
                     "does not say"),
        click.option("--issue-comments", is_flag=True, default=None,
                     help="a goal from an issue (--goal github:OWNER/REPO#N): comment on it as each stage is committed"),
        click.option("--max-guard-blocks", type=int, help="consecutive guard hits tolerated (default 3)"),
        click.option("--redact/--no-redact", default=None, help="redact secrets in everything written"),
        click.option("--max-cost", type=float, help="stop at this cost in USD (stopped-budget)"),
        click.option("--max-tokens", type=int, help="stop at this many tokens (stopped-budget)"),
        click.option("--max-stale-iterations", type=int, help="stop after N iterations with no change (default 3)"),
        click.option("--max-same-failure", type=int,
                     help="the same verify failure this many times in a row is thrash: fresh session, then ask, "
                          "then stop (default 3; 0 off)"),
        click.option("--max-repeat-calls", type=int,
                     help="end a session that makes the same tool call this many times (default 8; 0 off)"),
        click.option("--max-failed-calls", type=int,
                     help="end a session after this many failing tool calls in a row (default 12; 0 off)"),
        click.option("--retry/--no-retry", default=None, help="retry an iteration on a transient model error"),
        click.option("--max-quota-wait", help="longest wait for a usage-limit reset, e.g. 30m, 6h (default 12h; "
                     "past it the run stops resumable, exit 3)"),
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
        click.option("--keep-open-for", metavar="DURATION",
                     help="keep the dashboard up this long after the loop (90s, 10m, 1h; Ctrl+C closes it)"),
        click.option("--dashboard/--no-dashboard", default=None, help="serve the dashboard (default on)"),
        # Utility
        click.option("--dry-run", is_flag=True, default=None, help="simulate the agent (no API calls)"),
        click.option("--dry-run-review", type=click.Choice(["pass", "block", "thrash"]),
                     help="the dry run's reviewer: pass, block (then fixed step by step) or thrash (default pass)"),
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
    if "mode" in values:
        values.setdefault("agent", values.pop("mode"))
    if "no_confirm" in values:
        values["confirm"] = not values.pop("no_confirm")
    for parent_only in ("list_goals", "parallel", "merge", "keep_branches"):
        values.pop(parent_only, None)
    goals = values.pop("goal", ())
    if goals:
        values["goal"] = goals[0]
    return values


# A flag that only acts when a setting is on: flag's setting -> (the setting, why it is off).
_ACTS_ONLY_WITH: dict[str, tuple[str, str]] = {
    **{name: ("dashboard", "with the dashboard off") for name in ("port", "host", "lan", "local", "keep_open",
                                                                   "keep_open_for")},
    **{name: ("review_on", "without --review or --review-wave") for name in ("review_agent", "review_retries",
                                                                               "review_gate")},
    "dry_run_review": ("dry_run", "without --dry-run"),
    **{name: ("retry", "with --no-retry") for name in ("max_retries", "retry_delay", "retry_max_delay")},
    **{name: ("guard", "with --no-guard") for name in ("guard_stop", "max_guard_blocks")},
}


# Flags only a real agent CLI acts on: a dry run's simulated agent runs no command, so the loop runs
# no verify after it (verify could change files; a dry run changes none but the loop's own).
_REAL_RUN_ONLY = ("verify", "verify_timeout_minutes", "runtime", "transport", "isolate_home", "usage_db", "sandbox",
                  "sandbox_network", "sandbox_allow_hosts",
                  "finish", "commit_author", "remote", "forge", "forge_url", "forge_repo", "issue_comments",
                  "provider_config_mode", "thinking", "auto")

# A flag that loses to another one typed with it: (the flag, the winning flag, what the winner does).
_OVERRIDDEN_BY: tuple[tuple[str, str, str], ...] = (
    ("keep_open_for", "keep_open", "which keeps the dashboard up until Ctrl+C"),
    ("lan", "local", "which binds loopback only"),
    ("lan", "host", "which names the address to bind"),
    ("host", "local", "which binds loopback only"),
    ("run_id", "resume", "which keeps the resumed run's id"),
    ("session_mode", "shared_context", "its newer name"),
    ("mode", "agent", "its newer name"),
)


def _flag(name: str) -> str:
    return f"--{name.replace('_', '-')}"


def _as_typed(name: str, settings: Settings) -> str:
    """The flag as typed: `--no-usage-db` for a switch typed off."""
    return _flag(name if getattr(settings, name, None) is not False else "no_" + name)


def ignored_flags(typed: set[str], settings: Settings) -> list[str]:
    """A warning for each flag typed on a one-plan command line that this run cannot act on."""
    idle = {name: why for name, (needed, why) in _ACTS_ONLY_WITH.items() if name in typed and not getattr(settings, needed)}
    warnings = [f"{_flag(name)} has no effect {why}" for name, why in idle.items()]
    beaten: dict[str, str] = {}  # the first flag that beats each one, in _OVERRIDDEN_BY's order
    for name, winner, what in _OVERRIDDEN_BY:
        if {name, winner} <= typed and not {name, winner} & idle.keys() and getattr(settings, winner) not in (None, ""):
            beaten.setdefault(name, f"{_flag(name)} has no effect with {_as_typed(winner, settings)}, {what}")
    warnings += beaten.values()
    if settings.dry_run:
        warnings += [f"{_as_typed(name, settings)} has no effect in a dry run (the simulated agent runs no command)"
                     for name in _REAL_RUN_ONLY if name in typed]
    for parallel_only in ("merge", "keep_branches"):
        if parallel_only in typed:
            warnings.append(f"{_flag(parallel_only)} has no effect on one plan (it applies to several --goal or "
                            "--parallel)")
    return [f"kilo-loop: warning: {warning}" for warning in warnings]


@click.group(cls=LazyGroup, invoke_without_command=True, help=_HELP, context_settings={"help_option_names": ["-h", "--help"],
                                                                         "max_content_width": 110})
@click.version_option(__version__, prog_name="kilo-loop")
@_options
@click.pass_context
def main(ctx: click.Context, /, **params: Any) -> None:
    if ctx.invoked_subcommand is not None:
        return
    if params.get("goal") and params.get("goal_text"):
        raise click.UsageError("pass either --goal <file> or --goal-text \"…\", not both", ctx)
    several = len(params.get("goal") or ()) > 1 or params.get("parallel")
    if several and not params.get("list_goals"):  # --list-goals only lists, with any number of --goal
        sys.exit(_parallel_main(params))
    from kilo_loop.commands.run import run_main
    from kilo_loop.git import project_root
    from kilo_loop.settings import load_settings

    cli_values = _given(ctx, params)
    project_hint = cli_values.get("project")
    settings = load_settings(cli_values, project_root(Path(project_hint) if project_hint else None))
    typed = {name for name in params if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE}
    for warning in ignored_flags(typed, settings):
        click.echo(warning, err=True)
    try:
        if params.get("list_goals"):
            code = run_main(settings, list_goals=True, named=tuple(params.get("goal") or ()))
        else:
            code = run_main(settings)
    except KeyboardInterrupt:  # a Ctrl+C outside the run's own handlers (set-up, final summary)
        click.echo("kilo-loop: interrupted", err=True)
        sys.exit(130)
    sys.exit(code)


def _parallel_main(params: dict[str, Any]) -> int:
    from kilo_loop.commands.parallel import parallel_main

    return parallel_main(params, sys.argv[1:])
