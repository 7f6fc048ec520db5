"""A scripted OpenAI Responses API server for driving the real Codex CLI offline.

Same script DSL as `fake_provider`: `POST /v1/responses` consumes one turn per request that
offers tools and streams it back as Responses SSE (`response.created`,
`response.output_item.added/done`, `response.output_text.delta`,
`response.function_call_arguments.delta`, `response.completed` with usage). A tool call's
name and arguments are Codex's own (see `codex_shell`).

The script is chosen by the latest user message in the request's `input`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from .fake_provider import Calls, Drop, Fail, Hold, RecordedRequest, Say, _Handler
from .scripted_api import ScriptedApi

CODEX_MODEL = "fake-codex-1"


def part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    if isinstance(part.get("text"), str):
        return str(part["text"])
    if part.get("type") == "function_call_output":
        output = part.get("output")
        return output if isinstance(output, str) else json.dumps(output)
    if part.get("type") == "function_call":
        return str(part.get("arguments", ""))
    return ""


def item_text(item: Any) -> str:
    if not isinstance(item, dict):
        return part_text(item)
    content = item.get("content")
    if isinstance(content, list):
        return "\n".join(part_text(p) for p in content)
    if isinstance(content, str):
        return content
    return part_text(item)


def input_items(body: Mapping[str, Any]) -> list[Any]:
    items = body.get("input")
    return items if isinstance(items, list) else [items] if isinstance(items, str) else []


def prompt_text(body: Mapping[str, Any]) -> str:
    """The latest user message (Codex also sends its environment context as user messages)."""
    for item in reversed(input_items(body)):
        if isinstance(item, dict) and item.get("role") == "user":
            text = item_text(item)
            if text.strip() and not text.lstrip().startswith("<environment_context>"):
                return text
    return ""


def all_text(body: Mapping[str, Any]) -> str:
    return "\n".join(item_text(item) for item in input_items(body))


def is_responses_path(path: str) -> bool:
    return path.split("?", 1)[0].rstrip("/").endswith("/responses")


def _event(payload: Mapping[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


def response_events(turn: Say | Calls, response_id: str, usage: Mapping[str, int]) -> Iterator[bytes]:
    output: list[dict[str, Any]] = []
    yield _event({"type": "response.created", "response": {"id": response_id, "status": "in_progress"}})
    index = 0
    if turn.text:
        item_id = f"msg_{response_id}"
        yield _event({"type": "response.output_item.added", "output_index": index, "item": {
            "type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}})
        yield _event({"type": "response.output_text.delta", "item_id": item_id, "output_index": index,
                      "content_index": 0, "delta": turn.text})
        item = {"type": "message", "id": item_id, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}]}
        yield _event({"type": "response.output_item.done", "output_index": index, "item": item})
        output.append(item)
        index += 1
    if isinstance(turn, Calls):
        for number, tool_call in enumerate(turn.calls):
            call_id = f"call_{response_id}_{number}"
            arguments = json.dumps(tool_call.arguments)
            item = {"type": "function_call", "id": f"fc_{response_id}_{number}", "call_id": call_id,
                    "name": tool_call.name, "arguments": arguments, "status": "completed"}
            yield _event({"type": "response.output_item.added", "output_index": index,
                          "item": {**item, "arguments": "", "status": "in_progress"}})
            yield _event({"type": "response.function_call_arguments.delta", "item_id": item["id"],
                          "output_index": index, "delta": arguments})
            yield _event({"type": "response.output_item.done", "output_index": index, "item": item})
            output.append(item)
            index += 1
    prompt, completion = usage.get("prompt_tokens", 1), usage.get("completion_tokens", 1)
    yield _event({"type": "response.completed", "response": {
        "id": response_id, "status": "completed", "output": output,
        "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": prompt + completion}}})


class FakeResponses(ScriptedApi):
    """The scripted Responses API server (start/stop and scripting as `FakeProvider`)."""

    id_prefix = "resp"
    is_turn_path = staticmethod(is_responses_path)
    prompt_text = staticmethod(prompt_text)
    all_text = staticmethod(all_text)


class _ResponsesHandler(_Handler):
    def do_GET(self) -> None:
        self.owner._record("GET", self.path, None)
        self._send_json(200, {"object": "list", "data": [{"id": CODEX_MODEL, "object": "model"}], "models": []})

    def _answer(self, body: dict[str, Any] | None, reply: Any, record: RecordedRequest, completion_id: str) -> None:
        if body is None:
            self._send_error(400, "request body is not a JSON object", "invalid_request_error")
        elif reply is None:
            self._send_error(404, f"no route {self.path}", "not_found")
        elif isinstance(reply, Fail):
            self._send_error(reply.status, reply.message, "rate_limit_exceeded" if reply.status == 429 else "server_error")
        elif isinstance(reply, Drop):
            self._drop()
        elif isinstance(reply, Hold):
            raise AssertionError("held replies are released before _answer")
        else:
            self._stream(response_events(reply, completion_id, record.usage or {}))



FakeResponses.handler = _ResponsesHandler

def codex_home_config(port: int) -> str:
    """config.toml for CODEX_HOME: a model provider on the scripted server (wire_api "responses")."""
    return "\n".join([
        f'model = "{CODEX_MODEL}"',
        'model_provider = "fake"',
        "[model_providers.fake]",
        'name = "Fake"',
        f'base_url = "http://127.0.0.1:{port}/v1"',
        'wire_api = "responses"',
        'env_key = "FAKE_CODEX_API_KEY"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
    ])


def codex_env(port: int, home: Any) -> dict[str, str]:
    from pathlib import Path

    from .fake_provider import isolated_dirs

    env = isolated_dirs(Path(home))
    codex_home = Path(home) / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_home_config(port), encoding="utf-8")
    env.update({"CODEX_HOME": str(codex_home), "FAKE_CODEX_API_KEY": "sk-fake-codex-e2e"})
    return env
