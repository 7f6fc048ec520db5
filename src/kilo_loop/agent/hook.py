"""The guard as a pre-tool hook for the CLIs that have one (Claude Code PreToolUse, Codex
PreToolUse, Gemini CLI BeforeTool): `python -P -m kilo_loop.agent.hook --rules <file>`.

The CLI runs this before every matching tool call with the call as JSON on stdin
(`tool_name`, `tool_input`, `cwd`). A destructive call is refused by exiting 2 with
the reason on stderr — the blocking answer all three CLIs understand — and a JSON
deny decision on stdout for the CLIs that read one. Anything else exits 0 silently.
Malformed input is let through: the hook must not block every tool on a protocol hiccup,
and the loop's own guard still scans the stream. A call the guard fails on is refused: the
CLIs take any other exit code as "run it", so an input that crashes the analysis must not
become a way past it.

It runs on every tool call, so it imports only the guard (not even pathlib): the loop writes the
run's guardDeny/guardAllow patterns into the rules file once, so no settings are loaded here.
The interpreter runs with `-P`: the CLI starts the hook in the agent's working directory, and
without it a `typing.py` or `json.py` there would be imported in place of the standard library's
(failing the hook, which lets the call run, or replacing the guard).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kilo_loop.agent.protect_check import hook_denial
from kilo_loop.guard.runtime import Guard

if TYPE_CHECKING:
    from pathlib import Path

BLOCK_EXIT = 2
RULES_FILE = "guard-rules.json"
_LOOP_DIR = ".kilocode-loop"
"""`run.layout.LOOP_DIR`, spelled here: importing the layout would import pathlib on every tool call."""


def hook_command(rules: Path, python: str | None = None) -> str:
    """The shell command a CLI runs: this interpreter, this module, no CLI parsing on the way."""
    import shlex  # here, not at the top: the hook itself never needs it

    return shlex.join([python or sys.executable, "-P", "-m", "kilo_loop.agent.hook", "--rules", str(rules)])


def write_rules(path: Path, deny: Sequence[str], allow: Sequence[str], packs: Mapping[str, bool] | None = None) -> Path:
    """The guard patterns and packs the hook applies, written once per run (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"deny": list(deny), "allow": list(allow), "packs": dict(packs or {})}),
                    encoding="utf-8")
    path.chmod(0o600)
    return path


def install_hook(directory: Path, deny: Sequence[str], allow: Sequence[str],
                 packs: Mapping[str, bool] | None = None) -> str:
    """Write the run's rules file in `directory`; the hook command that applies them."""
    return hook_command(write_rules(directory / RULES_FILE, deny, allow, packs))


def load_guard(rules: str | os.PathLike[str] | None) -> Guard:
    if rules is None:
        return Guard()
    try:
        with open(rules, encoding="utf-8") as file:
            data = json.load(file)
        return Guard(list(data.get("deny", [])), list(data.get("allow", [])), packs=dict(data.get("packs", {})),
                     work_tree=checkpointed_work_tree(os.fspath(rules)))
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        print(f"kilo-loop hook: ignoring the guard patterns in {rules}: {exc}", file=sys.stderr)
        return Guard()


def checkpointed_work_tree(rules: str) -> str | None:
    """The project of the run whose folder holds `rules` (`<project>/.kilocode-loop/runs/<id>/…`), when that
    run keeps per-iteration checkpoints (its `checkpoints/` exists): the guard then lets deletes a revert can
    undo through (`checkpoint.undoable`). None otherwise."""
    path = os.path.abspath(rules)
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return None
        runs = os.path.dirname(parent)
        if os.path.basename(parent) == "runs" and os.path.basename(runs) == _LOOP_DIR:
            return os.path.dirname(runs) if os.path.isdir(os.path.join(path, "checkpoints")) else None
        path = parent


def denial(raw: str, guard: Guard) -> str | None:
    """The reason to refuse the tool call in `raw` (the hook's stdin), or None to let it run."""
    try:
        payload: Any = json.loads(raw) if raw.strip() else None
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    tool, tool_input, cwd = payload.get("tool_name"), payload.get("tool_input"), payload.get("cwd")
    if not isinstance(tool, str) or not isinstance(tool_input, dict):
        return None
    decision = guard.check_tool_use(tool, tool_input, cwd if isinstance(cwd, str) and cwd else None)
    if not decision.denied:
        return None
    return f"denied by the loop's guard ({decision.rule}): {decision.reason}; reach the goal another way"


def deny_json(reason: str) -> str:
    return json.dumps({"decision": "block", "reason": reason, "hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}})


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    rules = args[args.index("--rules") + 1] if "--rules" in args[:-1] else None
    try:
        raw = sys.stdin.read()
        reason = hook_denial(raw, os.environ) or denial(raw, load_guard(rules))
    except Exception as exc:  # noqa: BLE001 - fail closed: exit 1 would let the call run
        reason = (f"the loop's guard could not judge this call ({type(exc).__name__}: {exc}); "
                  "write the command out more plainly")
    if reason is None:
        return 0
    print(deny_json(reason))
    print(reason, file=sys.stderr)
    return BLOCK_EXIT


if __name__ == "__main__":
    sys.exit(main())
