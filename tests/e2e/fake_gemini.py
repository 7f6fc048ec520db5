"""A scripted Gemini API server for driving the real Gemini CLI offline (GOOGLE_GEMINI_BASE_URL).

Same script DSL as `fake_provider`: `POST /v1beta/models/<model>:streamGenerateContent` with tools
consumes one turn and streams it back as SSE `GenerateContentResponse` chunks
(`candidates[0].content.parts` = text / `functionCall {name, args}`, `finishReason`,
`usageMetadata`); `:generateContent` gets the same answer as one JSON object. Requests
without tools (the CLI's routing and checks) get a short text and consume nothing. A tool
call's name and arguments are the Gemini CLI's own (`run_shell_command {command}`,
`write_file {file_path, content}`).

The script is chosen by the latest user text (function responses are user turns too).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from .fake_provider import Calls, Drop, Fail, Hold, RecordedRequest, Say, _Handler
from .scripted_api import ScriptedApi

GEMINI_MODEL = "gemini-2.5-flash"


def part_text(part: Any) -> str:
    if not isinstance(part, dict):
        return ""
    if isinstance(part.get("text"), str):
        return str(part["text"])
    if isinstance(part.get("functionResponse"), dict):
        return json.dumps(part["functionResponse"].get("response", {}))
    if isinstance(part.get("functionCall"), dict):
        return json.dumps(part["functionCall"].get("args", {}))
    return ""


def content_text(content: Any) -> str:
    parts = content.get("parts") if isinstance(content, dict) else None
    return "\n".join(part_text(p) for p in parts or [])


def prompt_text(body: Mapping[str, Any]) -> str:
    for content in reversed(body.get("contents") or []):
        if not isinstance(content, dict) or content.get("role") != "user":
            continue
        texts = [str(p["text"]) for p in content.get("parts") or [] if isinstance(p, dict) and "text" in p]
        text = "\n".join(t for t in texts if t.strip() and not t.lstrip().startswith("<session_context>"))
        if text.strip():
            return text
    return ""


def all_text(body: Mapping[str, Any]) -> str:
    return "\n".join(content_text(c) for c in body.get("contents") or [])


def is_generate_path(path: str) -> bool:
    route = path.split("?", 1)[0]
    return route.endswith((":streamGenerateContent", ":generateContent"))


def has_tools(body: Mapping[str, Any]) -> bool:
    return any(isinstance(t, dict) and t.get("functionDeclarations") for t in body.get("tools") or [])


def response_json(turn: Say | Calls, usage: Mapping[str, int]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
    if isinstance(turn, Calls):
        parts += [{"functionCall": {"name": c.name, "args": dict(c.arguments)}} for c in turn.calls]
    prompt, completion = usage.get("prompt_tokens", 1), usage.get("completion_tokens", 1)
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": completion,
                              "totalTokenCount": prompt + completion},
            "modelVersion": GEMINI_MODEL}


def sse_chunks(turn: Say | Calls, usage: Mapping[str, int]) -> Iterator[bytes]:
    yield b"data: " + json.dumps(response_json(turn, usage), separators=(",", ":")).encode() + b"\r\n\r\n"


class FakeGemini(ScriptedApi):
    """The scripted Gemini API server (start/stop and scripting as `FakeProvider`)."""

    id_prefix = "gen"
    is_turn_path = staticmethod(is_generate_path)
    offers_tools = staticmethod(has_tools)
    prompt_text = staticmethod(prompt_text)
    all_text = staticmethod(all_text)


class _GeminiHandler(_Handler):
    def do_GET(self) -> None:
        self.owner._record("GET", self.path, None)
        self._send_json(200, {"models": [{"name": f"models/{GEMINI_MODEL}"}]})

    def _answer(self, body: dict[str, Any] | None, reply: Any, record: RecordedRequest, completion_id: str) -> None:
        if body is None:
            self._send_error(400, "request body is not a JSON object", "INVALID_ARGUMENT")
        elif reply is None:
            if self.path.split("?", 1)[0].endswith(":countTokens"):
                self._send_json(200, {"totalTokens": max(1, len(json.dumps(body)) // 4)})
            else:
                self._send_error(404, f"no route {self.path}", "NOT_FOUND")
        elif isinstance(reply, Fail):
            self._send_error(reply.status, reply.message,
                             "RESOURCE_EXHAUSTED" if reply.status == 429 else "INTERNAL")
        elif isinstance(reply, Drop):
            self._drop()
        elif isinstance(reply, Hold):
            raise AssertionError("held replies are released before _answer")
        elif self.path.split("?", 1)[0].endswith(":streamGenerateContent"):
            self._stream(sse_chunks(reply, record.usage or {}))
        else:
            self._send_json(200, response_json(reply, record.usage or {}))

    def _send_error(self, status: int, message: str, kind: str) -> None:
        self._send_json(status, {"error": {"code": status, "message": message, "status": kind}})



FakeGemini.handler = _GeminiHandler

def gemini_env(port: int, home: Any, max_attempts: int | None = None) -> dict[str, str]:
    """Environment for the Gemini CLI against the fake server; `max_attempts=1` stops its own retries."""
    from pathlib import Path

    from .fake_provider import isolated_dirs

    env = isolated_dirs(Path(home))
    # Headless runs accept only a chosen auth type; the API key one reads GOOGLE_GEMINI_BASE_URL too.
    settings = Path(home) / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}},
                                    "privacy": {"usageStatisticsEnabled": False},
                                    "general": {"disableAutoUpdate": True,
                                                **({"maxAttempts": max_attempts} if max_attempts else {})}}),
                        encoding="utf-8")
    env.update({"GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{port}", "GEMINI_API_KEY": "fake-gemini-e2e-key",
                "GEMINI_MODEL": GEMINI_MODEL, "GEMINI_CLI_NO_RELAUNCH": "true", "NO_BROWSER": "true"})
    return env
