"""The candidate finder of the ``anchored`` lane: rules that open with a literal no ordinary text
is full of (``smbclient``, ``IDENTIFIED BY``, ``bkua_``, ``> AUTH``…).  Beside the other rules in
an RE2 DFA each literal costs states all through ordinary text (round 4 dropped such prefixes for
3-9% more instructions a MB); Hyperscan finds all of a text's anchors in one SIMD pass instead,
once per text, and the lane answers "the next candidate at or after a position" from that list.
Without Hyperscan (or should it fail) the lane's RE2 scan runs as for any lane.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

hyperscan: Any
try:  # pragma: no cover - an accelerator where its wheel exists (x86-64)
    import hyperscan
except ImportError:  # pragma: no cover
    hyperscan = None

Finder = Callable[[bytes, int], int]
ANCHORED_LANE = "anchored"


class _AnchorFinder:
    """Every anchor's start in a text, found in one scan and kept for that text."""

    def __init__(self, anchors: Sequence[bytes], fallback: Finder) -> None:
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        flags = [hyperscan.HS_FLAG_SOM_LEFTMOST] * len(anchors)
        self._db.compile(expressions=list(anchors), ids=list(range(len(anchors))), elements=len(anchors), flags=flags)
        self._fallback = fallback
        self._data: bytes | None = None
        self._starts: list[int] = []

    def __call__(self, data: bytes, pos: int) -> int:
        if data is not self._data:
            starts: list[int] = []

            def found(_id: int, start: int, _end: int, _flags: int, _context: object) -> None:
                starts.append(start)

            try:
                self._db.scan(data, match_event_handler=found)
            except hyperscan.HyperscanError:  # pragma: no cover - a scratch in use (another thread)
                return self._fallback(data, pos)
            self._data, self._starts = data, sorted(set(starts))
        index = bisect.bisect_left(self._starts, pos)
        return self._starts[index] if index < len(self._starts) else -1


def anchor_finder(anchors: Sequence[str], fallback: Finder) -> Finder:
    """The Hyperscan finder of these anchors (RE2-syntax patterns, each matching where its rule's
    match starts); ``fallback`` (the lane's RE2 scan) where Hyperscan is missing."""
    if hyperscan is None:
        return fallback  # pragma: no cover
    try:
        return _AnchorFinder([anchor.encode() for anchor in anchors], fallback)
    except hyperscan.HyperscanError:  # pragma: no cover - a CPU it cannot run on
        return fallback
