"""How `kilo-loop --help` reads: the subcommands first with their whole line, then the run's options
in panels (Goal, Agent, Safety, Budgets, Review, Dashboard, Output), and a "did you mean" for a
mistyped subcommand. Plain Click formatting: the help stays text in a pipe and costs no import."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import click

# Panel title -> the run's options in it, by parameter name, in the order shown.
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Goal", ("goal", "goal_text", "iterations", "parallel", "merge", "keep_branches", "list_goals", "force", "sync_goal",
              "resume", "run_id", "dry_run")),
    ("Agent", ("project", "runtime", "agent", "model", "variant", "thinking", "auto", "transport", "shared_context",
               "session_mode", "auto_fresh_tokens", "context_warn_tokens", "prompt_extra", "isolate_home",
               "provider_config_mode", "usage_db", "max_iteration_minutes")),
    ("Safety", ("verify", "verify_timeout_minutes", "guard", "guard_stop", "max_guard_blocks", "sandbox", "tamper",
                "sandbox_network", "sandbox_allow_hosts",
                "checkpoint", "redact")),
    ("Budgets", ("max_cost", "max_tokens", "max_stale_iterations", "max_same_failure", "max_repeat_calls",
                 "max_failed_calls", "max_quota_wait", "retry", "max_retries",
                 "retry_delay", "retry_max_delay")),
    ("Review and questions", ("review", "review_wave", "review_agent", "review_retries", "review_gate", "hitl",
                              "answer_timeout", "notify")),
    ("Hand-over", ("finish", "commit_author", "remote", "forge", "forge_url", "forge_repo",
                   "issue_comments")),
    ("Dashboard", ("dashboard", "port", "host", "lan", "local", "keep_open", "keep_open_for")),
    ("Output", ("quiet", "no_color", "no_confirm", "version", "help")),
)
_HELP_OPTION = "_click_default_help"  # the name Click gives the -h/--help option it adds


def unplaced(params: Iterable[click.Parameter], ctx: click.Context) -> list[str]:
    """Options `--help` shows that no panel names (they land in "Other options")."""
    placed = {name for _title, names in PANELS for name in names}
    placed.add(_HELP_OPTION)
    return [p.name for p in params if p.name and p.get_help_record(ctx) and p.name not in placed]


def write_panels(ctx: click.Context, formatter: click.HelpFormatter, params: Iterable[click.Parameter]) -> None:
    params = list(params)
    records = {("help" if p.name == _HELP_OPTION else p.name): record
               for p in params if p.name and (record := p.get_help_record(ctx))}
    panels = [*PANELS, ("Other", tuple(unplaced(params, ctx)))]
    for title, names in panels:
        rows = [records[name] for name in names if name in records]
        if rows:
            with formatter.section(f"{title} options"):
                formatter.write_dl(rows)


def did_you_mean(word: str, commands: Iterable[str], flags: Iterable[str]) -> str:
    """The usage error for a word that is no subcommand: the closest subcommand, else a flag it names."""
    message = f"No such command '{word}'."
    command = difflib.get_close_matches(word, list(commands), n=1, cutoff=0.6)
    if command:
        return f"{message} Did you mean '{command[0]}'?"
    long_flags = [flag for flag in flags if flag.startswith("--")]
    flag = difflib.get_close_matches(f"--{word.lstrip('-')}", long_flags, n=1, cutoff=0.8)
    if flag:
        return f"{message} Did you mean the flag {flag[0]}?"
    return f"{message} See kilo-loop --help for the commands."
