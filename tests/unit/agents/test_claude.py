"""Claude Code: the stream-json mapping (on a stream recorded from the real CLI), the command line,
the generated settings file with the guard's PreToolUse hook, and the root/IS_SANDBOX message."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from kilo_loop.agent.claude.backend import (
    ROOT_HINT,
    SETTINGS_FILE,
    ClaudeBackend,
    build_command,
    explain,
)
from kilo_loop.agent.claude.stream import ClaudeStreamParser
from kilo_loop.agent.protocol import (
    AgentError,
    AgentEvent,
    AgentPolicy,
    AgentRequest,
    AgentResult,
    SessionStarted,
    StepFinished,
    Text,
    ToolUse,
)
from tests.unit.agents.streams import STREAMS, feed


def parse(data: bytes, chunk: int = 97) -> list[AgentEvent]:
    return feed(ClaudeStreamParser(), data, chunk)


def line(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


def test_recorded_stream_with_a_hook_denial() -> None:
    events = parse((STREAMS / "claude-2.1.328-hook-denied.ndjson").read_bytes())
    sessions = [e for e in events if isinstance(e, SessionStarted)]
    assert len(sessions) == 1
    tools = [e for e in events if isinstance(e, ToolUse)]
    assert [(t.tool, t.input["command"], t.status) for t in tools] == [
        ("Bash", "git push --force origin main", "error"), ("Bash", "echo ok > y.txt", "completed")]
    assert "denied by the loop's guard" in tools[0].error
    assert [e.text for e in events if isinstance(e, Text)] == ["all done"]
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert len(steps) == 3 and steps[-1].reason == "stop" and steps[-1].cost > 0
    assert all(s.tokens.total > 0 for s in steps) and not any(isinstance(e, AgentError) for e in events)


def test_content_blocks_of_one_message_count_its_usage_once() -> None:
    usage = {"input_tokens": 100, "output_tokens": 5, "cache_read_input_tokens": 50}
    data = b"".join([
        line(type="system", subtype="init", session_id="s1"),
        line(type="assistant", session_id="s1", message={"id": "m1", "usage": usage, "content": [
            {"type": "thinking", "thinking": "hmm"}]}),
        line(type="assistant", session_id="s1", message={"id": "m1", "usage": usage, "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}]}),
        line(type="user", session_id="s1", message={"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "body"}]}]}),
        line(type="result", subtype="success", session_id="s1", is_error=False, total_cost_usd=0.5),
    ])
    events = parse(data, chunk=13)
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert len(steps) == 1 and steps[0].tokens.total == 155 and steps[0].cost == 0.5
    tool = next(e for e in events if isinstance(e, ToolUse))
    assert (tool.tool, tool.output, tool.status) == ("Read", "body", "completed")


def test_error_result_is_an_agent_error() -> None:
    data = line(type="result", subtype="success", is_error=True, session_id="s",
                result="API Error: 500 {\"type\":\"error\"}")
    errors = [e for e in parse(data) if isinstance(e, AgentError)]
    assert errors and "API Error: 500" in errors[0].message


def test_a_killed_session_still_reports_its_unanswered_call_and_tokens() -> None:
    data = line(type="assistant", session_id="s", message={"id": "m", "usage": {"input_tokens": 7}, "content": [
        {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "sleep 100"}}]})
    events = parse(data)
    assert [(e.tool, e.status) for e in events if isinstance(e, ToolUse)] == [("Bash", "pending")]
    assert [e.tokens.total for e in events if isinstance(e, StepFinished)] == [7]


def test_command_line() -> None:
    request = AgentRequest(prompt="-do it", cwd=Path("/p"), title="t", agent="rev", model="opus", variant="high",
                           session_id="ses-1")
    command = build_command("claude", request, Path("/run/claude-settings.json"))
    assert command == ["claude", "-p", "--output-format", "stream-json", "--verbose", "--settings",
                       "/run/claude-settings.json", "--dangerously-skip-permissions", "--agent", "rev", "--model",
                       "opus", "--effort", "high", "--resume", "ses-1", "--", "-do it"]
    plain = build_command("claude", AgentRequest(prompt="x", cwd=Path("/p"), title="t", auto_approve=False), None)
    assert "--dangerously-skip-permissions" not in plain and "--settings" not in plain


def test_prepare_writes_a_settings_file_with_the_guard_hook(tmp_path: Path) -> None:
    backend = ClaudeBackend("claude")
    backend.prepare(AgentPolicy(project=tmp_path, run_dir=tmp_path / "run", guard_deny=("^make deploy",),
                                environ={"IS_SANDBOX": "1"}))
    settings = json.loads((tmp_path / "run" / SETTINGS_FILE).read_text())
    entry = settings["hooks"]["PreToolUse"][0]
    assert "Bash" in entry["matcher"].split("|") and "Write" in entry["matcher"].split("|")
    argv = shlex.split(entry["hooks"][0]["command"])
    assert argv[1:4] == ["-P", "-m", "kilo_loop.agent.hook"]
    rules = Path(argv[argv.index("--rules") + 1])
    assert json.loads(rules.read_text())["deny"] == ["^make deploy"]
    assert rules.stat().st_mode & 0o777 == 0o600
    command = backend.invocation(AgentRequest(prompt="x", cwd=tmp_path, title="t")).command
    assert command[command.index("--settings") + 1] == str(tmp_path / "run" / SETTINGS_FILE)


def test_guard_off_installs_no_hook(tmp_path: Path) -> None:
    backend = ClaudeBackend("claude")
    backend.prepare(AgentPolicy(project=tmp_path, run_dir=tmp_path / "run", guard=False))
    assert not (tmp_path / "run" / SETTINGS_FILE).exists()
    assert "--settings" not in backend.invocation(AgentRequest(prompt="x", cwd=tmp_path, title="t")).command


def test_root_refusal_explains_is_sandbox() -> None:
    result = AgentResult(exit_code=1, error="agent produced no events (exit 1)",
                         stderr_tail="--dangerously-skip-permissions cannot be used with root/sudo privileges for "
                                     "security reasons")
    explain(result)
    assert result.error is not None and "IS_SANDBOX=1" in result.error and ROOT_HINT in result.error
    other = AgentResult(exit_code=1, error="boom")
    explain(other)
    assert other.error == "boom"


@pytest.mark.parametrize("sandbox, noted", [("1", False), ("", True)])
def test_root_note_at_prepare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: str, noted: bool) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    notes = ClaudeBackend("claude").prepare(AgentPolicy(project=tmp_path, run_dir=tmp_path,
                                                        environ={"IS_SANDBOX": sandbox})).notes
    assert bool(notes) is noted and (not noted or "IS_SANDBOX=1" in notes[0])
