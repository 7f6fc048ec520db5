"""A scripted Anthropic Messages API server for driving the real Claude Code CLI offline.

Same script DSL as `fake_provider` (`say`, `call`, `calls`, `fail`, `drop_connection`, `hold`,
markers): `POST /v1/messages` consumes one turn per request that offers tools and streams it back
as Anthropic SSE (`message_start`, `content_block_*`, `message_delta`, `message_stop`). Requests
without tools (Claude Code's own housekeeping) get a short text and consume nothing.
A tool call's name is Claude Code's own (`Bash`, `Write`, `Read`, …).

Anthropic messages put tool results in *user* messages, so the script is chosen by the latest
user message that carries text other than Claude Code's `<system-reminder>` blocks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from .fake_provider import MODEL_ID, Calls, Drop, Fail, Hold, RecordedRequest, Say, _Handler
from .scripted_api import ScriptedApi

ANTHROPIC_MODEL = "claude-fake-1"


def block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    if block.get("type") == "text":
        return str(block.get("text", ""))
    if block.get("type") == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return "".join(block_text(part) for part in content)
        return str(content or "")
    return ""


def content_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(block_text(block) for block in content)
    return block_text(content)


def prompt_text(body: Mapping[str, Any]) -> str:
    """The latest user text that is not a tool result or a system reminder."""
    for message in reversed(body.get("messages") or []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        texts = [block_text(b) for b in blocks if not (isinstance(b, dict) and b.get("type") == "tool_result")]
        text = "\n".join(t for t in texts if t and not t.lstrip().startswith("<system-reminder>"))
        if text.strip():
            return text
    return ""


def all_text(body: Mapping[str, Any]) -> str:
    return "\n".join(content_text(m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict))


def is_messages_path(path: str) -> bool:
    return path.split("?", 1)[0].rstrip("/").endswith("/v1/messages")


def _event(name: str, payload: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


def message_events(turn: Say | Calls, message_id: str, usage: Mapping[str, int]) -> Iterator[bytes]:
    """The SSE events of one streamed assistant message."""
    yield _event("message_start", {"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "model": ANTHROPIC_MODEL, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": usage.get("prompt_tokens", 1), "output_tokens": 1}}})
    index = 0
    text = turn.text
    if text:
        yield _event("content_block_start", {"type": "content_block_start", "index": index,
                                             "content_block": {"type": "text", "text": ""}})
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            if piece:
                yield _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                     "delta": {"type": "text_delta", "text": piece}})
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    if isinstance(turn, Calls):
        for number, tool_call in enumerate(turn.calls):
            yield _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": f"toolu_{message_id}_{number}", "name": tool_call.name, "input": {}}})
            yield _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(tool_call.arguments)}})
            yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
    stop = "tool_use" if isinstance(turn, Calls) else "end_turn"
    yield _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": usage.get("completion_tokens", 1)}})
    yield _event("message_stop", {"type": "message_stop"})


def message_json(turn: Say | Calls, message_id: str, usage: Mapping[str, int]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    if isinstance(turn, Calls):
        content += [{"type": "tool_use", "id": f"toolu_{message_id}_{n}", "name": c.name, "input": dict(c.arguments)}
                    for n, c in enumerate(turn.calls)]
    return {"id": message_id, "type": "message", "role": "assistant", "model": ANTHROPIC_MODEL, "content": content,
            "stop_reason": "tool_use" if isinstance(turn, Calls) else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": usage.get("prompt_tokens", 1), "output_tokens": usage.get("completion_tokens", 1)}}


class FakeAnthropic(ScriptedApi):
    """The scripted Messages API server (start/stop and scripting as `FakeProvider`)."""

    id_prefix = "msg"
    is_turn_path = staticmethod(is_messages_path)
    prompt_text = staticmethod(prompt_text)
    all_text = staticmethod(all_text)


class _AnthropicHandler(_Handler):
    def do_GET(self) -> None:
        self.owner._record("GET", self.path, None)
        self._send_json(200, {"data": [{"id": ANTHROPIC_MODEL, "type": "model", "display_name": MODEL_ID}],
                              "has_more": False})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _answer(self, body: dict[str, Any] | None, reply: Any, record: RecordedRequest, completion_id: str) -> None:
        if body is None:
            self._send_error(400, "request body is not a JSON object", "invalid_request_error")
        elif reply is None:
            if self.path.split("?", 1)[0].endswith("/count_tokens"):
                self._send_json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})
            else:
                self._send_json(200, {})
        elif isinstance(reply, Fail):
            self._send_error(reply.status, reply.message, "rate_limit_error" if reply.status == 429 else "api_error")
        elif isinstance(reply, Drop):
            self._drop()
        elif isinstance(reply, Hold):
            raise AssertionError("held replies are released before _answer")
        elif body.get("stream"):
            self._stream(message_events(reply, completion_id, record.usage or {}))
        else:
            self._send_json(200, message_json(reply, completion_id, record.usage or {}))

    def _send_error(self, status: int, message: str, kind: str) -> None:
        self._send_json(status, {"type": "error", "error": {"type": kind, "message": message}})


def claude_env(port: int, home: Any) -> dict[str, str]:
    """Environment for Claude Code against the fake server: no telemetry, no other traffic."""
    from .fake_provider import isolated_dirs

    env = isolated_dirs(home)
    env.update({
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "sk-ant-fake-e2e-key",
        "ANTHROPIC_MODEL": ANTHROPIC_MODEL,
        "ANTHROPIC_SMALL_FAST_MODEL": ANTHROPIC_MODEL,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "IS_SANDBOX": "1",
    })
    return env


FakeAnthropic.handler = _AnthropicHandler
