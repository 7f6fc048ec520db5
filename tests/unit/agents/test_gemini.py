"""Gemini CLI: the stream-json mapping (on a stream recorded from the real CLI), the command line,
and where the BeforeTool hook's system settings file may live."""

from __future__ import annotations

import json
from pathlib import Path

from kilo_loop.agent.gemini.backend import (
    SETTINGS_ENV,
    SETTINGS_FILE,
    GeminiBackend,
    build_command,
    insecure_parent,
)
from kilo_loop.agent.gemini.stream import GeminiStreamParser
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


def parse(data: bytes, chunk: int = 53) -> list[AgentEvent]:
    return feed(GeminiStreamParser(), data, chunk)


def test_recorded_stream() -> None:
    events = parse((STREAMS / "gemini-0.61.0-stream.ndjson").read_bytes())
    assert isinstance(events[0], SessionStarted)
    tools = [e for e in events if isinstance(e, ToolUse)]
    assert [(t.tool, t.input["command"], t.status) for t in tools] == [
        ("run_shell_command", "echo hi > x.txt", "completed"), ("run_shell_command", "ls nope-missing", "completed")]
    assert [e.text for e in events if isinstance(e, Text)] == ["all done"]
    (step,) = [e for e in events if isinstance(e, StepFinished)]
    assert step.tokens.total == 693 and step.reason == "stop"


def test_deltas_join_and_failures_map() -> None:
    lines = [
        {"type": "message", "role": "assistant", "content": "Hel", "delta": True},
        {"type": "message", "role": "assistant", "content": "lo", "delta": True},
        {"type": "tool_use", "tool_name": "run_shell_command", "tool_id": "t1", "parameters": {"command": "x"}},
        {"type": "tool_result", "tool_id": "t1", "status": "error", "output": "Tool execution blocked: no",
         "error": {"type": "hook", "message": "blocked by hook"}},
        {"type": "error", "severity": "warning", "message": "loop detected"},
        {"type": "result", "status": "error", "error": {"type": "FatalError", "message": "quota exceeded 429"},
         "stats": {"input_tokens": 10, "output_tokens": 2, "cached": 4}},
    ]
    events = parse(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    assert isinstance(events[0], Text) and events[0].text == "Hello"
    tool = next(e for e in events if isinstance(e, ToolUse))
    assert tool.status == "error" and tool.error == "blocked by hook"
    step = next(e for e in events if isinstance(e, StepFinished))
    assert (step.tokens.total, step.tokens.input, step.tokens.cache_read) == (12, 6, 4)
    assert [e.message for e in events if isinstance(e, AgentError)] == ["quota exceeded 429"]


def test_command_line() -> None:
    fresh = build_command("gemini", AgentRequest(prompt="-x", cwd=Path("/p"), title="t", model="g-1"))
    assert fresh == ["gemini", "--output-format", "stream-json", "--skip-trust", "--yolo", "--model", "g-1",
                     "--prompt", "-x"]
    resumed = build_command("gemini", AgentRequest(prompt="y", cwd=Path("/p"), title="t", session_id="u-1",
                                                   auto_approve=False))
    assert "--yolo" not in resumed and resumed[resumed.index("--resume") + 1] == "u-1"


def test_insecure_parent(tmp_path: Path) -> None:
    private = tmp_path / "a" / "b"
    private.mkdir(parents=True)
    for directory in (tmp_path, tmp_path / "a", private):
        directory.chmod(0o755)
    assert insecure_parent(private) in (None, *tmp_path.parents)  # whatever is above the test dir
    (tmp_path / "a").chmod(0o777)
    assert insecure_parent(private) == tmp_path / "a"
    (tmp_path / "a").chmod(0o755)


def test_settings_go_where_gemini_accepts_them(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    backend = GeminiBackend("gemini")
    prepared = backend.prepare(AgentPolicy(project=tmp_path, run_dir=run, environ={"HOME": str(tmp_path / "h")}))
    if insecure_parent(run) is None:
        settings = Path(prepared.env[SETTINGS_ENV])
        assert settings == run / SETTINGS_FILE and json.loads(settings.read_text())["hooksConfig"]["enabled"]
    else:  # under /tmp, as pytest's tmp_path is: Gemini would ignore the file, and the operator is told
        assert SETTINGS_ENV not in prepared.env and "guard hook is not installed" in prepared.notes[0]
    assert GeminiBackend("gemini").prepare(AgentPolicy(project=tmp_path, run_dir=run, guard=False)).env == {}


def test_a_session_that_never_got_an_answer_is_not_resumed(tmp_path: Path) -> None:
    from kilo_loop.agent.protocol import AgentResult

    backend = GeminiBackend("gemini")
    failed = backend.invocation(AgentRequest(prompt="p", cwd=tmp_path, title="t"))
    assert failed.on_finish is not None
    failed.on_finish(AgentResult(exit_code=244, session_id="s-0", error="API Error: 500"))
    retry = backend.invocation(AgentRequest(prompt="p", cwd=tmp_path, title="t", session_id="s-0"))
    assert "--resume" not in retry.command  # Gemini saved nothing for s-0
    kept = backend.invocation(AgentRequest(prompt="p", cwd=tmp_path, title="t", session_id="s-1"))
    assert kept.command[kept.command.index("--resume") + 1] == "s-1"
