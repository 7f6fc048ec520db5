"""Codex: the `exec --json` mapping (on a stream recorded from the real CLI), the command line with
the guard hook and the sandbox settings, and the hook refusals Codex only logs on stderr."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from kilo_loop.agent.codex.backend import CodexBackend, build_command, hook_override, stderr_warnings
from kilo_loop.agent.codex.stream import CodexStreamParser
from kilo_loop.agent.protocol import (
    AgentError,
    AgentEvent,
    AgentPolicy,
    AgentRequest,
    SessionStarted,
    StepFinished,
    Text,
    ToolUse,
)
from tests.unit.agents.streams import STREAMS, feed


def parse(data: bytes, chunk: int = 61) -> tuple[list[AgentEvent], CodexStreamParser]:
    parser = CodexStreamParser()
    return feed(parser, data, chunk), parser


def test_recorded_exec_stream() -> None:
    events, parser = parse((STREAMS / "codex-0.169.0-exec.ndjson").read_bytes())
    assert isinstance(events[0], SessionStarted) and events[0].session_id.startswith("01a22e6e")
    tools = [e for e in events if isinstance(e, ToolUse)]
    assert [(t.tool, t.input["command"], t.status) for t in tools] == [
        ("bash", "/bin/bash -lc 'echo hi > x.txt'", "completed"),
        ("bash", "/bin/bash -lc 'ls nope-missing'", "error")]
    assert "No such file" in tools[1].error
    assert [e.text for e in events if isinstance(e, Text)] == ["done now"]
    (step,) = [e for e in events if isinstance(e, StepFinished)]
    assert step.tokens.total == 21534 + 34 and step.reason == "stop" and step.cost == 0
    assert not any(isinstance(e, AgentError) for e in events)
    # its own hook-trust notice is dropped, the model-metadata notice kept as a warning
    assert len(parser.codex.warnings) == 1 and "Model metadata" in parser.codex.warnings[0]


def test_failures_and_other_items() -> None:
    lines = [
        {"type": "item.completed", "item": {"id": "i1", "type": "file_change", "status": "completed",
                                            "changes": [{"path": "/p/a.py", "kind": "update"}]}},
        {"type": "item.completed", "item": {"id": "i2", "type": "reasoning", "text": "thinking"}},
        {"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 5}},
        {"type": "turn.failed", "error": {"message": "unexpected status 500 Internal Server Error"}},
        {"type": "error", "message": "stream disconnected"},
    ]
    events, _ = parse(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    patch = next(e for e in events if isinstance(e, ToolUse))
    assert patch.tool == "apply_patch" and patch.input["paths"] == ["/p/a.py"]
    step = next(e for e in events if isinstance(e, StepFinished))
    assert (step.tokens.input, step.tokens.cache_read, step.tokens.total) == (40, 60, 105)
    errors = [e.message for e in events if isinstance(e, AgentError)]
    assert errors == ["unexpected status 500 Internal Server Error", "stream disconnected"]


def test_command_lines_new_and_resumed() -> None:
    fresh = build_command("codex", AgentRequest(prompt="-go", cwd=Path("/p"), title="t", model="o9",
                                                variant="high"), "python -m kilo_loop.agent.hook")
    assert fresh[:3] == ["codex", "exec", "--json"]
    assert "--dangerously-bypass-hook-trust" in fresh and 'sandbox_mode="workspace-write"' in fresh
    assert 'approval_policy="never"' in fresh and fresh[fresh.index("-m") + 1] == "o9"
    assert 'model_reasoning_effort="high"' in fresh and fresh[-2:] == ["--", "-go"]
    resumed = build_command("codex", AgentRequest(prompt="next", cwd=Path("/p"), title="t", session_id="th-1"),
                            None)
    assert resumed[:4] == ["codex", "exec", "resume", "--json"] and resumed[-3:] == ["--", "th-1", "next"]
    assert "--dangerously-bypass-hook-trust" not in resumed


def test_hook_override_is_toml_that_names_the_hook_command() -> None:
    import tomllib

    command = "/venv/bin/python -m kilo_loop.agent.hook --rules '/runs/a b/guard-rules.json'"
    parsed = tomllib.loads(hook_override(command))
    entry = parsed["hooks"]["PreToolUse"][0]
    assert entry["matcher"] == "Bash" and entry["hooks"][0] == {"type": "command", "command": command}


def test_prepare_writes_rules_and_wires_the_hook(tmp_path: Path) -> None:
    backend = CodexBackend("codex")
    backend.prepare(AgentPolicy(project=tmp_path, run_dir=tmp_path, guard_deny=("x",)))
    command = backend.invocation(AgentRequest(prompt="p", cwd=tmp_path, title="t")).command
    hook = command[command.index("-c") + 1]
    assert "kilo_loop.agent.hook" in hook and str(tmp_path / "guard-rules.json") in hook
    off = CodexBackend("codex")
    off.prepare(AgentPolicy(project=tmp_path, run_dir=tmp_path, guard=False))
    assert "--dangerously-bypass-hook-trust" not in off.invocation(AgentRequest(prompt="p", cwd=tmp_path,
                                                                                 title="t")).command
    assert shlex.split(hook_override("a b"))  # stays one argv element's worth of text


def test_hook_refusals_on_stderr_become_warnings() -> None:
    stderr = ("WARNING: proceeding\n2026-11-30T21:48:26Z ERROR codex_core::tools::router: error=Command blocked by "
              "PreToolUse hook: denied by the loop's guard (git-commit): no. Command: git commit -m x\n")
    assert stderr_warnings(stderr) == [
        "guard hook refused before execution: denied by the loop's guard (git-commit): no. Command: git commit -m x"]


def test_codex_overload_message_is_marked_retryable() -> None:
    from kilo_loop.agent.protocol import AgentResult
    from kilo_loop.loop.retry import transient_reason

    message = "We\u2019re currently experiencing high demand, which may cause temporary errors."
    events, _ = parse(json.dumps({"type": "turn.failed", "error": {"message": message}}).encode() + b"\n")
    (error,) = events
    assert isinstance(error, AgentError) and error.retryable is True
    result = AgentResult(exit_code=1, error=f"TurnFailed: {message}", retryable=True)
    assert transient_reason(result) == f"TurnFailed: {message}"
    assert transient_reason(AgentResult(exit_code=1, error="bad key", retryable=None)) is None
