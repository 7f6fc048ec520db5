"""Cursor: the stream-json mapping on a stream written from Cursor's documented format (the CLI is
not on a package registry), and the command line."""

from __future__ import annotations

import json
from pathlib import Path

from kilo_loop.agent.cursor.backend import CursorBackend, build_command
from kilo_loop.agent.cursor.stream import CursorStreamParser
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


def parse(data: bytes, chunk: int = 71) -> list[AgentEvent]:
    return feed(CursorStreamParser(), data, chunk)


def test_documented_stream() -> None:
    events = parse((STREAMS / "cursor-documented.ndjson").read_bytes())
    assert isinstance(events[0], SessionStarted) and events[0].session_id.startswith("c6b62c6f")
    tools = [(e.tool, e.input.get("filePath") or e.input.get("command"), e.status)
             for e in events if isinstance(e, ToolUse)]
    # the shell call is reported when it starts; the others when they complete
    assert tools == [("read", "README.md", "completed"), ("bash", "ls -la", "running"),
                     ("write", "README.md", "completed")]
    assert [e.text for e in events if isinstance(e, Text)] == ["I'll read the README first.", "Added a Usage section."]
    assert [e.reason for e in events if isinstance(e, StepFinished)] == ["stop"]
    assert not any(isinstance(e, AgentError) for e in events)


def line(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


def test_failed_shell_call_usage_and_error_result() -> None:
    data = b"".join([
        line(type="tool_call", subtype="started", call_id="c1", session_id="s",
             tool_call={"shellToolCall": {"args": {"command": "false"}}}),
        line(type="tool_call", subtype="completed", call_id="c1", session_id="s", tool_call={"shellToolCall": {
            "args": {"command": "false"}, "result": {"success": {"exitCode": 1, "stdout": "", "stderr": "boom"}}}}),
        line(type="tool_call", subtype="completed", call_id="c2", session_id="s", tool_call={
            "function": {"name": "mcp_search", "arguments": {"q": "x"}, "result": {"error": {"message": "no"}}}}),
        line(type="result", subtype="error", is_error=True, result="rate limit exceeded", session_id="s",
             usage={"input_tokens": 10, "output_tokens": 3}),
    ])
    events = parse(data)
    tools = [(e.tool, e.status, e.error) for e in events if isinstance(e, ToolUse)]
    assert tools == [("bash", "running", ""), ("bash", "error", "boom"), ("mcp_search", "error", "no")]
    step = next(e for e in events if isinstance(e, StepFinished))
    assert step.tokens.total == 13
    assert [e.message for e in events if isinstance(e, AgentError)] == ["rate limit exceeded"]


def test_command_line_and_prepare(tmp_path: Path) -> None:
    request = AgentRequest(prompt="do", cwd=Path("/p"), title="t", model="gpt-5", session_id="c-1")
    assert build_command("cursor-agent", request) == [
        "cursor-agent", "-p", "--output-format", "stream-json", "--force", "--model", "gpt-5", "--resume", "c-1", "do"]
    notes = CursorBackend("cursor-agent").prepare(AgentPolicy(project=tmp_path)).notes
    assert notes and "no pre-tool hook" in notes[0]
