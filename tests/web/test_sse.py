"""Server-sent events: frames, replay from events.jsonl, slow clients, run switches."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from kilo_loop.run.bus import EventBus
from kilo_loop.run.events import RunEvent, TextOut, UsageCounted
from kilo_loop.run.store import read_log_lines
from kilo_loop.web.sse import EventHub, event_stream, parse_last_event_id, sse_frame
from tests.web.conftest import Harness


def _redact(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value).replace(b"SECRET", b"[REDACTED]"))


class Source:
    """A run as the hub sees it, backed by a real EventBus and events.jsonl."""

    def __init__(self, path: Path, run_id: str = "run-1") -> None:
        self.bus = EventBus(path, _redact)
        self._run_id = run_id
        self.events_path = path
        self.state_listeners: list[Callable[[], None]] = []

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def seq(self) -> int:
        return self.bus.seq

    def subscribe(
        self, on_event: Callable[[RunEvent], None], on_state: Callable[[], None]
    ) -> Callable[[], None]:
        self.state_listeners.append(on_state)
        return self.bus.subscribe(on_event)

    def head(self) -> dict[str, Any]:
        return {"runId": self.run_id, "status": "running"}

    def emit(self, count: int, text: str = "line") -> None:
        for _ in range(count):
            self.bus.emit(TextOut(message=f"{text} {self.bus.seq + 1}"))


def parse(frame: bytes) -> tuple[str | None, int | None, Any]:
    event, event_id, data = None, None, None
    for line in frame.decode().splitlines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("id: "):
            event_id = int(line[4:])
        elif line.startswith("data: "):
            data = orjson.loads(line[6:])
    return event, event_id, data


async def take(stream: AsyncIterator[bytes], count: int) -> list[tuple[str | None, int | None, Any]]:
    return [parse(await anext(stream)) for _ in range(count)]


async def drain(stream: AsyncIterator[bytes]) -> list[tuple[str | None, int | None, Any]]:
    return [parse(frame) async for frame in stream]


@pytest.fixture
def source(tmp_path: Path) -> Source:
    return Source(tmp_path / "events.jsonl")


def test_frame_format_and_last_event_id() -> None:
    assert sse_frame({"a": "b\nc"}, "log", 7) == b'id: 7\nevent: log\ndata: {"a":"b\\nc"}\n\n'
    assert sse_frame([1]) == b"data: [1]\n\n"
    assert parse_last_event_id("12", "3") == 12
    assert parse_last_event_id(None, "3") == 3
    assert parse_last_event_id("garbage", "4") == 4
    for bad in ("-1", "1e3", "", " ", "99999999999999999999999"):
        assert parse_last_event_id(bad, None) is None


async def test_live_frames_follow_the_hello(source: Source) -> None:
    hub = EventHub()
    hub.attach(source)
    stream = event_stream(hub, None, None)
    hello = await anext(stream)
    assert hello.startswith(b"retry: 1000") and parse(hello.split(b"\n\n", 1)[1])[0] == "hello"
    source.emit(3)
    frames = await take(stream, 3)
    assert [(kind, event_id) for kind, event_id, _ in frames] == [("log", 1), ("log", 2), ("log", 3)]
    source.state_listeners[-1]()
    assert (await take(stream, 1))[0] == ("state", None, {"runId": "run-1", "status": "running"})
    await stream.aclose()
    assert hub.client_count == 0


async def test_missed_lines_are_replayed_from_disk_once(source: Source) -> None:
    hub = EventHub()
    hub.attach(source)
    source.emit(5, "SECRET")
    source.bus.emit(UsageCounted(tokens=5))  # a state-only record: on disk, never a log frame
    stream = event_stream(hub, 2, "run-1")
    await anext(stream)  # hello: the client is subscribed from here on
    source.emit(1)  # lands on disk and in the queue: must be sent once
    frames = await take(stream, 4)
    assert [event_id for _, event_id, _ in frames] == [3, 4, 5, 7]
    assert "[REDACTED]" in frames[0][2]["message"]  # the bus redacted it once, before it was written
    source.emit(1)
    assert (await take(stream, 1))[0][1] == 8
    await stream.aclose()


async def test_a_slow_client_is_dropped_and_catches_up_on_reconnect(source: Source) -> None:
    hub = EventHub(queue_frames=3)
    hub.attach(source)
    stream = event_stream(hub, None, None)
    await anext(stream)
    source.emit(10)  # the client reads nothing meanwhile: its queue overflows, the bus never waits
    first = await drain(stream)
    assert [i for _, i, _ in first] == [1, 2, 3]  # what fit in its queue, then the stream ends
    last_seen = first[-1][1]
    assert last_seen is not None
    again = event_stream(hub, last_seen, "run-1")
    await anext(again)
    source.emit(1)
    rest = await take(again, 11 - last_seen)
    assert [i for _, i, _ in first] + [i for _, i, _ in rest] == list(range(1, 12))
    await again.aclose()


async def test_a_new_run_tells_clients_to_reload(source: Source, tmp_path: Path) -> None:
    hub = EventHub()
    hub.attach(source)
    stream = event_stream(hub, None, None)
    await anext(stream)
    hub.attach(Source(tmp_path / "other.jsonl", "run-2"))
    frames = await drain(stream)
    assert frames == [("run", None, {"runId": "run-2", "seq": 0})]
    source.emit(1)  # the old run's events no longer reach anyone
    assert hub.client_count == 0


async def test_a_client_showing_another_run_is_told_to_reload(source: Source) -> None:
    hub = EventHub()
    hub.attach(source)
    frames = await drain(event_stream(hub, 5, "old-run"))
    assert [kind for kind, _, _ in frames] == ["hello", "run"]


async def test_keepalive_comments_when_idle(source: Source) -> None:
    hub = EventHub(keepalive=0.01)
    stream = event_stream(hub, None, None)
    await anext(stream)
    assert await anext(stream) == b": keepalive\n\n"
    hub.close_all()
    assert await drain(stream) == []


async def test_events_over_http_resume_with_last_event_id(harness: Harness) -> None:
    run_id = await harness.run_to_end(iterations=2)
    seen: list[int] = []
    async with harness.client.stream("GET", f"/api/events?after=0&run={run_id}") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                seen.append(int(line[4:]))
            if len(seen) == 8:
                break
    events = harness.project / ".kilocode-loop" / "runs" / run_id / "events.jsonl"
    log_seqs = [int(event["seq"]) for event in read_log_lines(events)]  # state-only records are no frames
    assert seen == log_seqs[:8]
    resumed: list[int] = []
    headers = {"Last-Event-ID": "5"}
    async with harness.client.stream("GET", f"/api/events?after=0&run={run_id}", headers=headers) as response:
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                resumed.append(int(line[4:]))
            if len(resumed) == 3:
                break
    assert resumed == [seq for seq in log_seqs if seq > 5][:3]
