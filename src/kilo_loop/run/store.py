"""Saved runs: listing, resolving `last`, loading state and events from disk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from kilo_loop.run.events import from_wire, is_log_line
from kilo_loop.run.files import read_json
from kilo_loop.run.layout import RunLayout

# finding a run is a light module of its own (no pydantic) for `note` and `watch`; still named from here
from kilo_loop.run.locate import RunNotFound as RunNotFound
from kilo_loop.run.locate import list_run_dirs as list_run_dirs
from kilo_loop.run.locate import resolve_run as resolve_run
from kilo_loop.run.reducer import reduce
from kilo_loop.run.state import RunState


def unreadable(run: RunLayout, exc: OSError | ValueError) -> RunNotFound:
    """One line for a state.json that cannot be loaded: the file, then its first problem."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        detail = f"{where}: {first['msg']}" if where else str(first["msg"])
    elif isinstance(exc, OSError):
        detail = exc.strerror or str(exc)
    else:
        detail = str(exc).removeprefix(f"{run.state}: ")
    return RunNotFound(f"cannot read {run.state}: {detail}")


def load_state(run: RunLayout) -> RunState:
    try:
        return RunState.model_validate(read_json(run.state))
    except (OSError, ValueError) as exc:
        raise unreadable(run, exc) from exc


def load_for_resume(run: RunLayout) -> RunState:
    """The state at the moment the run's process ended: the snapshot, then every event written
    after it (a kill -9 can land between an event and the next snapshot)."""
    try:
        raw = read_json(run.state)
        state = RunState.model_validate(raw)
    except (OSError, ValueError) as exc:
        raise unreadable(run, exc) from exc
    if not isinstance(raw, dict) or "seq" not in raw:
        return state  # written before snapshots carried their seq: nothing to replay against
    for wire in read_events(run.events, after_seq=state.seq):
        state = reduce(state, from_wire(wire))
    return state


def read_events(path: Path, after_seq: int = 0, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """Events from events.jsonl; a torn or garbled line (e.g. after kill -9) is skipped."""
    if not path.is_file():
        return
    count = 0
    with path.open("rb") as handle:
        for line in handle:
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(event, dict) or int(event.get("seq", 0)) <= after_seq:
                continue
            yield event
            count += 1
            if limit is not None and count >= limit:
                return


def read_log_lines(path: Path, after_seq: int = 0) -> Iterator[dict[str, Any]]:
    """The events a person reads (state-only records such as `usage` left out)."""
    return (event for event in read_events(path, after_seq) if is_log_line(event))


def last_seq(path: Path) -> int:
    """The highest sequence number written so far (0 for none)."""
    highest = 0
    for event in read_events(path):
        highest = max(highest, int(event.get("seq", 0)))
    return highest
