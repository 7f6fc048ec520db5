"""Turn the `<cli> run --format json` NDJSON stream into normalized AgentEvents.

The stream is fed in arbitrary byte chunks as it arrives; complete lines are
parsed at once, a torn last line is parsed at `finish()`. Lines that are not
JSON objects become `GarbageLine` events (logged and skipped by the loop).
Older CLI releases printed every event twice, so events are de-duplicated by
their part id (and, for tool calls, their status).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from kilo_loop.agent.protocol import (
    AgentError,
    AgentEvent,
    GarbageLine,
    Reasoning,
    SessionStarted,
    StepFinished,
    Text,
    TokenUsage,
    ToolUse,
)

_GARBAGE_PREVIEW = 200


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _as_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else orjson.dumps(value).decode()


def parse_tokens(raw: Any) -> TokenUsage:
    tokens = _as_dict(raw)
    cache = _as_dict(tokens.get("cache"))
    total = _as_int(tokens.get("total"))
    usage = TokenUsage(
        total=total,
        input=_as_int(tokens.get("input")),
        output=_as_int(tokens.get("output")),
        reasoning=_as_int(tokens.get("reasoning")),
        cache_read=_as_int(cache.get("read")),
        cache_write=_as_int(cache.get("write")),
    )
    if not total:
        summed = usage.input + usage.output + usage.reasoning + usage.cache_read + usage.cache_write
        usage = TokenUsage(summed, usage.input, usage.output, usage.reasoning, usage.cache_read, usage.cache_write)
    return usage


def _error_event(raw: dict[str, Any]) -> AgentError:
    error = raw.get("error")
    if not isinstance(error, dict):
        part = _as_dict(raw.get("part"))
        error = part.get("error", error)
    if not isinstance(error, dict):
        return AgentError(name="Error", message=_as_str(error) or "unknown error")
    data = _as_dict(error.get("data"))
    message = _as_str(data.get("message") or error.get("message")) or _as_str(error)
    status = data.get("statusCode")
    if isinstance(status, int) and str(status) not in message:
        message = f"HTTP {status}: {message}"
    retryable = data.get("isRetryable")
    return AgentError(
        name=_as_str(error.get("name")) or "Error",
        message=message,
        retryable=retryable if isinstance(retryable, bool) else None,
    )


def _tool_event(part: dict[str, Any]) -> ToolUse:
    state = _as_dict(part.get("state"))
    tool_input = state.get("input")
    return ToolUse(
        tool=_as_str(part.get("tool")) or "tool",
        input=tool_input if isinstance(tool_input, dict) else {},
        status=_as_str(state.get("status")) or "completed",
        output=_as_str(state.get("output")),
        error=_as_str(state.get("error")),
        call_id=_as_str(part.get("callID")),
    )


def event_from_object(raw: dict[str, Any]) -> AgentEvent | None:
    """Map one decoded CLI event to an AgentEvent (None for events the loop ignores)."""
    kind = raw.get("type")
    part = _as_dict(raw.get("part"))
    if kind == "tool_use":
        return _tool_event(part)
    if kind == "text":
        return Text(_as_str(part.get("text")))
    if kind == "reasoning":
        return Reasoning(_as_str(part.get("text")))
    if kind == "step_finish":
        cost = part.get("cost")
        return StepFinished(
            tokens=parse_tokens(part.get("tokens")),
            cost=float(cost) if isinstance(cost, (int, float)) else 0.0,
            reason=_as_str(part.get("reason")),
        )
    if kind == "error":
        return _error_event(raw)
    return None


class NdjsonEventParser:
    """Incremental parser: feed() byte chunks, then finish() at end of stream."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._seen_parts: set[tuple[str, str]] = set()
        self.session_id: str | None = None

    def feed(self, chunk: bytes) -> Iterator[AgentEvent]:
        self._buffer += chunk
        end = self._buffer.rfind(b"\n")
        if end < 0:
            return
        complete = bytes(self._buffer[: end + 1])
        del self._buffer[: end + 1]
        for line in complete.split(b"\n"):
            yield from self.parse_line(line)

    def finish(self) -> Iterator[AgentEvent]:
        rest = bytes(self._buffer)
        self._buffer.clear()
        yield from self.parse_line(rest)

    def parse_line(self, line: bytes) -> Iterator[AgentEvent]:
        if not line.strip():
            return
        try:
            raw = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            yield GarbageLine(line[:_GARBAGE_PREVIEW].decode("utf-8", "replace"), f"not JSON: {exc}")
            return
        if not isinstance(raw, dict):
            yield GarbageLine(line[:_GARBAGE_PREVIEW].decode("utf-8", "replace"), "not a JSON object")
            return
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
