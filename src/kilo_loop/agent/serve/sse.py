"""Decode a Server-Sent Events stream (`GET /event`) into JSON objects.

Fed line by line as the bytes arrive: `data:` lines accumulate, a blank line
ends the frame. A frame whose data is not a JSON object is reported, not
raised, so one bad frame cannot end the stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True)
class BadFrame:
    """A frame that was not a JSON object (kept for the log, then skipped)."""

    data: str
    problem: str


class SseDecoder:
    """feed(line) returns the frame the line completed, if any."""

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> dict[str, Any] | BadFrame | None:
        line = line.rstrip("\r\n")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment / keep-alive
        field, _, value = line.partition(":")
        if field == "data":
            self._data.append(value.removeprefix(" "))
        return None

    def finish(self) -> dict[str, Any] | BadFrame | None:
        return self._dispatch()

    def _dispatch(self) -> dict[str, Any] | BadFrame | None:
        if not self._data:
            return None
        data = "\n".join(self._data)
        self._data.clear()
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            return BadFrame(data[:200], f"not JSON: {exc}")
        if not isinstance(parsed, dict):
            return BadFrame(data[:200], "not a JSON object")
        return parsed
