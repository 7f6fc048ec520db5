"""The run's event stream: every happening becomes one redacted line in events.jsonl
and is fanned out to subscribers (console, dashboard SSE, notifier)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson

Redact = Callable[[Any], Any]
Subscriber = Callable[["RunEvent"], None]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class RunEvent:
    """`type` names what happened; `message` is the human log line; `data` the details."""

    type: str
    message: str = ""
    level: str = "info"  # info | warn | error | tool | heading
    iteration: int | None = None
    data: dict[str, Any] = field(default_factory=dict)
    seq: int = 0
    ts: str = ""

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"seq": self.seq, "ts": self.ts, "type": self.type, "level": self.level}
        if self.iteration is not None:
            wire["iteration"] = self.iteration
        wire["message"] = self.message
        if self.data:
            wire["data"] = self.data
        return wire


class EventBus:
    """Appends every event to events.jsonl (append-only) and notifies subscribers.

    Redaction happens here, once, before anything is written or fanned out.
    """

    def __init__(self, path: Path, redact: Redact, start_seq: int = 0) -> None:
        self._path = path
        self._redact = redact
        self._seq = start_seq
        self._subscribers: list[Subscriber] = []
        self._handle: IO[bytes] | None = None

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber) if subscriber in self._subscribers else None

    @property
    def seq(self) -> int:
        return self._seq

    def emit(self, event: RunEvent) -> RunEvent:
        self._seq += 1
        event.seq = self._seq
        event.ts = event.ts or now_iso()
        event.message = self._redact(event.message)
        event.data = self._redact(event.data)
        self._append(event)
        for subscriber in list(self._subscribers):
            subscriber(event)
        return event

    def _append(self, event: RunEvent) -> None:
        if self._handle is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = self._path.open("ab")
            self._repair_torn_tail()
        self._handle.write(orjson.dumps(event.to_wire()) + b"\n")
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
