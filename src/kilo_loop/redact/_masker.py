"""Masking the secrets the loop knows by value (its environment's tokens, the provider keys it
injects, the project's ``.env`` values, ``maskValues``), the way CI systems mask registered secrets.

Each value is looked for in every form output gives it: as it is, JSON-escaped (once and twice),
URL-encoded, base64-encoded at each of the three byte alignments a value can sit at inside a
longer encoded text (standard and URL-safe alphabets), and split across lines.  All those forms
are literals of one alternation run by RE2 (one DFA pass over the text, however many values:
no loop over values); Python's ``re`` runs it where RE2 is missing.  With Hyperscan installed, a
prefilter runs first: every 8-byte piece of every form (and, for forms shorter than 16, each form
broken once by a line break) in one SIMD literal scan, several times faster than the DFA; only text
it finds something in is scanned exactly.  Most text holds no known value, so masking costs that
one scan (``benchmarks/bench_redact.py --masks-only``).  A value wrapped across lines
(a terminal, a formatter, ``base64 -w``; also JSON's escaped ``\\n``) or split by colour codes is
found in a view of the text without the breaks, and each of its pieces is masked in place so the
lines stay lines.  The values live in this process's memory only.
"""

from __future__ import annotations

import base64
import bisect
import json
import re
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kilo_loop.redact._patterns import REDACTED

try:  # pragma: no cover - exercised by whichever environment runs the tests
    import re2
except ImportError:  # pragma: no cover
    re2 = None
hyperscan: Any
try:  # pragma: no cover - an accelerator where its wheel exists (x86-64)
    import hyperscan
except ImportError:  # pragma: no cover
    hyperscan = None

__all__ = ["MIN_LENGTH", "Hit", "KnownMasker", "encodings"]

MIN_LENGTH = 8
_MARK = REDACTED.encode()
# What the joined view leaves out: line breaks, JSON's escaped breaks, terminal colour codes.
_BREAK = re.compile(rb"\r?\n|\r|\\r\\n|\\n|\\r|\x1b\[[0-9;]*[A-Za-z]")
_MAY_BREAK = (b"\n", b"\r", b"\\", b"\x1b")
# In a short text (an event's field, a heading, a console line) a blank may stand where a line break
# was: a one-line summary of a wrapped command joins its lines with spaces.  A big block keeps to the
# breaks above (a view without its blanks would cost a piece per word of it).
_SHORT = 4096
_BREAK_OR_BLANK = re.compile(_BREAK.pattern + rb"|[ \t]")


@dataclass(frozen=True)
class Hit:
    """One masked occurrence: where it was in the scanned bytes and which source registered it."""

    start: int
    end: int
    source: str


def _base64_pieces(raw: bytes) -> list[bytes]:
    """The base64 text a value leaves inside any longer encoded text: for each of the three
    alignments, the characters that encode the value's bytes alone; plus the whole value encoded
    on its own (with its padding) and followed by ``echo``'s newline."""
    pieces: list[bytes] = [base64.b64encode(raw), base64.b64encode(raw + b"\n")]
    for skip in range(3):
        chunk = raw[skip:]
        chunk = chunk[: len(chunk) // 3 * 3]
        if chunk:
            pieces.append(base64.b64encode(chunk))
    urlsafe = [piece.translate(bytes.maketrans(b"+/", b"-_")).rstrip(b"=") for piece in pieces]
    return pieces + urlsafe


def _url_forms(value: str) -> list[str]:
    forms = [urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value, safe=""), urllib.parse.quote(value)]
    twice = urllib.parse.quote(forms[0], safe="")
    lowered = [re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), form) for form in forms]
    return [*forms, *lowered, twice]


def _json_forms(value: str) -> list[str]:
    once = json.dumps(value)[1:-1]
    return [once, json.dumps(value, ensure_ascii=False)[1:-1], once.replace("/", "\\/"), json.dumps(once)[1:-1]]


def encodings(value: str) -> list[bytes]:
    """Every literal form of ``value`` to look for (pieces shorter than ``MIN_LENGTH`` dropped)."""
    raw = value.encode("utf-8", "surrogatepass")
    forms = [raw, *(form.encode() for form in (*_json_forms(value), *_url_forms(value)))]
    forms += _base64_pieces(raw)
    return list(dict.fromkeys(form for form in forms if len(form) >= MIN_LENGTH))


def _compile(literals: Sequence[bytes]) -> Any:
    # longest first: where two forms start at one place (a base64 piece inside the padded whole),
    # leftmost-first alternation takes the longer
    source = b"|".join(re.escape(literal) for literal in sorted(literals, key=len, reverse=True))
    if re2 is not None:
        options = re2.Options()
        options.max_mem = 64 << 20
        return re2.compile(source, options)
    return re.compile(source)  # pragma: no cover - without RE2


_GRAM = MIN_LENGTH
_SHORT_FORM = 2 * _GRAM  # a form this short may break into pieces all shorter than a gram
_SPLIT_BREAKS = (b"\n", b"\r\n", b"\\n", b" ")


def prefilter_literals(forms: Iterable[bytes]) -> set[bytes]:
    """What the prefilter looks for: each form's 8-byte pieces (a piece of 8 or more of a wrapped
    form holds one), and each short form broken once by a line break at every place."""
    literals: set[bytes] = set()
    for form in forms:
        literals.update(form[i:i + _GRAM] for i in range(len(form) - _GRAM + 1))
        if len(form) < _SHORT_FORM:
            literals.update(form[:k] + brk + form[k:] for k in range(1, len(form)) for brk in _SPLIT_BREAKS)
    return literals


class _Prefilter:
    """Whether a text may hold a known value: a Hyperscan literal scan stopped at the first hit."""

    def __init__(self, literals: set[bytes]) -> None:
        ordered = sorted(literals)
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=[b"".join(b"\\x%02x" % byte for byte in literal) for literal in ordered],
                         ids=list(range(len(ordered))), elements=len(ordered), flags=[0] * len(ordered))

    def may_hold(self, data: bytes) -> bool:
        try:
            self._db.scan(data, match_event_handler=_stop)
        except hyperscan.ScanTerminated:
            return True
        return False


def _stop(*_: object) -> bool:
    return True


def _prefilter(forms: Iterable[bytes]) -> _Prefilter | None:
    if hyperscan is None:
        return None  # pragma: no cover - without Hyperscan every text is scanned exactly
    try:
        return _Prefilter(prefilter_literals(forms))
    except hyperscan.HyperscanError:  # pragma: no cover - a CPU it cannot run on
        return None


class KnownMasker:
    """Finds and masks registered values in every encoding; counts what it masked by source."""

    def __init__(self, values: Iterable[tuple[str, str]] = ()) -> None:
        self._source: dict[bytes, str] = {}
        self._pattern: Any = None
        self._prefilter: _Prefilter | None = None
        self.counts: Counter[str] = Counter()
        self.add(values)

    def __bool__(self) -> bool:
        return self._pattern is not None

    @property
    def size(self) -> int:
        """How many literal forms are looked for."""
        return len(self._source)

    def add(self, values: Iterable[tuple[str, str]]) -> bool:
        """Register (value, source) pairs; True when anything new is looked for."""
        added = False
        for value, source in values:
            if len(value) < MIN_LENGTH:
                continue
            for form in encodings(value):
                if form not in self._source:
                    self._source[form] = source
                    added = True
        if added:
            self._pattern = _compile(list(self._source))
            self._prefilter = _prefilter(self._source)
        return added

    def hits(self, data: bytes) -> list[Hit]:
        """The registered forms in ``data``, also split by line breaks or colour codes, leftmost
        first and not overlapping."""
        pattern = self._pattern
        if pattern is None or (self._prefilter is not None and not self._prefilter.may_hold(data)):
            return []
        found = self._scan(pattern, data)
        if len(data) <= _SHORT:
            found = _merge(found, self._joined_hits(pattern, data, _BREAK_OR_BLANK))
        elif any(mark in data for mark in _MAY_BREAK):
            found = _merge(found, self._joined_hits(pattern, data, _BREAK))
        return found

    def _scan(self, pattern: Any, data: bytes) -> list[Hit]:
        hits: list[Hit] = []
        for match in pattern.finditer(data):
            start, end = match.span()
            hits.append(Hit(start, end, self._source.get(data[start:end], "registered")))
        return hits

    def _joined_hits(self, pattern: Any, data: bytes, breaks: re.Pattern[bytes]) -> list[Hit]:
        """Hits in the text without its breaks, mapped back onto ``data``; only those that
        straddle a break (the rest were found in ``data`` itself)."""
        removed: list[tuple[int, int]] = []  # (position in the joined view, bytes removed so far)
        pieces, last, total = [], 0, 0
        for brk in breaks.finditer(data):
            pieces.append(data[last:brk.start()])
            total += brk.end() - brk.start()
            removed.append((brk.start() - (total - (brk.end() - brk.start())), total))
            last = brk.end()
        if not removed:
            return []
        pieces.append(data[last:])
        positions = [position for position, _ in removed]

        def original(position: int, at_end: bool) -> int:
            index = (bisect.bisect_left if at_end else bisect.bisect_right)(positions, position)
            return position + (removed[index - 1][1] if index else 0)

        hits = []
        for hit in self._scan(pattern, b"".join(pieces)):
            start, end = original(hit.start, False), original(hit.end, True)
            if end - start > hit.end - hit.start:  # a break inside: not found in ``data`` itself
                hits.append(Hit(start, end, hit.source))
        return hits

    def mask(self, data: bytes, count: bool = True) -> tuple[bytes | None, list[Hit]]:
        """``data`` with every hit masked (None when there was none), and the hits.  The breaks
        inside a hit stay: each piece of a wrapped value becomes ``[REDACTED]`` on its own line."""
        hits = self.hits(data)
        if not hits:
            return None, hits
        out, last = [], 0
        for hit in hits:
            out.append(data[last:hit.start])
            out.append(_masked(data[hit.start:hit.end], _BREAK_OR_BLANK if len(data) <= _SHORT else _BREAK))
            last = hit.end
        out.append(data[last:])
        if count:
            self.counts.update(hit.source for hit in hits)
        return b"".join(out), hits


def _masked(span: bytes, breaks: re.Pattern[bytes]) -> bytes:
    """A hit's span with its text pieces masked and its breaks (and colour codes) kept."""
    out, last = [], 0
    for brk in breaks.finditer(span):
        if brk.start() > last:
            out.append(_MARK)
        out.append(brk.group())
        last = brk.end()
    if last < len(span):
        out.append(_MARK)
    return b"".join(out)


def _merge(first: list[Hit], second: list[Hit]) -> list[Hit]:
    """Both lists' hits in order; where two overlap, the one starting first (then the longer)."""
    merged: list[Hit] = []
    for hit in sorted(first + second, key=lambda h: (h.start, -h.end)):
        if merged and hit.start < merged[-1].end:
            if hit.end > merged[-1].end:
                merged[-1] = Hit(merged[-1].start, hit.end, merged[-1].source)
            continue
        merged.append(hit)
    return merged
