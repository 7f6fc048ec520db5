"""The operator's notes to the agent, as pure rules: what a note may be, which notes a model request
should carry, how the agent is asked to confirm them, and whether a reply or progress.json did.

A note's life is events (`note-queued`, `note-delivered`, `note-acknowledged`, `note-withdrawn`); the
reducer folds them into `RunState.notes`. Everything here reads that list and decides; nothing writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kilo_loop.errors import KiloLoopError
from kilo_loop.run.state import Note

MAX_NOTE_BYTES = 8 * 1024
MAX_NOTES = 500  # per run: a note is an event, and the state keeps every one
QUEUED, DELIVERED, ACKNOWLEDGED, WITHDRAWN = "queued", "delivered", "acknowledged", "withdrawn"


class NoteRefused(KiloLoopError, ValueError):
    """A note (or a withdrawal) the run will not take, and why in words the sender can act on."""


def check_text(text: object) -> str:
    """The note's text, stripped; NoteRefused when it is not a non-empty string of at most 8 KB."""
    if not isinstance(text, str):
        raise NoteRefused("a note needs its text as a string")
    stripped = text.strip()
    if not stripped:
        raise NoteRefused("the note is empty: write what the agent should know")
    size = len(stripped.encode("utf-8"))
    if size > MAX_NOTE_BYTES:
        raise NoteRefused(f"the note is {size} bytes; at most {MAX_NOTE_BYTES} bytes (8 KB) fit: "
                          "shorten it or put the details in a file of the project and point to it")
    return stripped


def next_id(notes: Sequence[Note]) -> str:
    if len(notes) >= MAX_NOTES:
        raise NoteRefused(f"this run already has {MAX_NOTES} notes; start a new run to send more")
    return f"n{len(notes) + 1}"


def queued(notes: Iterable[Note]) -> list[Note]:
    return [note for note in notes if note.status == QUEUED]


def awaiting_ack(notes: Iterable[Note]) -> list[Note]:
    return [note for note in notes if note.status == DELIVERED]


def withdrawable(notes: Sequence[Note], note_id: str) -> Note:
    """The note to withdraw; NoteRefused when there is none of that id or it has left the queue."""
    note = next((n for n in notes if n.id == note_id), None)
    if note is None:
        known = ", ".join(n.id for n in notes[-10:]) or "none yet"
        raise NoteRefused(f"no note {note_id!r} in this run (notes: {known})")
    if note.status != QUEUED:
        raise NoteRefused(f"note {note_id} is {note.status}: only a queued note can be withdrawn")
    return note


def message(notes: Sequence[Note]) -> str:
    """What a model request carries: the notes, each with its id, and how to confirm them."""
    lines = [f"[{note.id}] {note.text}" for note in notes]
    ids = ", ".join(note.id for note in notes)
    return ("## Notes from the operator (new, binding; they take precedence over the plan)\n" + "\n\n".join(lines)
            + f"\n\nConfirm you read them: start your next reply with `noted {ids}`, and list "
            f"{_quoted(notes)} in `notesSeen` of progress.json.")


def _quoted(notes: Sequence[Note]) -> str:
    return ", ".join(f'"{note.id}"' for note in notes)


_NOTED = re.compile(r"\bnoted\b[:\s]*((?:\bn\d+\b(?:\s*(?:,|;|&|\band\b)?\s*))+)", re.IGNORECASE)
_ID = re.compile(r"\bn\d+\b", re.IGNORECASE)


def acknowledged_in_reply(text: str, waiting: Iterable[Note]) -> list[str]:
    """The ids of `waiting` notes the agent's reply confirms (`noted n1, n2`)."""
    wanted = {note.id for note in waiting}
    said = {found.lower() for match in _NOTED.finditer(text) for found in _ID.findall(match.group(1))}
    return [note_id for note_id in sorted(wanted) if note_id in said]


def acknowledged_in_progress(seen: object, waiting: Iterable[Note]) -> list[str]:
    """The ids of `waiting` notes listed in progress.json's `notesSeen`."""
    if not isinstance(seen, list):
        return []
    listed = {item.strip().lower() for item in seen if isinstance(item, str)}
    return [note.id for note in waiting if note.id in listed]
