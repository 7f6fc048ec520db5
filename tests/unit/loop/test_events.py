"""Typed events: every line of a real run's events.jsonl reads back into its class and writes
out byte for byte; unknown types and unknown data keys survive a round trip."""

from __future__ import annotations

from pathlib import Path

import orjson

from kilo_loop.run.bus import EventBus
from kilo_loop.run.events import (
    EVENT_TYPES,
    GuardBlocked,
    StageDone,
    TextOut,
    UnknownEvent,
    VerifyFinished,
    from_wire,
)
from tests.support.paths import FIXTURES

GOLDEN = FIXTURES / "golden" / "events.jsonl"


def test_golden_events_round_trip_byte_for_byte() -> None:
    lines = [line for line in GOLDEN.read_bytes().splitlines() if line]
    assert lines
    for line in lines:
        event = from_wire(orjson.loads(line))
        assert not isinstance(event, UnknownEvent), line
        assert orjson.dumps(event.to_wire()) == line


def test_data_fields_in_order_and_none_left_out() -> None:
    event = VerifyFinished(message="verify passed", passed=True)
    assert event.to_wire() == {"seq": 0, "ts": "", "type": "verify", "level": "info",
                               "message": "verify passed", "data": {"passed": True}}
    failed = VerifyFinished(message="x", level="error", passed=False, exit_code=1, iteration=3)
    assert list(failed.to_wire()) == ["seq", "ts", "type", "level", "iteration", "message", "data"]
    assert failed.data == {"passed": False, "exit_code": 1}
    assert "data" not in TextOut(message="hi").to_wire()


def test_unknown_type_and_keys_survive() -> None:
    wire = {"seq": 4, "ts": "t", "type": "from-the-future", "level": "info", "message": "m", "data": {"x": 1}}
    event = from_wire(wire)
    assert isinstance(event, UnknownEvent) and event.type == "from-the-future"
    assert event.to_wire() == wire
    extra = {"seq": 5, "ts": "t", "type": "stage-done", "level": "info", "message": "m",
             "data": {"stage_id": "s1", "newer": True}}
    done = from_wire(extra)
    assert isinstance(done, StageDone) and done.stage_id == "s1" and done.to_wire() == extra


def test_every_type_is_registered_once() -> None:
    assert all(name == cls.TYPE for name, cls in EVENT_TYPES.items())
    assert len(set(EVENT_TYPES.values())) == len(EVENT_TYPES)


def test_bus_redacts_once_then_numbers_and_appends(tmp_path: Path) -> None:
    seen: list[object] = []
    calls: list[object] = []

    def redact(value: object) -> object:
        calls.append(value)
        return value.replace("sk-secret", "[REDACTED]") if isinstance(value, str) else (
            {k: redact(v) for k, v in value.items()} if isinstance(value, dict) else value)

    bus = EventBus(tmp_path / "events.jsonl", redact)
    bus.subscribe(seen.append)
    stamped = bus.emit(GuardBlocked(message="blocked sk-secret", rule="r", reason="sk-secret"))
    assert isinstance(stamped, GuardBlocked) and stamped.seq == 1 and stamped.ts
    assert stamped.reason == "[REDACTED]" and "sk-secret" not in stamped.message
    assert seen == [stamped]
    line = (tmp_path / "events.jsonl").read_bytes()
    assert b"sk-secret" not in line and orjson.loads(line) == stamped.to_wire()
