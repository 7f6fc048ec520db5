"""`kilo-loop guard`: check commands against the destructive-command guard, or answer
Claude Code's PreToolUse hook with it. What `check` and `hook` do is in `guard_actions`
(shared with the Click-free fast path of `kilo_loop.entry`); this module is their Click face."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from kilo_loop.commands.guard_actions import (
    answer_hook,
    batch_decision,
    check_batch,
    check_one,
    guard_for,
    hook_response,
)
from kilo_loop.guard.runtime import Guard

__all__ = ["batch_decision", "guard_group", "hook_response", "packs_listing"]


@click.group("guard", help="Check shell commands against the destructive-command guard.")
def guard_group() -> None:
    pass


_PATTERN_HELP = "RE2 regex searched in each executed command's text; adds to the project's {key} (repeatable)"


@guard_group.command("check", help=(
    "Decide one COMMAND: prints the decision, rule and reason; exits 0 (allow) or 1 (deny). "
    "With --batch, read JSON lines {\"command\": \"…\", \"cwd\": \"…\"} on stdin and print one JSON "
    "decision line per input line."))
@click.argument("command", required=False)
@click.option("--json", "as_json", is_flag=True, help="print the decision as one JSON line")
@click.option("--cwd", type=click.Path(file_okay=False),
              help="directory the command runs in (relative rm targets are resolved against it)")
@click.option("--batch", is_flag=True, help="read JSON lines on stdin; always exits 0")
@click.option("--deny", "deny", multiple=True, metavar="REGEX", help=_PATTERN_HELP.format(key="guardDeny"))
@click.option("--allow", "allow", multiple=True, metavar="REGEX", help=_PATTERN_HELP.format(key="guardAllow"))
def check_command(command: str | None, as_json: bool, cwd: str | None, batch: bool,
                  deny: tuple[str, ...], allow: tuple[str, ...]) -> None:
    if batch == (command is not None):
        raise click.UsageError("give either a COMMAND or --batch")
    try:
        guard = guard_for(cwd, deny, allow)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if batch:
        check_batch(guard, sys.stdin, cwd)
        return
    assert command is not None
    sys.exit(check_one(guard, command, cwd, as_json))


@guard_group.command("hook", help=(
    "Answer Claude Code's PreToolUse hook: reads the hook JSON on stdin; prints a deny decision "
    "for a destructive command, nothing otherwise; always exits 0."))
def hook_command() -> None:
    answer_hook(sys.stdin.read())


def packs_listing(guard: Guard) -> list[dict[str, Any]]:
    """Every rule pack: name, whether it is on, what it covers and its rule ids."""
    return [{"name": pack.name, "enabled": enabled, "title": pack.title,
             "rules": sorted({rule.id for rule in pack.rules} | {rule.id for rule in pack.text_rules}),
             "table_rows": len(pack.rules) + len(pack.text_rules)}
            for pack, enabled in guard.pack_states()]


@guard_group.command("packs", help=(
    "List the guard's rule packs and whether each is on for this project (switch them with "
    "\"guardPacks\": {\"<pack>\": false} in .kilocode-loop/config.json)."))
@click.option("--json", "as_json", is_flag=True, help="print the list as one JSON document")
@click.option("--cwd", type=click.Path(exists=True, file_okay=False),
              help="project directory (default: the current one)")
def packs_command(as_json: bool, cwd: str | None) -> None:
    try:
        guard = guard_for(cwd)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    listing = packs_listing(guard)
    if as_json:
        click.echo(json.dumps(listing, ensure_ascii=False))
        return
    width = max(len(p["name"]) for p in listing)
    for pack in listing:
        state = "on " if pack["enabled"] else "off"
        click.echo(f"{pack['name']:<{width}}  {state}  {pack['title']} ({pack['table_rows']} rules)")
