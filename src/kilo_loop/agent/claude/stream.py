"""`claude -p --output-format stream-json --verbose` events as AgentEvents.

One JSON object a line:
- `{"type": "system", "subtype": "init", "session_id": …}` starts the session;
- `{"type": "assistant", "message": {"id", "content": [text | thinking | tool_use {id, name, input}],
  "usage": {input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens}}}`
  — one event per content block, the same message id and usage repeated;
- `{"type": "user", "message": {"content": [tool_result {tool_use_id, content, is_error}]}}`;
- `{"type": "result", "subtype": "success" | "error_…", "is_error", "result", "total_cost_usd",
  "usage", "session_id"}` ends it.

A tool call becomes one `ToolUse` when its result arrives (completed, or error when it failed or
a PreToolUse hook refused it), as kilo reports them. Each model call's usage becomes a
`StepFinished` when the next call starts; the last one waits for `result`, which carries the
session's cost (Claude Code reports cost only at the end).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kilo_loop.agent.ndjson import NdjsonParser, as_dict, as_float, as_int, as_str
from kilo_loop.agent.protocol import (
    AgentError,
    AgentEvent,
    Reasoning,
    SessionStarted,
    StepFinished,
    Text,
    TokenUsage,
    ToolUse,
)


def claude_tokens(usage: Any) -> TokenUsage:
    raw = as_dict(usage)
    tokens = TokenUsage(
        input=as_int(raw.get("input_tokens")),
        output=as_int(raw.get("output_tokens")),
        cache_read=as_int(raw.get("cache_read_input_tokens")),
        cache_write=as_int(raw.get("cache_creation_input_tokens")),
    )
    total = tokens.input + tokens.output + tokens.cache_read + tokens.cache_write
    return TokenUsage(total, tokens.input, tokens.output, 0, tokens.cache_read, tokens.cache_write)


def tool_result_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(as_str(as_dict(part).get("text")) for part in content if isinstance(part, dict))
    return as_str(content)


class ClaudeEventMapper:
    def __init__(self) -> None:
        self.session_id: str | None = None
        self._pending_tools: dict[str, tuple[str, dict[str, Any]]] = {}
        self._message_id: str | None = None
        self._step: TokenUsage | None = None
        self._step_reason = ""

    def __call__(self, raw: dict[str, Any]) -> Iterator[AgentEvent]:
        session = raw.get("session_id")
        if isinstance(session, str) and session and session != self.session_id:
            self.session_id = session
            yield SessionStarted(session)
        kind = raw.get("type")
        if kind == "assistant":
            yield from self._assistant(as_dict(raw.get("message")))
        elif kind == "user":
            yield from self._user(as_dict(raw.get("message")))
        elif kind == "result":
            yield from self._result(raw)

    def _assistant(self, message: dict[str, Any]) -> Iterator[AgentEvent]:
        message_id = as_str(message.get("id"))
        if message_id != self._message_id:
            yield from self._flush_step(0.0, "tool-calls")
            self._message_id = message_id
        self._step = claude_tokens(message.get("usage"))
        self._step_reason = as_str(message.get("stop_reason"))
        for block in message.get("content") or []:
            block = as_dict(block)
            kind = block.get("type")
            if kind == "text" and as_str(block.get("text")).strip():
                yield Text(as_str(block.get("text")))
            elif kind == "thinking" and as_str(block.get("thinking")).strip():
                yield Reasoning(as_str(block.get("thinking")))
            elif kind == "tool_use":
                tool_input = block.get("input")
                self._pending_tools[as_str(block.get("id"))] = (
                    as_str(block.get("name")) or "tool", tool_input if isinstance(tool_input, dict) else {})

    def _user(self, message: dict[str, Any]) -> Iterator[AgentEvent]:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            block = as_dict(block)
            if block.get("type") != "tool_result":
                continue
            call_id = as_str(block.get("tool_use_id"))
            tool, tool_input = self._pending_tools.pop(call_id, ("tool", {}))
            text = tool_result_text(block.get("content"))
            failed = block.get("is_error") is True
            yield ToolUse(tool=tool, input=tool_input, status="error" if failed else "completed",
                          output="" if failed else text, error=text if failed else "", call_id=call_id)

    def _flush_step(self, cost: float, reason: str) -> Iterator[AgentEvent]:
        if self._step is not None or cost:
            yield StepFinished(tokens=self._step or TokenUsage(), cost=cost, reason=reason)
        self._step = None

    def finish(self) -> Iterator[AgentEvent]:
        """End of stream without a `result` (killed): what was held back is still reported."""
        yield from self._unanswered()
        yield from self._flush_step(0.0, "killed")

    def _unanswered(self) -> Iterator[AgentEvent]:
        for call_id, (tool, tool_input) in self._pending_tools.items():
            yield ToolUse(tool=tool, input=tool_input, status="pending", call_id=call_id)
        self._pending_tools.clear()

    def _result(self, raw: dict[str, Any]) -> Iterator[AgentEvent]:
        yield from self._unanswered()
        yield from self._flush_step(as_float(raw.get("total_cost_usd")), "stop")
        if raw.get("is_error") is True or as_str(raw.get("subtype")).startswith("error"):
            message = as_str(raw.get("result")) or "; ".join(as_str(e) for e in raw.get("errors") or [])
            yield AgentError(name=as_str(raw.get("subtype")) or "error", message=message or "Claude Code failed")


class ClaudeStreamParser(NdjsonParser):
    def __init__(self) -> None:
        self._claude = ClaudeEventMapper()
        super().__init__(self._claude)
