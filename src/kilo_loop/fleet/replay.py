"""What to publish when Redis answers again after an outage, from the run's own events.jsonl.

The run writes every event to events.jsonl before the worker reads it, so the file is the outage
buffer: nothing is copied while Redis is away (the worker stops reading the file), so the buffer
costs no disk and no memory beyond what one poll read. On return, the stream's last sequence number
decides: events the stream lost (Redis came back empty, or an fsync window was lost) are read back
from the file, events it already holds (a reply lost after the write) are dropped — in order, and
each event once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson


def seq(event: dict[str, Any]) -> int:
    value = event.get("seq", 0)
    return value if isinstance(value, int) else int(value or 0)


def not_in_stream(held: list[dict[str, Any]], stream_last: int) -> list[dict[str, Any]]:
    """The events read but not yet published that the stream does not hold already."""
    return [event for event in held if seq(event) > stream_last]


def lost_from_stream(events_file: Path, stream_last: int, published_last: int,
                     batch: int = 1000) -> Iterator[list[dict[str, Any]]]:
    """Events this worker published that the stream no longer holds (seq in (stream_last,
    published_last]), read back from events.jsonl in order, in batches; a file read line by line."""
    if published_last <= stream_last or not events_file.is_file():
        return
    out: list[dict[str, Any]] = []
    with events_file.open("rb") as handle:
        for line in handle:
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a torn last line: not published yet, so not lost either
            if not isinstance(event, dict):
                continue
            number = seq(event)
            if number > published_last:
                break
            if number > stream_last:
                out.append(event)
                if len(out) >= batch:
                    yield out
                    out = []
    if out:
        yield out
