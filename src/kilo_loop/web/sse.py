"""`GET /api/events`: the run's log lines and state changes as server-sent events.

One bus subscriber (the hub) encodes each event once and offers it to every client's own
bounded queue; it never waits, so a slow browser can never hold up the loop. A client whose
queue overflows is disconnected; it reconnects with `Last-Event-ID` (the event `seq`) and the
lines it missed are replayed from the run's events.jsonl.

Frames: `hello` (first, no id), `log` (id = seq, a slimmed RunEvent), `state` (no id, the
state header and the newest iterations), `run` (a different run is now active: reload).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from kilo_loop.run.events import RunEvent
from kilo_loop.run.store import read_log_lines
from kilo_loop.web.snapshot import slim_event

CLIENT_QUEUE_FRAMES = 1000
KEEPALIVE_SECONDS = 15.0
REPLAY_BATCH = 200
RECONNECT_HINT = b"retry: 1000\n\n"  # browsers reconnect after 1 s instead of their default 3 s


def sse_frame(data: Any, event: str | None = None, event_id: int | None = None) -> bytes:
    """One SSE frame; orjson output has no newlines, so the data fits one `data:` line."""
    head = (f"id: {event_id}\n" if event_id is not None else "") + (f"event: {event}\n" if event else "")
    return head.encode() + b"data: " + orjson.dumps(data) + b"\n\n"


def parse_last_event_id(header: str | None, query: str | None) -> int | None:
    """The seq a reconnecting client has seen: the Last-Event-ID header wins over `?after=`."""
    for raw in (header, query):
        if raw is not None and raw.strip().isdigit() and len(raw.strip()) < 19:
            return int(raw.strip())
    return None


class LiveSource(Protocol):
    """What the hub needs from the active run."""

    @property
    def run_id(self) -> str: ...

    @property
    def seq(self) -> int: ...

    @property
    def events_path(self) -> Path: ...

    def subscribe(
        self, on_event: Callable[[RunEvent], None], on_state: Callable[[], None]
    ) -> Callable[[], None]: ...

    def head(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Frame:
    seq: int | None
    data: bytes


class SseClient:
    def __init__(self, maxsize: int) -> None:
        self.queue: asyncio.Queue[Frame | None] = asyncio.Queue(maxsize)
        self.dropped = False
        self.closed = False

    def offer(self, frame: Frame) -> None:
        if self.dropped or self.closed:
            return
        try:
            self.queue.put_nowait(frame)
        except asyncio.QueueFull:
            self.dropped = True  # the stream ends; the browser reconnects and replays from disk

    def close(self) -> None:
        self.closed = True
        try:
            self.queue.put_nowait(None)
        except asyncio.QueueFull:
            pass  # the reader sees `closed` at its next frame


class EventHub:
    def __init__(self, queue_frames: int = CLIENT_QUEUE_FRAMES, keepalive: float = KEEPALIVE_SECONDS) -> None:
        self._clients: set[SseClient] = set()
        self._queue_frames = queue_frames
        self.keepalive = keepalive
        self.source: LiveSource | None = None
        self._unsubscribe: Callable[[], None] | None = None

    @property
    def client_count(self) -> int:
        return len(self._clients)

    def attach(self, source: LiveSource) -> None:
        """Follow a new run; connected clients are told to reload and reconnect."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.source = source
        self._unsubscribe = source.subscribe(self._on_event, self._on_state)
        frame = Frame(None, sse_frame({"runId": source.run_id, "seq": source.seq}, "run"))
        for client in list(self._clients):
            client.offer(frame)
            client.close()

    def connect(self) -> SseClient:
        client = SseClient(self._queue_frames)
        self._clients.add(client)
        return client

    def disconnect(self, client: SseClient) -> None:
        self._clients.discard(client)

    def close_all(self) -> None:
        for client in list(self._clients):
            client.close()

    def _broadcast(self, frame: Frame) -> None:
        for client in list(self._clients):
            client.offer(frame)

    def _on_event(self, event: RunEvent) -> None:
        # The bus redacted the event already; state-only records are not log lines.
        if self._clients and not event.RECORD_ONLY:
            self._broadcast(Frame(event.seq, sse_frame(slim_event(event.to_wire()), "log", event.seq)))

    def _on_state(self) -> None:
        if self._clients and self.source is not None:
            self._broadcast(Frame(None, sse_frame(self.source.head(), "state")))


def _take(events: Iterator[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    batch: list[dict[str, Any]] = []
    for event in events:
        batch.append(event)
        if len(batch) >= count:
            break
    return batch


async def replay_missed(source: LiveSource, after: int) -> AsyncIterator[tuple[int, bytes]]:
    """(seq, frame) for every log line after `after` on disk (written redacted), in small batches
    between which the loop runs other work."""
    events = read_log_lines(source.events_path, after_seq=after)
    while batch := _take(events, REPLAY_BATCH):
        for event in batch:
            seq = int(event.get("seq", 0))
            yield seq, sse_frame(slim_event(event), "log", seq)
        await asyncio.sleep(0)


async def event_stream(hub: EventHub, after: int | None, run_id: str | None) -> AsyncGenerator[bytes, None]:
    """One client's stream: hello, the missed lines (from disk), then live frames."""
    client = hub.connect()  # subscribe before replaying, so nothing falls in between
    source = hub.source
    try:
        hello = {"runId": source.run_id if source else None, "seq": source.seq if source else 0}
        yield RECONNECT_HINT + sse_frame(hello, "hello")
        last = after or 0
        if source is not None and run_id not in (None, "", source.run_id):
            yield sse_frame({"runId": source.run_id, "seq": source.seq}, "run")
            return
        if source is not None and after is not None:
            async for seq, replayed in replay_missed(source, after):
                last = max(last, seq)
                yield replayed
        async for frame in _live(client, hub.keepalive):
            if frame.seq is not None:
                if frame.seq <= last:
                    continue
                last = frame.seq
            yield frame.data
    finally:
        hub.disconnect(client)


async def _live(client: SseClient, keepalive: float) -> AsyncIterator[Frame]:
    """Queued frames until the client is closed or dropped; what was queued before that still goes out."""
    while True:
        try:
            frame = await asyncio.wait_for(client.queue.get(), keepalive)
        except TimeoutError:
            yield Frame(None, b": keepalive\n\n")
            continue
        if frame is not None:
            yield frame
        if frame is None or client.dropped or client.closed:
            while not client.queue.empty():
                queued = client.queue.get_nowait()
                if queued is not None:
                    yield queued
            return
