"""`kilo-loop guard`: check commands against the destructive-command guard, or answer
Claude Code's PreToolUse hook with it."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import click

from kilo_loop.errors import ConfigError
from kilo_loop.git import project_root
from kilo_loop.guard_patterns import GuardPatterns, project_guard_patterns
from kilo_loop.safety.guard import Guard, GuardDecision

GuardFactory = Callable[[str | None], Guard]


def _guard_for(cwd: str | None, deny: Sequence[str], allow: Sequence[str]) -> Guard:
    """A guard with the project's guardDeny/guardAllow/guardPacks (config.json, KILO_LOOP_* env)
    plus the given patterns."""
    try:
        project = project_guard_patterns(project_root(Path(cwd) if cwd else None))
    except (ConfigError, OSError) as exc:
        click.echo(f"kilo-loop guard: ignoring the project config: {exc}", err=True)
        project = GuardPatterns()
    return Guard([*project.deny, *deny], [*project.allow, *allow], packs=dict(project.packs))


def _absolute(cwd: str | None) -> str | None:
    return os.path.abspath(cwd) if cwd else None


def _human(decision: GuardDecision) -> str:
    if decision.denied:
        return f"deny [{decision.rule}]: {decision.reason}"
    return f"allow: {decision.reason}"


def _line(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


# ----------------------------------------------------------------------------- pure handlers
def batch_decision(guard: Guard, line: str, default_cwd: str | None) -> dict[str, Any]:
    """One `{"decision", "rule", "reason"}` answer for one batch input line (never raises)."""
    try:
        request = json.loads(line)
    except ValueError as exc:
        return {"decision": "error", "rule": None, "reason": f"not valid JSON: {exc}"}
    if not isinstance(request, dict):
        return {"decision": "error", "rule": None, "reason": "expected a JSON object with a 'command' string"}
    command, cwd = request.get("command"), request.get("cwd", default_cwd)
    if not isinstance(command, str):
        return {"decision": "error", "rule": None, "reason": "'command' must be a string"}
    if cwd is not None and not isinstance(cwd, str):
        return {"decision": "error", "rule": None, "reason": "'cwd' must be a string or null"}
    return dict(guard.check_command(command, _absolute(cwd)).as_dict())


def hook_response(raw: str, guard_for: GuardFactory) -> dict[str, Any] | None:
    """Claude Code PreToolUse hook: the deny answer for `raw` stdin, or None to let the tool run.

    Malformed input is let through: the hook must not block every tool on a protocol hiccup.
    """
    try:
        payload = json.loads(raw) if raw.strip() else None
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("hook_event_name", "PreToolUse") != "PreToolUse":
        return None
    tool, tool_input, cwd = payload.get("tool_name"), payload.get("tool_input"), payload.get("cwd")
    if not isinstance(tool, str) or not isinstance(tool_input, dict):
        return None
    cwd = cwd if isinstance(cwd, str) and cwd else None
    decision = guard_for(cwd).check_tool_use(tool, tool_input, cwd)
    if not decision.denied:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"kilo-loop guard ({decision.rule}): {decision.reason}",
        }
    }


def _run_batch(guard: Guard, lines: Iterable[str], default_cwd: str | None) -> None:
    for line in lines:
        click.echo(_line(batch_decision(guard, line.rstrip("\r\n"), default_cwd)))
        sys.stdout.flush()


# ----------------------------------------------------------------------------- commands
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
        guard = _guard_for(cwd, deny, allow)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if batch:
        _run_batch(guard, sys.stdin, _absolute(cwd))
        return
    assert command is not None
    decision = guard.check_command(command, _absolute(cwd))
    click.echo(_line(decision.as_dict()) if as_json else _human(decision))
    sys.exit(1 if decision.denied else 0)


@guard_group.command("hook", help=(
    "Answer Claude Code's PreToolUse hook: reads the hook JSON on stdin; prints a deny decision "
    "for a destructive command, nothing otherwise; always exits 0."))
def hook_command() -> None:
    raw = sys.stdin.read()

    def guard_for(cwd: str | None) -> Guard:
        try:
            return _guard_for(cwd, (), ())
        except ValueError as exc:
            click.echo(f"kilo-loop guard hook: ignoring the project's guard patterns: {exc}", err=True)
            return Guard()

    response = hook_response(raw, guard_for)
    if response is not None:
        click.echo(_line(response))


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
@click.option("--cwd", type=click.Path(file_okay=False), help="project directory (default: the current one)")
def packs_command(as_json: bool, cwd: str | None) -> None:
    try:
        guard = _guard_for(cwd, (), ())
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
