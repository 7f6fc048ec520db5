"""Commands for a run from outside its process: one JSON object a line in `<run dir>/inbox.jsonl`.

The parallel runner and fleet workers append to it (from the dashboard, or from Redis); the run
follows it and turns each line into a command on its queue. Unknown or malformed lines are
reported and skipped, never fatal.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from kilo_loop.fleet.tail import follow
from kilo_loop.run.controls import ControlAction

INBOX_FILE = "inbox.jsonl"
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


async def follow_inbox(run_dir: Path, deliver: Callable[[InboxCommand], None], warn: Callable[[str], None],
                       stop: Callable[[], bool]) -> None:
    """Deliver every command appended to the run's inbox from now on (lines written before this
    process started belong to an earlier process of the same run and are not replayed)."""
    path = run_dir / INBOX_FILE
    offset = path.stat().st_size if path.exists() else 0
    async for record in follow(path, stop, offset, poll=0.1):
        try:
            deliver(parse_command(record))
        except (ValueError, TypeError) as exc:
            warn(f"ignored a command in {path.name}: {exc}")
