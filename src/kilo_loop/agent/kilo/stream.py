"""`kilo run --format json` / `opencode run --format json` events as AgentEvents.

One JSON object a line: `{"type": "step_start"|"tool_use"|"text"|"reasoning"|"step_finish"|"error",
"sessionID", "part": {...}}`. Older CLI releases printed every event twice, so events are
de-duplicated by their part id (and, for tool calls, their status).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kilo_loop.agent.ndjson import NdjsonParser, as_dict, as_int, as_str
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


def parse_tokens(raw: Any) -> TokenUsage:
    tokens = as_dict(raw)
    cache = as_dict(tokens.get("cache"))
    total = as_int(tokens.get("total"))
    usage = TokenUsage(
        total=total,
        input=as_int(tokens.get("input")),
        output=as_int(tokens.get("output")),
        reasoning=as_int(tokens.get("reasoning")),
        cache_read=as_int(cache.get("read")),
        cache_write=as_int(cache.get("write")),
    )
    if not total:
        summed = usage.input + usage.output + usage.reasoning + usage.cache_read + usage.cache_write
        usage = TokenUsage(summed, usage.input, usage.output, usage.reasoning, usage.cache_read, usage.cache_write)
    return usage


def _error_event(raw: dict[str, Any]) -> AgentError:
    error = raw.get("error")
    if not isinstance(error, dict):
        part = as_dict(raw.get("part"))
        error = part.get("error", error)
    if not isinstance(error, dict):
        return AgentError(name="Error", message=as_str(error) or "unknown error")
    data = as_dict(error.get("data"))
    message = as_str(data.get("message") or error.get("message")) or as_str(error)
    status = data.get("statusCode")
    if isinstance(status, int) and str(status) not in message:
        message = f"HTTP {status}: {message}"
    retryable = data.get("isRetryable")
    return AgentError(
        name=as_str(error.get("name")) or "Error",
        message=message,
        retryable=retryable if isinstance(retryable, bool) else None,
    )


def _tool_event(part: dict[str, Any]) -> ToolUse:
    state = as_dict(part.get("state"))
    tool_input = state.get("input")
    return ToolUse(
        tool=as_str(part.get("tool")) or "tool",
        input=tool_input if isinstance(tool_input, dict) else {},
        status=as_str(state.get("status")) or "completed",
        output=as_str(state.get("output")),
        error=as_str(state.get("error")),
        call_id=as_str(part.get("callID")),
    )


def event_from_object(raw: dict[str, Any]) -> AgentEvent | None:
    """Map one decoded CLI event to an AgentEvent (None for events the loop ignores)."""
    kind = raw.get("type")
    part = as_dict(raw.get("part"))
    if kind == "tool_use":
        return _tool_event(part)
    if kind == "text":
        return Text(as_str(part.get("text")))
    if kind == "reasoning":
        return Reasoning(as_str(part.get("text")))
    if kind == "step_finish":
        cost = part.get("cost")
        return StepFinished(
            tokens=parse_tokens(part.get("tokens")),
            cost=float(cost) if isinstance(cost, (int, float)) else 0.0,
            reason=as_str(part.get("reason")),
        )
    if kind == "error":
        return _error_event(raw)
    return None


class KiloEventMapper:
    """Stateful mapping: a session id announced once, duplicate parts dropped."""

    def __init__(self) -> None:
        self._seen_parts: set[tuple[str, str]] = set()
        self.session_id: str | None = None

    def __call__(self, raw: dict[str, Any]) -> Iterator[AgentEvent]:
        if self._is_duplicate(raw):
            return
        session = raw.get("sessionID")
        if isinstance(session, str) and session and session != self.session_id:
            self.session_id = session
            yield SessionStarted(session)
        event = event_from_object(raw)
        if event is not None:
            yield event

    def _is_duplicate(self, raw: dict[str, Any]) -> bool:
        part = raw.get("part")
        if not isinstance(part, dict):
            return False
        part_id = part.get("id")
        if not isinstance(part_id, str) or not part_id:
            return False
        state = part.get("state")
        status = state.get("status") if isinstance(state, dict) else None
        key = (part_id, f"{raw.get('type')}:{status}")
        if key in self._seen_parts:
            return True
        self._seen_parts.add(key)
        return False


class NdjsonEventParser(NdjsonParser):
    """The kilo/opencode stream parser (feed byte chunks, then finish)."""

    def __init__(self) -> None:
        self._kilo = KiloEventMapper()
        super().__init__(self._kilo)

    @property
    def session_id(self) -> str | None:
        return self._kilo.session_id
