"""The contract between the engine and its rule handlers, and what the handlers share.

A handler reads the match a rule made in the UTF-8 bytes (``Span``: the match's span of a group)
and answers with an ``Outcome``: the edits to make and where scanning goes on.  The byte-level
helpers here (lines, indentation) bound every search to a window, so a huge single-line input stays
linear.  ``rescan`` redacts a piece a handler takes apart itself (a comment, a decoded blob, a CSV
row) with the default engine, which is built from the handlers: the engine hands itself over when
its module loads (``use_for_rescan``) instead of being imported here, so no import runs in a circle.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from kilo_loop.redact._patterns import REDACTED, Rule

MARK = REDACTED.encode()

Span = Callable[[int], tuple[int, int]]  # a match's span of a group: ``re.Match.span``
Edit = tuple[int, int, bytes]


class Outcome(NamedTuple):
    """A handler's verdict.  ``resume``: where scanning goes on (never before the last edit's end);
    it must not depend on whether a value was redacted or not, or a second pass over the output
    would scan text the first pass skipped."""

    edits: tuple[Edit, ...]
    resume: int
    open_block: bytes | None = None  # synthetic header that re-opens a multi-line block next line


# floor: where the previous edit ended; what lies before it is about to change, so look no further back.
Handler = Callable[[bytes, Span, int, Rule, int], Outcome]
SKIP: tuple[Edit, ...] = ()

HSPACE = re.compile(rb"[ \t]*")
# A redaction never ends inside a word: "[REDACTED]" must not create a \b the original lacked.
ALNUM_RUN = re.compile(rb"[A-Za-z0-9]*")
# A line break written as an escape in a string (``\n``, ``\r\n``; ``\\n`` in JSON in JSON or printf text).
ESCAPED_BREAK = re.compile(rb"(?:\\+[nr])+")


def as_str(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


# How far a value may run on one line.  Bounding every search keeps a huge single-line input
# (minified JSON) linear: no match scans to the end of the data for its newline.
LINE_WINDOW = 1 << 16


def end_of_line(data: bytes, pos: int) -> int:
    limit = min(len(data), pos + LINE_WINDOW)
    end = data.find(b"\n", pos, limit)
    return limit if end < 0 else end


def start_of_line(data: bytes, pos: int) -> int:
    """Start of the line holding ``pos``; -1 when that is farther back than the window."""
    floor = max(0, pos - LINE_WINDOW)
    start = data.rfind(b"\n", floor, pos)
    if start >= 0:
        return start + 1
    return 0 if floor == 0 else -1


def content_end(data: bytes, start: int, end: int) -> int:
    """End of a line's content: before a trailing ``\\r`` and trailing blanks."""
    while end > start and data[end - 1] in b" \t\r":
        end -= 1
    return end


def indent_of(data: bytes, start: int, end: int) -> int:
    return HSPACE.match(data, start, end).end() - start  # type: ignore[union-attr]


def mark_span(start: int, end: int) -> tuple[Edit, ...]:
    return ((start, end, MARK),)


Scan = Callable[[bytes], "bytes | None"]
_default_scan: list[Scan] = []


def use_for_rescan(scan: Scan) -> None:
    """Called once by the engine's module: the default engine's scan, for ``rescan``."""
    _default_scan[:] = [scan]


def rescan(data: bytes) -> bytes | None:
    """The default engine's redaction of ``data`` (None: unchanged)."""
    return _default_scan[0](data)
