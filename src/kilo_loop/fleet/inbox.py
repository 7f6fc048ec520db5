"""Commands for a run from outside its process: one JSON object a line in `<run dir>/inbox.jsonl`.

The parallel runner and fleet workers append to it (from the dashboard, or from Redis); the run
follows it and turns each line into a command on its queue. Unknown or malformed lines are
reported and skipped, never fatal.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from kilo_loop.fleet.tail import LineFollower
from kilo_loop.run.controls import ControlAction
from kilo_loop.run.files import write_text_atomic

INBOX_FILE = "inbox.jsonl"
TAKEN_FILE = "inbox.taken"  # how many bytes of inbox.jsonl the run has taken, across its processes
POLL_SECONDS = 0.1
# The names inbox.jsonl has always carried; each is a `ControlAction` name or one of its aliases.
CommandName = Literal["stop", "pause", "resume", "abort-after-session", "shared-context", "answer", "note",
                      "withdraw-note"]
COMMANDS: tuple[CommandName, ...] = ("stop", "pause", "resume", "abort-after-session", "shared-context", "answer",
                                     "note", "withdraw-note")
_TEXT_COMMANDS = ("note", "withdraw-note")  # their `text`: the note, or the id of the note to withdraw
_WIRE_NAME: dict[ControlAction, CommandName] = {ControlAction.named(name): name for name in COMMANDS}


@dataclass(frozen=True)
class InboxCommand:
    command: CommandName
    value: bool | None = None
    answers: tuple[str, ...] = field(default_factory=tuple)
    text: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"command": self.command}
        if self.value is not None:
            wire["value"] = self.value
        if self.text is not None:
            wire["text"] = self.text
        if self.answers:
            wire["answers"] = list(self.answers)
        return wire


def parse_command(record: Any) -> InboxCommand:
    """One inbox line as a command; ValueError or TypeError says what is wrong with it."""
    if not isinstance(record, dict):
        raise TypeError("an inbox line must be a JSON object")
    try:
        name = _WIRE_NAME[ControlAction.named(record.get("command"))]
    except (ValueError, KeyError):
        raise ValueError(f"unknown command {record.get('command')!r} (one of {', '.join(COMMANDS)})") from None
    value = record.get("value")
    if name == "shared-context" and not isinstance(value, bool):
        raise ValueError("shared-context needs a boolean value")
    text = record.get("text")
    if name in _TEXT_COMMANDS and not isinstance(text, str):
        raise ValueError(f"{name} needs its text (the note, or the note's id) as a string in 'text'")
    answers = record.get("answers", [])
    if name == "answer" and (not isinstance(answers, list) or not all(isinstance(a, str) for a in answers)):
        raise ValueError("answer needs a list of strings in 'answers'")
    return InboxCommand(name, value if isinstance(value, bool) else None, tuple(answers) if name == "answer" else (),
                        text if name in _TEXT_COMMANDS and isinstance(text, str) else None)


def append_command(run_dir: Path, command: InboxCommand) -> None:
    """One whole line per write (O_APPEND), so concurrent senders never interleave."""
    run_dir.mkdir(parents=True, exist_ok=True)
    line = orjson.dumps(command.to_wire()) + b"\n"
    fd = os.open(run_dir / INBOX_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def start_offset(run_dir: Path, resumed: bool) -> int:
    """Where this process of the run starts reading its inbox: after what the run has taken (its
    record), else a fresh run from the start (a sender may write before the run is up: a fleet
    worker hands on what Redis holds while the plan's process starts), else — a run resumed from
    before the record existed — at the end, so an earlier process's commands are never replayed."""
    path = run_dir / INBOX_FILE
    size = path.stat().st_size if path.exists() else 0
    try:
        # never past the end: a run directory copied while it was followed (a fleet worker's archive)
        # may hold a record newer than its inbox, and what is appended next must not be skipped
        return min(int((run_dir / TAKEN_FILE).read_text(encoding="ascii")), size)
    except (OSError, ValueError):
        return size if resumed else 0


async def follow_inbox(run_dir: Path, offset: int, deliver: Callable[[InboxCommand], None],
                       warn: Callable[[str], None], stop: Callable[[], bool]) -> None:
    """Deliver every command appended to the run's inbox after `offset`, recording what is taken.

    The caller takes `offset` (start_offset) when it attaches, not this task when it first runs: the
    run may publish a question before it first yields, and an answer appended in between must count."""
    path = run_dir / INBOX_FILE
    follower = LineFollower(path, offset, on_garbage=lambda line: warn(
        f"ignored a line in {path.name} that is not a JSON object: {line[:80].decode(errors='replace')!r}"))
    while True:
        done = stop()
        records = follower.read_new()
        for record in records:
            try:
                deliver(parse_command(record))
            except (ValueError, TypeError) as exc:
                warn(f"ignored a command in {path.name}: {exc}")
        if records:
            _record_taken(run_dir, follower.consumed, warn)
        if done:
            return
        await asyncio.sleep(POLL_SECONDS)


def _record_taken(run_dir: Path, consumed: int, warn: Callable[[str], None]) -> None:
    """What this run has taken of its inbox, so that its next process (--resume, another fleet worker)
    neither replays it nor drops what was sent while no process was following."""
    try:
        write_text_atomic(run_dir / TAKEN_FILE, str(consumed))
    except OSError as exc:
        warn(f"could not record what the run took of {INBOX_FILE} ({exc}); a resume may repeat its commands")
