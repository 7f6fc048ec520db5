"""The scanning engine: rules found, confirmed and judged over UTF-8 bytes.

Four RE2 DFAs (most rules; the round-3 code and command rules; the generic random-looking value;
the long base64 run) run loosened alternations over the UTF-8 bytes to find candidate positions;
Python's ``re`` confirms the exact rule at the nearest candidate and the judgements of ``_patterns``
decide, reading only the spans of that rule's groups.  Without ``re2`` the exact alternation runs
on Python's ``re`` alone.
A scan of a block of lines given what the block before left open (a header) depends on nothing
else, so blocks can be redacted in other processes (``_pool``) and joined.  The rule handlers live
in ``_values`` (single values, assignments), ``_blocks`` (PEM blocks, command arguments, base64
runs, CSV tables) and ``_pairs`` (a name and its value as two entries); ``_handler`` is what they
answer with.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable, Sequence

from kilo_loop.redact import _blocks, _pairs, _values
from kilo_loop.redact import _patterns as sp
from kilo_loop.redact._anchored import ANCHORED_LANE, anchor_finder
from kilo_loop.redact._blocks import PEM_MARKER_MAX, PEM_START, has_upper
from kilo_loop.redact._handler import ALNUM_RUN, MARK, Edit, Handler, Outcome, content_end, use_for_rescan
from kilo_loop.redact._patterns import REDACTED, Kind, Rule
from kilo_loop.redact._wrap import HEADER_HEAD, wrap_header, wrapped_tails

try:  # pragma: no cover - exercised by whichever environment runs the tests
    import re2
except ImportError:  # pragma: no cover
    re2 = None

_HANDLERS: dict[Kind, Handler] = {**_values.HANDLERS, **_blocks.HANDLERS, **_pairs.HANDLERS}


# --- the scanning engine ----------------------------------------------------------------------

Finder = Callable[[bytes, int], int]  # start of the next candidate at or after a position (-1: none)


def _re2_candidates(source: bytes) -> Finder:
    """Start of the leftmost match of a loose scan pattern at or after ``pos`` (-1: none)."""
    options = re2.Options()
    options.max_mem = 64 << 20
    options.never_capture = True
    compiled = re2.compile(source, options)
    # google-re2's pybind object answers with bare spans, skipping the Match wrapper (2-3x fewer
    # microseconds per candidate); the public API is the fallback should its internals move.
    raw = getattr(compiled, "_regexp", None)
    unanchored = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    if raw is not None and hasattr(raw, "Match") and unanchored is not None:

        def first_raw(data: bytes, pos: int) -> int:
            start: int = raw.Match(unanchored, data, pos, len(data))[0][0]
            return start

        return first_raw

    def first(data: bytes, pos: int) -> int:
        match = compiled.search(data, pos)
        return -1 if match is None else int(match.start())

    return first


_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/]*")


def _mixed_case_runs(find: Finder) -> Finder:
    """Candidates of the base64-run lane, minus runs without an upper-case letter (hex SHAs),
    which the rule would turn away anyway: skipped here, they cost no exact match or handler."""
    run = _BASE64_RUN.match

    def first(data: bytes, pos: int) -> int:
        while (start := find(data, pos)) >= 0:
            end = run(data, start).end()  # type: ignore[union-attr]
            if has_upper(data[start:end]):
                return start
            pos = end
        return -1

    return first


def _finders(lanes: Sequence[tuple[str, bytes]], anchors: Sequence[str] = ()) -> list[Finder]:
    """With RE2, a DFA per lane (a group of rules whose loose patterns run well together) finds
    candidate positions and Python's ``re`` only confirms the exact rule at the nearest one.  One
    DFA for every rule multiplies states: the counted base64 run beside the others made it ten
    times slower than the two lanes together.  The anchored lane's literals are found by
    Hyperscan (``_anchored``).  [] without RE2."""
    if re2 is None:
        return []
    finders = []
    for name, source in lanes:
        find = _LANE_FILTERS.get(name, _identity)(_re2_candidates(source))
        finders.append(anchor_finder(anchors, find) if name == ANCHORED_LANE else find)
    return finders


_LANE_FILTERS = {"b64": _mixed_case_runs}


def _identity(find: Finder) -> Finder:
    return find


def _dispatch_table(rules: tuple[Rule, ...]) -> dict[int, tuple[Handler, Rule]]:
    """Group number of each rule in ``combined_pattern(rules)`` -> its handler and the rule."""
    table: dict[int, tuple[Handler, Rule]] = {}
    group = 1
    for rule in rules:
        table[group] = (_HANDLERS[rule.kind], rule)
        group += 1 + capturing_groups(rule.pattern)
    return table


# An escape, a character class, or a group opening: "(" not followed by "?" captures.
_GROUP_SYNTAX = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|\((?!\?)")


def capturing_groups(pattern: str) -> int:
    """``re.compile(pattern).groups`` without compiling (compiling every rule once more doubled the
    engine's start-up; the patterns use no named groups)."""
    return sum(1 for syntax in _GROUP_SYNTAX.finditer(pattern) if syntax.group() == "(")


def _settle(data: bytes, match_start: int, outcome: Outcome) -> Outcome:
    """Make edits context-proof, so redacting twice changes nothing more:
    a PEM marker swallowed by another rule's value is given back to the PEM rule, and a
    redaction never stops inside a word (``[REDACTED]`` must not create a ``\\b``)."""
    if not outcome.edits:
        return outcome
    reach = max(outcome.resume, outcome.edits[-1][1])
    if data.find(b"-----BEGIN", match_start + 1, reach) >= 0:
        marker = PEM_START.search(data, match_start + 1, min(len(data), reach + PEM_MARKER_MAX))
        if marker is not None and marker.start() < reach:
            outcome = _cut_before(data, outcome, marker.start())
    for _, end, text in outcome.edits:
        if text is MARK and data[end:end + 1].isalnum() and data[end - 1:end].isalnum():
            break
    else:
        return outcome  # no redaction stops inside a word
    edits = tuple(
        (start, _word_end(data, end) if text is MARK else end, text) for start, end, text in outcome.edits
    )
    return Outcome(edits, max(outcome.resume, edits[-1][1]), outcome.open_block)


def _with_wrapped_tails(data: bytes, edits: list[Edit], open_block: bytes | None) -> tuple[list[Edit], bytes | None]:
    """The edits with the tails of values wrapped at a fixed width; a chain left open at the end
    re-opens with a header of its width (unless a block the rules left open does)."""
    if not edits and not data.startswith(HEADER_HEAD):
        return edits, open_block
    edits, open_width = wrapped_tails(data, edits)
    return edits, wrap_header(open_width, open_block) if open_width else open_block


def _cut_before(data: bytes, outcome: Outcome, cut: int) -> Outcome:
    kept = ((start, content_end(data, start, min(end, cut)), text) for start, end, text in outcome.edits)
    return Outcome(tuple(edit for edit in kept if edit[0] < edit[1]), cut)


def _word_end(data: bytes, end: int) -> int:
    if not data[end - 1:end].isalnum():
        return end
    return ALNUM_RUN.match(data, end).end()  # type: ignore[union-attr]


def _apply_edits(data: bytes, edits: Sequence[Edit]) -> bytes | None:
    if not edits:
        return None
    pieces, last = [], 0
    for start, end, replacement in edits:
        pieces += [data[last:start], replacement]
        last = end
    pieces.append(data[last:])
    return b"".join(pieces)


_ANSI = re.compile(
    rb"\x1b\[[0-9;:?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b\r\n]*(?:\x07|\x1b\\\\)|\x1b[@-Z\\-_]"
    # written out as an escape: in a JSON string (``\u001b[32m``), in ``echo -e``/``printf`` text
    rb"|(?:\\u001[bB]|\\x1[bB]|\\033|\\e)\[[0-9;]*[A-Za-z]"
)
_TEXT_ESCAPES = (b"u001b[", b"u001B[", b"x1b[", b"x1B[", b"033[", b"e[")
_BACKSLASH_VISITS = 4096


def may_hold_ansi(data: bytes) -> bool:
    """Whether ``data`` may hold a colour code, cheaply: ESC is one memchr; a written-out escape is
    looked for at each backslash (a few hundred in a MB of agent output), and past a few thousand
    of them by a search for each form (a multi-byte search costs a millisecond a MB)."""
    if b"\x1b" in data:
        return True
    pos = data.find(b"\\")
    for _ in range(_BACKSLASH_VISITS):
        if pos < 0:
            return False
        if data.startswith(_TEXT_ESCAPES, pos + 1):
            return True
        pos = data.find(b"\\", pos + 1)
    return any(b"\\" + escape in data for escape in _TEXT_ESCAPES)


def strip_ansi(data: bytes) -> tuple[bytes, list[tuple[int, int]]]:
    """The text without escape sequences, and for each removed sequence (position in the
    stripped text, total bytes removed up to and including it)."""
    removed: list[tuple[int, int]] = []
    pieces, last, total = [], 0, 0
    for match in _ANSI.finditer(data):
        pieces.append(data[last:match.start()])
        total += match.end() - match.start()
        removed.append((match.start() - (total - (match.end() - match.start())), total))
        last = match.end()
    pieces.append(data[last:])
    return b"".join(pieces), removed


def _through_ansi(edits: list[Edit], removed: list[tuple[int, int]]) -> list[Edit]:
    """Edits on the stripped text moved onto the original: sequences right before an edit or
    right after it stay; those inside go with the redacted span."""
    positions = [position for position, _ in removed]

    def shift(position: int, inclusive: bool) -> int:
        index = (bisect.bisect_right if inclusive else bisect.bisect_left)(positions, position)
        return position + (removed[index - 1][1] if index else 0)

    return [(shift(start, True), shift(end, False), text) for start, end, text in edits]


class Engine:
    """Scans UTF-8 bytes with one alternation and applies the matched rules' edits."""

    def __init__(self, rules: tuple[Rule, ...] = sp.RULES, use_re2: bool = True) -> None:
        lanes = [(name, lane.encode()) for name, lane in sp.scan_lanes(rules)] if use_re2 else []
        anchors = [rule.scan for rule in rules if rule.lane == ANCHORED_LANE]
        self._finders = _finders(lanes, anchors)
        # Each rule is wrapped in its own group, which closes after any group inside it: the
        # match's ``lastindex`` is the group of the rule that matched.
        # keyed by ``id()``: a compiled pattern's hash is computed over its whole program each time
        self._dispatch: dict[int, dict[int, tuple[Handler, Rule]]] = {}
        self._order = {id(rule): index for index, rule in enumerate(rules)}
        # Without RE2 one alternation of every rule finds and matches.  With it, a candidate that
        # only one lane found can only be matched by that lane's rules (each lane's scan finds
        # every start its rules' exact patterns have), so the exact match there tries those alone;
        # where lanes meet, the rule first in the table wins, as in one alternation (compiling
        # that alternation as well cost a third of the engine's start-up).
        self._precise = None if self._finders else self._compiled(rules)
        self._lane_precise = [
            self._compiled(tuple(rule for rule in rules if (rule.lane or "text") == name))
            for name, _ in (lanes if self._finders else [])
        ]

    def _compiled(self, rules: tuple[Rule, ...]) -> re.Pattern[bytes]:
        pattern = re.compile(sp.combined_pattern(rules).encode())
        self._dispatch[id(pattern)] = _dispatch_table(rules)
        return pattern

    def _first_rule(self, matches: Iterable[re.Match[bytes] | None]) -> re.Match[bytes] | None:
        """Of the lanes' matches at one position, the one whose rule comes first in the table."""
        best: re.Match[bytes] | None = None
        best_order = len(self._order)
        for match in matches:
            if match is not None:
                order = self._order[id(self._dispatch[id(match.re)][match.lastindex or 0][1])]
                if order < best_order:
                    best, best_order = match, order
        return best

    def scan(self, data: bytes) -> tuple[bytes | None, bytes | None]:
        """(redacted bytes or None when nothing changed, header re-opening an unfinished block).
        Terminal colour codes are looked through: a key split by them is still found, and the
        codes inside a redacted span go with it."""
        if may_hold_ansi(data):
            plain, removed = strip_ansi(data)
            if removed:
                edits, open_block = self._edits(plain)
                return _apply_edits(data, _through_ansi(edits, removed)), open_block
        edits, open_block = self._edits(data)
        return _apply_edits(data, edits), open_block

    def explain(self, data: bytes) -> tuple[bytes | None, bytes | None, list[tuple[int, str]]]:
        """``scan`` plus, per edit, where it starts (in ``data`` without colour codes) and the
        name of the rule that made it (``wrapped_tail``: the tail of a value wrapped at a width)."""
        plain = strip_ansi(data)[0] if may_hold_ansi(data) else data
        names: dict[int, str] = {}
        edits, _ = self._edits(plain, names)
        out, open_block = self.scan(data)
        return out, open_block, [(start, names.get(start, "wrapped_tail")) for start, _, _ in edits]

    def _edits(self, data: bytes, names: dict[int, str] | None = None) -> tuple[list[Edit], bytes | None]:
        edits: list[Edit] = []
        last = pos = 0
        open_block: bytes | None = None
        size = len(data)
        next_match = self._matcher(data)
        if next_match is None:
            return _with_wrapped_tails(data, edits, None)
        dispatch = self._dispatch
        while pos < size:
            match = next_match(pos)
            if match is None:
                break
            start, group = match.start(), match.lastindex or 0
            handler, rule = dispatch[id(match.re)][group]
            # ``match.span``, never ``match.regs``: the alternation has over a hundred groups and
            # building all their spans costs more than the rule's whole judgement
            outcome = _settle(data, start, handler(data, match.span, group, rule, last))
            for edit in outcome.edits:
                if edit[0] >= last:
                    edits.append(edit)
                    last = edit[1]
                    if names is not None:
                        names[edit[0]] = rule.name
            open_block = outcome.open_block
            pos = max(outcome.resume, last, start + 1)
        return _with_wrapped_tails(data, edits, open_block)

    def _matcher(self, data: bytes) -> Callable[[int], re.Match[bytes] | None] | None:
        """The leftmost exact match at or after a position (leftmost-first among the rules);
        None when no lane has a candidate anywhere in ``data``."""
        finders = self._finders
        if self._precise is not None:
            return functools.partial(self._precise.search, data)
        # per lane: what it found searching from ``since`` (-1: nothing); the answer holds for
        # any later position up to the candidate found
        found = [find(data, 0) for find in finders]
        if max(found) < 0:
            return None  # most lines of agent output: no candidate at all
        size = len(data)
        lanes = [lane for lane, first in enumerate(found) if first >= 0]  # a lane with none now has none later
        since = [0] * len(finders)
        lane_precise = self._lane_precise

        def next_match(pos: int) -> re.Match[bytes] | None:
            while pos < size:
                best = owner = -1  # owner: the one lane with a candidate at ``best`` (-1: several)
                for lane in lanes:
                    candidate = found[lane]
                    if since[lane] > pos or (0 <= candidate < pos):
                        candidate = found[lane] = finders[lane](data, pos)
                        since[lane] = pos
                    if candidate >= 0 and (best < 0 or candidate < best):
                        best, owner = candidate, lane
                    elif candidate == best >= 0:
                        owner = -1
                if best < 0:
                    return None
                if owner >= 0:
                    match = lane_precise[owner].match(data, best)
                else:
                    match = self._first_rule(
                        lane_precise[lane].match(data, best) for lane in lanes if found[lane] == best
                    )
                if match is not None:
                    return match
                pos = best + 1
            return None

        return next_match

    def redact(self, text: str, header: bytes = b"") -> tuple[str, bytes | None]:
        data = header + text.encode("utf-8", "surrogatepass")
        out, open_block = self.scan(data)
        if out is None:
            return text, open_block
        if not out.startswith(header):  # pragma: no cover - headers are built to stay unchanged
            return REDACTED, None
        return out[len(header):].decode("utf-8", "surrogatepass"), open_block


@functools.lru_cache(maxsize=2)
def default_engine(use_re2: bool = True) -> Engine:
    return Engine(sp.RULES, use_re2)


def _rescan(data: bytes) -> bytes | None:
    return default_engine(True).scan(data)[0]


use_for_rescan(_rescan)
