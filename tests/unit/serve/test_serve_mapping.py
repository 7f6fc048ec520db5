"""The serve transport's pure parts: SSE decoding and the bus-event → AgentEvent mapping.

Frames are shaped like the ones kilo 7.7.7 / opencode 1.18.33 send on `GET /event`
(checked by hand against the scripted provider)."""

from __future__ import annotations

from typing import Any

from kilo_loop.agent.kilo.stream import NdjsonEventParser
from kilo_loop.agent.protocol import AgentError, StepFinished, Text, TokenUsage, ToolUse
from kilo_loop.agent.serve.mapping import PermissionAsk, QuestionAsk, TurnBusy, TurnIdle, TurnMapper
from kilo_loop.agent.serve.sse import BadFrame, SseDecoder

SES = "ses_abc"


def frame(kind: str, **props: Any) -> dict[str, Any]:
    return {"id": "evt_1", "type": kind, "properties": props}


def tool_part(part_id: str, status: str, command: str = "echo hi", **state: Any) -> dict[str, Any]:
    return {"id": part_id, "sessionID": SES, "messageID": "msg_a", "type": "tool", "callID": "call_1",
            "tool": "bash", "state": {"status": status, "input": {"command": command}, **state}}


def part_frame(part: dict[str, Any]) -> dict[str, Any]:
    return frame("message.part.updated", sessionID=SES, part=part, time=1)


# ----------------------------------------------------------------------------- SSE


def test_sse_decoder_joins_data_lines_and_skips_comments() -> None:
    decoder = SseDecoder()
    lines = [": keep-alive", 'data: {"type": "a",', 'data: "properties": {}}', "", "event: x", "data: [1]", ""]
    out = [decoder.feed(line) for line in lines]
    assert out[3] == {"type": "a", "properties": {}}
    assert isinstance(out[6], BadFrame) and out[6].problem == "not a JSON object"
    assert [o for o in out if o is not None and not isinstance(o, BadFrame)] == [out[3]]


def test_sse_decoder_reports_garbage_and_flushes_a_torn_last_frame() -> None:
    decoder = SseDecoder()
    assert decoder.feed("data: {nope") is None
    bad = decoder.feed("")
    assert isinstance(bad, BadFrame) and bad.problem.startswith("not JSON")
    decoder.feed('data:{"type":"server.connected"}')
    assert decoder.finish() == {"type": "server.connected"}
    assert decoder.finish() is None


# ----------------------------------------------------------------------------- mapping


def test_a_tool_part_becomes_one_tool_use_when_it_finishes() -> None:
    mapper = TurnMapper(SES)
    assert mapper.feed(part_frame(tool_part("prt_1", "pending"))) == []
    assert mapper.feed(part_frame(tool_part("prt_1", "running"))) == []
    [event] = mapper.feed(part_frame(tool_part("prt_1", "completed", output="hi\n", title="x", metadata={})))
    assert event == ToolUse("bash", {"command": "echo hi"}, "completed", output="hi\n", call_id="call_1")
    assert mapper.feed(part_frame(tool_part("prt_1", "completed", output="hi\n"))) == []  # de-duplicated
    assert mapper.tools == {"call_1": "bash"}


def test_the_same_part_gives_the_same_event_as_the_run_transport() -> None:
    part = tool_part("prt_2", "error", command="touch x", error="The user rejected permission")
    [from_server] = TurnMapper(SES).feed(part_frame(part))
    line = b'{"type":"tool_use","sessionID":"' + SES.encode() + b'","part":' + _json(part) + b"}\n"
    events = [e for e in NdjsonEventParser().feed(line) if isinstance(e, ToolUse)]
    assert events == [from_server]


def _json(value: Any) -> bytes:
    import orjson

    return orjson.dumps(value)


def test_text_is_emitted_when_finished_and_never_the_prompt_or_synthetic_text() -> None:
    mapper = TurnMapper(SES, prompt="do it")
    mapper.feed(frame("message.updated", sessionID=SES, info={"id": "msg_u", "role": "user", "sessionID": SES}))
    user = {"id": "prt_u", "sessionID": SES, "messageID": "msg_u", "type": "text", "text": "the prompt",
            "time": {"start": 1, "end": 2}}
    assert mapper.feed(part_frame(user)) == []
    synthetic = {"id": "prt_s", "sessionID": SES, "messageID": "msg_a", "type": "text", "synthetic": True,
                 "text": "Initializing snapshot…", "time": {"start": 1, "end": 2}}
    assert mapper.feed(part_frame(synthetic)) == []
    streaming = {"id": "prt_t", "sessionID": SES, "messageID": "msg_a", "type": "text", "text": "fini",
                 "time": {"start": 1}}
    assert mapper.feed(part_frame(streaming)) == []
    assert mapper.feed(part_frame({**streaming, "text": "finished", "time": {"start": 1, "end": 3}})) == [
        Text("finished")]


def test_reasoning_only_with_thinking() -> None:
    part = {"id": "prt_r", "sessionID": SES, "messageID": "msg_a", "type": "reasoning", "text": "hmm",
            "time": {"start": 1, "end": 2}}
    assert TurnMapper(SES).feed(part_frame(part)) == []
    assert len(TurnMapper(SES, thinking=True).feed(part_frame(part))) == 1


def test_step_finish_carries_tokens_and_cost() -> None:
    part = {"id": "prt_f", "sessionID": SES, "messageID": "msg_a", "type": "step-finish", "reason": "stop",
            "cost": 0.25, "tokens": {"total": 30, "input": 20, "output": 10, "reasoning": 0,
                                     "cache": {"read": 0, "write": 0}}}
    assert TurnMapper(SES).feed(part_frame(part)) == [StepFinished(TokenUsage(30, 20, 10), 0.25, "stop")]


def test_other_sessions_are_ignored_but_their_permission_requests_are_brokered() -> None:
    mapper = TurnMapper(SES)
    other = tool_part("prt_o", "completed")
    other["sessionID"] = "ses_child"
    assert mapper.feed(part_frame(other) | {"properties": {"sessionID": "ses_child", "part": other}}) == []
    asked = frame("permission.asked", id="per_1", sessionID="ses_child", permission="bash",
                  patterns=["rm -rf x"], metadata={"command": "rm -rf x"}, always=["rm *"],
                  tool={"messageID": "msg_c", "callID": "call_9"})
    [ask] = mapper.feed(asked)
    assert ask == PermissionAsk("per_1", "ses_child", "bash", ("rm -rf x",), {"command": "rm -rf x"}, "call_9")
    assert ask.command == "rm -rf x"


def test_questions_are_parsed_with_their_option_labels() -> None:
    asked = frame("question.asked", id="que_1", sessionID=SES, questions=[
        {"question": "Which colour?", "header": "Colour",
         "options": [{"label": "red", "description": "r"}, {"label": "blue", "description": "b"}]}])
    [question] = TurnMapper(SES).feed(asked)
    assert isinstance(question, QuestionAsk)
    assert question.questions[0].question == "Which colour?" and question.questions[0].options == ("red", "blue")


def test_the_turn_is_over_at_idle_only_after_it_was_busy() -> None:
    mapper = TurnMapper(SES)
    assert mapper.feed(frame("session.idle", sessionID=SES)) == []  # a stale idle before the turn started
    assert mapper.feed(frame("session.status", sessionID=SES, status={"type": "busy"})) == [TurnBusy()]
    assert mapper.feed(frame("session.status", sessionID=SES, status={"type": "idle"})) == [TurnIdle()]
    assert mapper.feed(frame("session.idle", sessionID=SES)) == [TurnIdle()]


def test_a_session_error_maps_to_the_parsers_agent_error() -> None:
    error = {"name": "APIError", "data": {"message": "provider exploded", "statusCode": 500, "isRetryable": True}}
    [event] = TurnMapper(SES).feed(frame("session.error", sessionID=SES, error=error))
    assert event == AgentError("APIError", "HTTP 500: provider exploded", retryable=True)


def test_reconcile_returns_only_what_the_stream_dropped_in_message_order() -> None:
    mapper = TurnMapper(SES, known_messages=frozenset({"msg_old"}))
    mapper.feed(part_frame(tool_part("prt_1", "completed")))
    messages = [
        {"info": {"id": "msg_old", "role": "assistant"},
         "parts": [{"id": "prt_old", "type": "text", "text": "earlier turn", "time": {"start": 1, "end": 2}}]},
        {"info": {"id": "msg_u", "role": "user"},
         "parts": [{"id": "prt_u", "type": "text", "text": "prompt", "time": {"start": 1, "end": 2}}]},
        {"info": {"id": "msg_a", "role": "assistant", "error": {"name": "UnknownError", "data": {"message": "x"}}},
         "parts": [tool_part("prt_1", "completed"), tool_part("prt_2", "completed", command="ls"),
                   {"id": "prt_t", "type": "text", "text": "dropped", "time": {"start": 1, "end": 2}}]},
    ]
    missed = mapper.reconcile(messages)
    assert [type(e).__name__ for e in missed] == ["ToolUse", "Text", "AgentError"]
    assert isinstance(missed[0], ToolUse) and missed[0].input == {"command": "ls"}
    assert mapper.reconcile(messages) == []  # nothing twice
