"""`gemini --output-format stream-json` events as AgentEvents.

One JSON object a line: `init {session_id, model}`, `message {role, content, delta}`,
`tool_use {tool_name, tool_id, parameters}`, `tool_result {tool_id, status: success|error,
output, error {type, message}}`, `error {severity, message}`, and a final
`result {status, stats {total_tokens, input_tokens, output_tokens, cached}, error}`.

A tool call becomes one `ToolUse` when its result arrives, as kilo reports them. Assistant
text arrives in deltas and is reported per message. Tokens come once, with the result; the
Gemini CLI reports no cost.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kilo_loop.agent.ndjson import NdjsonParser, as_dict, as_int, as_str
from kilo_loop.agent.protocol import (
    AgentError,
    AgentEvent,
    SessionStarted,
    StepFinished,
    Text,
    TokenUsage,
    ToolUse,
)


def gemini_tokens(stats: Any) -> TokenUsage:
    raw = as_dict(stats)
    cached = as_int(raw.get("cached"))
    prompt, output = as_int(raw.get("input_tokens")), as_int(raw.get("output_tokens"))
    total = as_int(raw.get("total_tokens")) or prompt + output
    return TokenUsage(total=total, input=max(0, prompt - cached), output=output, cache_read=cached)


class GeminiEventMapper:
    def __init__(self) -> None:
        self._pending: dict[str, tuple[str, dict[str, Any]]] = {}
        self._text: list[str] = []

    def __call__(self, raw: dict[str, Any]) -> Iterator[AgentEvent]:
        kind = raw.get("type")
        if kind == "init" and as_str(raw.get("session_id")):
            yield SessionStarted(as_str(raw.get("session_id")))
        elif kind == "message" and raw.get("role") == "assistant":
            self._text.append(as_str(raw.get("content")))
        elif kind == "tool_use":
            yield from self._flush_text()
            parameters = raw.get("parameters")
            self._pending[as_str(raw.get("tool_id"))] = (as_str(raw.get("tool_name")) or "tool",
                                                          parameters if isinstance(parameters, dict) else {})
        elif kind == "tool_result":
            yield self._tool_result(raw)
        elif kind == "error":
            message = as_str(raw.get("message"))
            if as_str(raw.get("severity")) == "error" and message:
                yield AgentError("Error", message)
        elif kind == "result":
            yield from self._result(raw)

    def _flush_text(self) -> Iterator[AgentEvent]:
        text = "".join(self._text)
        self._text.clear()
        if text.strip():
            yield Text(text)

    def _tool_result(self, raw: dict[str, Any]) -> ToolUse:
        call_id = as_str(raw.get("tool_id"))
        tool, parameters = self._pending.pop(call_id, ("tool", {}))
        failed = raw.get("status") == "error"
        error = as_str(as_dict(raw.get("error")).get("message")) if failed else ""
        return ToolUse(tool, parameters, "error" if failed else "completed", output=as_str(raw.get("output")),
                       error=error or (as_str(raw.get("output")) if failed else ""), call_id=call_id)

    def finish(self) -> Iterator[AgentEvent]:
        yield from self._flush_text()
        for call_id, (tool, parameters) in self._pending.items():
            yield ToolUse(tool, parameters, "pending", call_id=call_id)
        self._pending.clear()

    def _result(self, raw: dict[str, Any]) -> Iterator[AgentEvent]:
        yield from self.finish()
        yield StepFinished(tokens=gemini_tokens(raw.get("stats")), cost=0.0, reason="stop")
        if raw.get("status") == "error":
            error = as_dict(raw.get("error"))
            yield AgentError(as_str(error.get("type")) or "Error", as_str(error.get("message")) or "Gemini CLI failed")


class GeminiStreamParser(NdjsonParser):
    def __init__(self) -> None:
        super().__init__(GeminiEventMapper())
