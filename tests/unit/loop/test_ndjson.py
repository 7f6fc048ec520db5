from __future__ import annotations

import json

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from kilo_loop.agent.kilo.stream import NdjsonEventParser
from kilo_loop.agent.protocol import AgentError, GarbageLine, SessionStarted, StepFinished, Text, ToolUse
from tests.support.paths import FIXTURES


def line(obj: dict) -> bytes:
    return orjson.dumps(obj) + b"\n"


TOOL = {"type": "tool_use", "sessionID": "ses_1", "part": {"id": "p1", "tool": "bash", "callID": "c1",
        "state": {"status": "completed", "input": {"command": "ls"}, "output": "a\n"}}}
STEP = {"type": "step_finish", "sessionID": "ses_1", "part": {"id": "p2", "reason": "stop", "cost": 0.5,
        "tokens": {"total": 100, "input": 80, "output": 20, "reasoning": 0, "cache": {"read": 5, "write": 1}}}}


def parse(data: bytes, chunk: int = 7) -> list:
    parser = NdjsonEventParser()
    events = []
    for i in range(0, len(data), chunk):
        events += list(parser.feed(data[i:i + chunk]))
    return events + list(parser.finish())


def test_events_are_normalized_across_chunk_boundaries() -> None:
    events = parse(line(TOOL) + line(STEP))
    assert isinstance(events[0], SessionStarted) and events[0].session_id == "ses_1"
    tool = events[1]
    assert isinstance(tool, ToolUse) and tool.tool == "bash" and tool.input == {"command": "ls"}
    step = events[2]
    assert isinstance(step, StepFinished) and step.cost == 0.5
    assert step.tokens.total == 100 and step.tokens.cache_read == 5


def test_duplicates_by_part_id_are_dropped() -> None:
    events = parse(line(TOOL) + line(TOOL) + line(STEP) + line(STEP))
    assert [type(e).__name__ for e in events] == ["SessionStarted", "ToolUse", "StepFinished"]


def test_same_part_with_new_status_is_kept() -> None:
    pending = json.loads(json.dumps(TOOL))
    pending["part"]["state"]["status"] = "running"
    events = parse(line(pending) + line(TOOL))
    assert [e.status for e in events if isinstance(e, ToolUse)] == ["running", "completed"]


def test_error_event_carries_name_message_and_status() -> None:
    raw = {"type": "error", "error": {"name": "APIError", "data": {"message": "boom", "statusCode": 500,
                                                                   "isRetryable": True}}}
    (event,) = parse(line(raw))
    assert isinstance(event, AgentError) and event.name == "APIError"
    assert event.message == "HTTP 500: boom" and event.retryable is True


def test_garbage_and_non_objects_become_garbage_events() -> None:
    events = parse(b"not json\n[1,2]\n\n" + line({"type": "text", "part": {"id": "t", "text": "hi"}}))
    assert [type(e) for e in events] == [GarbageLine, GarbageLine, Text]
    assert events[0].line == "not json"


def test_partial_last_line_is_parsed_at_finish() -> None:
    data = line(TOOL) + orjson.dumps(STEP)  # no trailing newline
    events = parse(data)
    assert isinstance(events[-1], StepFinished)


def test_torn_last_line_is_garbage_not_a_crash() -> None:
    events = parse(line(TOOL) + b'{"type": "step_fin')
    assert isinstance(events[-1], GarbageLine)


def test_missing_total_is_summed_from_parts() -> None:
    raw = {"type": "step_finish", "part": {"tokens": {"input": 10, "output": 5}}}
    (event,) = parse(line(raw))
    assert isinstance(event, StepFinished) and event.tokens.total == 15 and event.cost == 0.0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    parse(data, chunk=5)


# --------------------------------------------------------- real CLI captures
NDJSON = FIXTURES / "ndjson"


def fixture_events(name: str) -> list:
    return parse((NDJSON / name).read_bytes(), chunk=64)


def test_real_kilo_bash_capture() -> None:
    events = fixture_events("kilo_tool_bash.jsonl")
    tools = [e for e in events if isinstance(e, ToolUse)]
    assert tools and tools[0].tool == "bash" and tools[0].status == "completed" and tools[0].input["command"]
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert steps and all(s.tokens.total > 0 for s in steps)
    assert isinstance(events[0], SessionStarted) and events[0].session_id.startswith("ses_")
    assert not any(isinstance(e, GarbageLine) for e in events)


def test_real_kilo_denial_is_a_tool_error() -> None:
    tools = [e for e in fixture_events("kilo_denied.jsonl") if isinstance(e, ToolUse)]
    assert tools[0].status == "error" and "prevents you from using this specific tool call" in tools[0].error


def test_real_kilo_error_capture() -> None:
    errors = [e for e in fixture_events("kilo_error.jsonl") if isinstance(e, AgentError)]
    assert errors and errors[0].name and errors[0].message


def test_real_opencode_capture_has_the_same_shape() -> None:
    events = fixture_events("opencode_tool_bash.jsonl")
    assert any(isinstance(e, ToolUse) and e.tool == "bash" for e in events)
    assert any(isinstance(e, StepFinished) for e in events)
