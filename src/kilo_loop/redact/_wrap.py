"""A long secret line-wrapped at a fixed width (``base64`` wraps at 76, ``openssl`` at 64, a terminal
or a log viewer at its width, a formatter at 88, 100 or 120): when a line 60 to 200 characters wide
ends inside a redacted value, the run of token characters that opens the next line is the value's
tail and is redacted too; so is the line after it while the run before filled the whole width.
The tail may be followed by text (``",``, the rest of a command), unless the run reads as something
else: a new ``key=``/``key:``, a number, a date, a word or a name (``api-1  | …``, ``md5sum``).  The same holds for the lines of a JSON string's text,
parted by escaped breaks (``\\n``) inside one line.

A chain that reaches the end of a block stays open: the next block is scanned after a header of
the same width that the engine recognises and leaves unchanged.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from kilo_loop.redact import _patterns as sp
from kilo_loop.redact._handler import ESCAPED_BREAK, MARK, Edit

MIN_WIDTH, MAX_WIDTH = 60, 200
HEADER_HEAD = MARK * 6  # what every header starts with (a cheap first test)
_HEADER_TEXT = MARK * (MAX_WIDTH // len(MARK) + 1)
_TAIL = re.compile(rb"[A-Za-z0-9+/=_.~-]+")
# a tail followed by more text on its line: ``=`` only as base64 padding, never a key's separator
_TAIL_BEFORE_TEXT = re.compile(rb"[A-Za-z0-9+/_.~-]+={0,2}")
_KEY_AFTER = re.compile(rb"[ \t]*[:=]")
_JSON_ESCAPE = re.compile(rb"\\(?:u[0-9A-Fa-f]{4}|.)")
_QUOTE_AFTER = re.compile(rb"\\*\"")
_BREAKS = b"\n\r\\"


def _header(width: int) -> bytes:
    return _HEADER_TEXT[:width] + b"\n"


def wrap_header(width: int, other: bytes | None) -> bytes:
    """The header re-opening a chain of ``width``; with another block left open (an indented value
    the tail line would end anyway), that block's header follows, its length written after a "+"."""
    if not other:
        return _header(width)
    return _header(width)[:-1] + b"+" + str(len(other)).encode() + b"\n" + other


def _after_header(data: bytes, header: bytes) -> int:
    """Where the first line after a chain's header (and the header it carries) starts; 0: not it."""
    end = len(header) - 1
    if not data.startswith(header[:-1]) or end >= len(data):
        return 0
    if data[end] == 0x0A:
        return end + 1
    newline = data.find(b"\n", end)
    carried = data[end + 1:newline]
    if data[end] != 0x2B or newline < 0 or not carried.isdigit():
        return 0
    return newline + 1 + int(carried)


def wrapped_tails(data: bytes, edits: Sequence[Edit]) -> tuple[list[Edit], int]:
    """``edits`` with the tails of wrapped values added, and the width of a chain left open at the
    end of ``data`` (0: none)."""
    tails: list[Edit] = []
    open_width = 0
    if data.startswith(HEADER_HEAD):
        width = _header_width(data)
        if width and (line := _after_header(data, _header(width))):
            open_width = _chain(data, line, width, tails) or open_width
    size = len(data)
    for start, end, text in edits:
        if text is not MARK or end >= size or data[end] not in _BREAKS:
            continue
        if data[end] == 0x5C:
            _escaped_chain(data, start, end, tails)
            continue
        line_start = data.rfind(b"\n", 0, start) + 1
        if end - line_start < MIN_WIDTH:
            continue  # most lines: too short to be wrapped
        width = _width(data, line_start, end)
        if width:
            line = end + (2 if data.startswith(b"\r\n", end) else 1)
            open_width = _chain(data, line, width, tails) or open_width
    if not tails:
        return list(edits), open_width
    return _merged(edits, tails), open_width


def _header_width(data: bytes) -> int:
    """The width a header at the start of ``data`` re-opens (0: none): its first line's length, as
    long as that line is a piece of the header text."""
    stop = len(data)
    for mark in (b"\n", b"+"):
        found = data.find(mark, 0, MAX_WIDTH + 1)
        if 0 <= found < stop:
            stop = found
    width = stop if stop < len(data) else 0
    return width if MIN_WIDTH <= width <= MAX_WIDTH and _HEADER_TEXT.startswith(data[:width]) else 0


def _width(data: bytes, line_start: int, end: int) -> int:
    """The line's width in characters when it is a width lines are wrapped at, else 0."""
    width = end - line_start
    if width < MIN_WIDTH or width > 4 * MAX_WIDTH:
        return 0
    if data[line_start:end].isascii():
        return width if width <= MAX_WIDTH else 0
    return _chars(data[line_start:end])


def _chars(line: bytes) -> int:
    width = len(line.decode("utf-8", "replace"))
    return width if MIN_WIDTH <= width <= MAX_WIDTH else 0


def _chain(data: bytes, line: int, width: int, tails: list[Edit]) -> int:
    """Tails from ``line`` on, each a whole line or the run opening the last one (text may follow
    it); the width when the chain reaches the end of data."""
    size = len(data)
    while line < size:
        end = data.find(b"\n", line)
        end = size if end < 0 else end
        content = end - 1 if end > line and data[end - 1] == 0x0D else end
        if not _is_tail(data, line, content):
            stop = _tail_before_text(data, line, content)
            if stop:
                tails.append((line, stop, MARK))
            return 0
        tails.append((line, content, MARK))
        if content - line != width or end >= size:
            return 0
        line = end + 1
    return width


def _tail_before_text(data: bytes, line: int, content: int) -> int:
    """Where the value's tail ends when text follows it on its line (0: the line opens with no
    tail): a run of token characters that reads as the end of a key, not as a new ``key=``, a
    number, a date, a word or a name (``api-1``, ``md5sum``, ``EOF``)."""
    run = _TAIL_BEFORE_TEXT.match(data, line, content)
    if run is None or run.end() >= content or _KEY_AFTER.match(data, run.end(), content):
        return 0
    if data[run.end()] in b"\\" or not _is_tail(data, line, run.end()):
        return 0
    parts = [part for part in _PART_SPLIT.split(data[line:run.end()].rstrip(b"=")) if part]
    return 0 if all(_plain_part(part) for part in parts) else run.end()


_PART_SPLIT = re.compile(rb"[-_.~]")
_HEX = re.compile(rb"[0-9a-f]{6,}")


def _plain_part(part: bytes) -> bool:
    """A piece of a name or a number: digits, a lower-case word (with digits, unless hex), an
    upper-case word without digits."""
    if part.isdigit() or (part.isupper() and not any(c in b"0123456789" for c in part)):
        return True
    return part.islower() and _HEX.fullmatch(part) is None


def _escaped_chain(data: bytes, start: int, end: int, tails: list[Edit]) -> None:
    """The chain over a JSON string's lines: the value ends at an escaped break."""
    brk = ESCAPED_BREAK.match(data, end)
    if brk is None:
        return
    width = _escaped_width(data, _segment_start(data, start), end)
    while width:
        line = brk.end()
        run = _TAIL.match(data, line)
        if run is None:
            return
        stop = run.end()
        brk = ESCAPED_BREAK.match(data, stop)
        if (brk is None and not _QUOTE_AFTER.match(data, stop)) or not _is_tail(data, line, stop):
            return
        tails.append((line, stop, MARK))
        if brk is None or stop - line != width:
            return


def _segment_start(data: bytes, start: int) -> int:
    """Where the string line holding ``start`` begins: after an escaped break or the opening quote."""
    line_start = data.rfind(b"\n", 0, start) + 1
    escaped = max(data.rfind(b"\\n", line_start, start), data.rfind(b"\\r", line_start, start))
    if escaped >= 0:
        return escaped + 2
    quote = data.rfind(b'"', line_start, start)
    return line_start if quote < 0 else quote + 1


def _escaped_width(data: bytes, segment: int, end: int) -> int:
    if end - segment < MIN_WIDTH or end - segment > 6 * MAX_WIDTH:
        return 0
    return _chars(_JSON_ESCAPE.sub(b"x", data[segment:end]))


def _is_tail(data: bytes, start: int, end: int) -> bool:
    """One unbroken run of token characters that a word, a number or a version cannot be: a
    digit, both cases, or base64's ``+/=``."""
    if end <= start or _TAIL_BEFORE_TEXT.fullmatch(data, start, end) is None:
        return False
    if _TOKENISH.search(data, start, end) is None:
        return False  # a word: no digit, one case, no base64 symbol (most lines: decided here)
    run = data[start:end].decode("ascii")
    return not (sp.is_placeholder(run) or sp.is_number(run))


# a digit, base64's "+/=", or both cases (a lower-case letter before an upper-case one or after)
_TOKENISH = re.compile(rb"[0-9+/=]|[a-z][^A-Z]*[A-Z]|[A-Z][^a-z]*[a-z]")


def _merged(edits: Sequence[Edit], tails: list[Edit]) -> list[Edit]:
    """The edits with the tails: an edit inside a tail goes with it; a tail that an edit reaching
    outside it overlaps is dropped (that edit already decided the line)."""
    starts = [edit[0] for edit in edits]
    inside: set[int] = set()
    kept: list[Edit] = []
    for tail in sorted(set(tails)):
        first = bisect.bisect_left(starts, tail[0])
        if (first and edits[first - 1][1] > tail[0]) or (kept and kept[-1][1] > tail[0]):
            continue
        last = first
        while last < len(edits) and edits[last][0] < tail[1]:
            last += 1
        if last > first and edits[last - 1][1] > tail[1]:
            continue
        inside.update(range(first, last))
        kept.append(tail)
    rest = [edit for index, edit in enumerate(edits) if index not in inside]
    return sorted(rest + kept)
