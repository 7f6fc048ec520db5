"""Feeding a recorded or hand-written stream to a parser in uneven chunks, as a pipe delivers it."""

from __future__ import annotations

from pathlib import Path

from kilo_loop.agent.protocol import AgentEvent
from kilo_loop.agent.subprocess_run import StreamParser

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "streams"


def feed(parser: StreamParser, data: bytes, chunk: int) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    for start in range(0, len(data), chunk):
        events += parser.feed(data[start:start + chunk])
    return events + list(parser.finish())
