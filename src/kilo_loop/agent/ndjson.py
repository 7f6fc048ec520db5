"""Newline-delimited JSON streams, fed in arbitrary byte chunks, mapped to AgentEvents.

Every CLI backend prints one JSON object a line; only the mapping from a decoded
object to `AgentEvent`s differs, so each backend passes its own `EventMapper`.
Complete lines are parsed at once, a torn last line at `finish()`. Lines that are
not JSON objects become `GarbageLine` events (logged and skipped by the loop).
The small field readers here (`as_dict`, `as_int`, `as_str`) are shared by the mappers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson

from kilo_loop.agent.protocol import AgentEvent, GarbageLine

_GARBAGE_PREVIEW = 200

EventMapper = Callable[[dict[str, Any]], Iterable[AgentEvent]]


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def as_float(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def as_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else orjson.dumps(value).decode()


class NdjsonParser:
    """Incremental parser: feed() byte chunks, then finish() at end of stream."""

    def __init__(self, mapper: EventMapper) -> None:
        self._buffer = bytearray()
        self._mapper = mapper

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
        closing = getattr(self._mapper, "finish", None)  # a mapper holding events back releases them
        if callable(closing):
            yield from closing()

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
        yield from self._mapper(raw)
