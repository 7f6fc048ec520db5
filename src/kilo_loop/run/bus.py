"""The event bus: every event is redacted once, numbered, appended to events.jsonl and
handed to the subscribers (reducer, console, state writer, dashboard, notifier)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson

from kilo_loop.run.events import RunEvent, from_wire, now_iso

Redact = Callable[[Any], Any]
Subscriber = Callable[[RunEvent], None]


class EventBus:
    """Appends every event to events.jsonl (append-only) and notifies subscribers in order.

    Redaction happens here, once, before anything is written or fanned out: a subscriber
    only ever sees the redacted event.
    """

    def __init__(self, path: Path, redact: Redact, start_seq: int = 0) -> None:
        self._path = path
        self._redact = redact
        self._seq = start_seq
        self._subscribers: list[Subscriber] = []
        self._handle: IO[bytes] | None = None

    def subscribe(self, subscriber: Subscriber, first: bool = False) -> Callable[[], None]:
        """Add a subscriber (`first`: before the others, e.g. the reducer that they read)."""
        if first:
            self._subscribers.insert(0, subscriber)
        else:
            self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber) if subscriber in self._subscribers else None

    @property
    def seq(self) -> int:
        return self._seq

    def emit(self, event: RunEvent) -> RunEvent:
        self._seq += 1
        wire = event.to_wire()
        wire["seq"] = self._seq
        wire["ts"] = event.ts or now_iso()
        wire["message"] = self._redact(wire["message"])
        if "data" in wire:
            wire["data"] = self._redact(wire["data"])
        self._append(wire)
        stamped = from_wire(wire)
        for subscriber in list(self._subscribers):
            subscriber(stamped)
        return stamped

    def _append(self, wire: dict[str, Any]) -> None:
        if self._handle is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = self._path.open("ab")
            self._repair_torn_tail()
        self._handle.write(orjson.dumps(wire) + b"\n")
        self._handle.flush()

    def _repair_torn_tail(self) -> None:
        # A kill -9 mid-write can leave a last line without its newline; start ours on a fresh line.
        assert self._handle is not None
        if self._path.stat().st_size == 0:
            return
        with self._path.open("rb") as reader:
            reader.seek(-1, 2)
            if reader.read(1) != b"\n":
                self._handle.write(b"\n")

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
