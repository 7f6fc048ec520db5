"""Follow a JSON-lines file as another process appends to it (events.jsonl, inbox.jsonl)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson

POLL_SECONDS = 0.05


class LineFollower:
    """Reads whole lines appended since the last call; a torn last line waits for its newline.
    Garbage lines are skipped (a crashed writer must not stop the reader), shown to `on_garbage`."""

    def __init__(self, path: Path, offset: int = 0, on_garbage: Callable[[bytes], None] | None = None) -> None:
        self.path = path
        self.offset = offset
        self._partial = b""
        self._on_garbage = on_garbage

    @property
    def consumed(self) -> int:
        """The offset just past the last whole line read (a torn last line is not consumed yet)."""
        return self.offset - len(self._partial)

    def read_new(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        records = []
        for line in lines:
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                value = None
            if isinstance(value, dict):
                records.append(value)
            elif line.strip() and self._on_garbage is not None:
                self._on_garbage(line)
        return records


async def follow(
    path: Path, stop: Callable[[], bool], offset: int = 0, poll: float = POLL_SECONDS
) -> AsyncIterator[dict[str, Any]]:
    """Every record appended to `path` until `stop()` is true (then what is left is drained)."""
    follower = LineFollower(path, offset)
    while True:
        done = stop()
        for record in follower.read_new():
            yield record
        if done:
            return
        await asyncio.sleep(poll)
