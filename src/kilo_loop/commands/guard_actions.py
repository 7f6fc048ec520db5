"""What `kilo-loop guard check` and `guard hook` do, without Click.

These two run before agent tool calls (`guard hook` is a Claude Code PreToolUse hook, once per
Bash call), so they start on the fast entry path (`kilo_loop.entry`) as well as through the
Click commands in `commands/guard.py`; both call these functions, so they answer alike. Output is
written to stdout/stderr here; Click is imported only for text a plain write cannot take.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kilo_loop.guard.runtime import Guard, GuardDecision

GuardFactory = Callable[[str | None], Guard]


def guard_for(cwd: str | None, deny: Sequence[str] = (), allow: Sequence[str] = ()) -> Guard:
    """A guard with the project's guardDeny/guardAllow/guardPacks (config.json, KILO_LOOP_* env)
    plus the given patterns; ValueError for a pattern or pack switch the guard refuses."""
    from pathlib import Path  # here, not at the top: only the project lookup needs it

    from kilo_loop.errors import ConfigError
    from kilo_loop.git import project_root
    from kilo_loop.guard.patterns import GuardPatterns, project_guard_patterns

    try:
        project = project_guard_patterns(project_root(Path(cwd) if cwd else None))
    except (ConfigError, OSError) as exc:
        echo(f"kilo-loop guard: ignoring the project config: {exc}", err=True)
        project = GuardPatterns()
    return Guard([*project.deny, *deny], [*project.allow, *allow], packs=dict(project.packs))


def hook_guard(cwd: str | None) -> Guard:
    """The guard `guard hook` applies: the project's, or the built-in rules when its patterns are refused."""
    try:
        return guard_for(cwd)
    except ValueError as exc:
        echo(f"kilo-loop guard hook: ignoring the project's guard patterns: {exc}", err=True)
        return Guard()


def absolute(cwd: str | None) -> str | None:
    return os.path.abspath(cwd) if cwd else None


def human(decision: GuardDecision) -> str:
    if decision.denied:
        return f"deny [{decision.rule}]: {decision.reason}"
    return f"allow: {decision.reason}"


def json_line(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


def echo(text: str, err: bool = False) -> None:
    """`text` and a newline, as `click.echo` writes it; Click itself only for what a plain write cannot
    take (ANSI escapes, which Click strips off a non-terminal, or text the stream cannot encode)."""
    if "\x1b" in text:
        _click_echo(text, err)
        return
    stream = sys.stderr if err else sys.stdout
    try:
        stream.write(text + "\n")
    except UnicodeEncodeError:
        _click_echo(text, err)
        return
    stream.flush()


def _click_echo(text: str, err: bool) -> None:
    import click

    click.echo(text, err=err)


# ----------------------------------------------------------------------------- check
def check_one(guard: Guard, command: str, cwd: str | None, as_json: bool) -> int:
    """Print the decision on `command`; the exit code: 0 allow, 1 deny."""
    decision = guard.check_command(command, absolute(cwd))
    echo(json_line(decision.as_dict()) if as_json else human(decision))
    return 1 if decision.denied else 0


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
    return dict(guard.check_command(command, absolute(cwd)).as_dict())


def check_batch(guard: Guard, lines: Iterable[str], cwd: str | None) -> int:
    """One JSON decision line per input line, flushed as it is decided; always 0."""
    default_cwd = absolute(cwd)
    for line in lines:
        echo(json_line(batch_decision(guard, line.rstrip("\r\n"), default_cwd)))
        sys.stdout.flush()
    return 0


# ----------------------------------------------------------------------------- hook
def hook_response(raw: str, guard_factory: GuardFactory) -> dict[str, Any] | None:
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
    decision = guard_factory(cwd).check_tool_use(tool, tool_input, cwd)
    if not decision.denied:
        return None
    return _deny(f"kilo-loop guard ({decision.rule}): {decision.reason}")


def _deny(reason: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


def answer_hook(raw: str) -> int:
    """`guard hook`: print the deny answer for the hook JSON in `raw`, nothing otherwise; always 0.
    A call the guard fails on is refused: a crash would exit 1, which the CLI takes as "run it"."""
    try:
        response = hook_response(raw, hook_guard)
    except Exception as exc:  # noqa: BLE001 - fail closed
        response = _deny(f"kilo-loop guard could not judge this call ({type(exc).__name__}: {exc}); "
                         "write the command out more plainly")
    if response is not None:
        echo(json_line(response))
    return 0
