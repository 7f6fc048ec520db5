"""The one redaction boundary: every event line, state file, report, archived prompt/handoff,
console line, dashboard stream item and notification passes through ``Redactor`` (what it
replaces: the package's docstring).  It masks the values the loop knows first (``_masker``), then
runs the rules (``_engine``), then the user's extra patterns.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kilo_loop.redact import _patterns as sp
from kilo_loop.redact._engine import default_engine, may_hold_ansi, strip_ansi
from kilo_loop.redact._handler import MARK
from kilo_loop.redact._masker import KnownMasker
from kilo_loop.redact._patterns import REDACTED
from kilo_loop.redact._values import value_edit

_MAX_DEPTH = 64
_SHORT_TEXT = 64
_SHORT_ENTRIES = 4096


def _compile_extra(patterns: Sequence[str]) -> list[re.Pattern[str]]:
    compiled = []
    for pattern in [patterns] if isinstance(patterns, str) else patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"invalid extra redaction pattern {pattern!r}: {exc}") from exc
    return compiled


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)


class Redactor:
    """Replaces secrets with ``[REDACTED]``; ``Redactor(enabled=False)`` is the identity."""

    def __init__(
        self, enabled: bool = True, extra_patterns: Sequence[str] = (), known: Iterable[tuple[str, str]] = ()
    ) -> None:
        self.enabled = enabled
        self._extra = _compile_extra(extra_patterns)
        self._engine = default_engine(True)
        self._short: dict[str, str] = {}  # results for short strings (kept in memory only)
        self._known = KnownMasker(known)

    def add_known(self, values: Iterable[tuple[str, str]]) -> None:
        """Mask these (value, source) pairs from now on, in every encoding (``_masker``)."""
        if self._known.add(values):
            self._short.clear()  # results cached before may hold the new values

    @property
    def mask_counts(self) -> dict[str, int]:
        """How many occurrences of known values were masked, by source (never the values)."""
        return dict(self._known.counts)

    @property
    def known_forms(self) -> int:
        return self._known.size

    def _mask_text(self, text: str) -> str:
        if not self._known:
            return text
        out, _ = self._known.mask(text.encode("utf-8", "surrogatepass"))
        return text if out is None else out.decode("utf-8", "surrogatepass")

    def _mask_bytes(self, block: bytes) -> bytes:
        if not self._known:
            return block
        out, _ = self._known.mask(block)
        return block if out is None else out

    def redact(self, text: str) -> str:
        if not self.enabled:
            return text
        if type(text) is not str or len(text) > _SHORT_TEXT:
            return self._redact(text)
        # The leaves of event dicts (types, statuses, tool names, paths, ids) repeat all the time
        # and each costs two DFA calls; their results are kept, a bounded number of them.
        redacted = self._short.get(text)
        if redacted is None:
            redacted = self._redact(text)
            if len(self._short) >= _SHORT_ENTRIES:
                self._short.clear()
            self._short[text] = redacted
        return redacted

    def _redact(self, text: str) -> str:
        try:
            text = _as_text(text)
            if self._known:  # encoded once for both the masks and the rules
                data = text.encode("utf-8", "surrogatepass")
                masked = self._known.mask(data)[0]
                out = self._engine.scan(masked or data)[0] or masked
                redacted = text if out is None else out.decode("utf-8", "surrogatepass")
            else:
                redacted, _ = self._engine.redact(text)
            return self._redact_extra(redacted)
        except Exception:  # noqa: BLE001 - fail closed, never raise
            return REDACTED

    def redact_lines(self, lines: Iterable[str]) -> Iterator[str]:
        """Redact a stream line by line (one output per input, lazily), carrying multi-line
        blocks (PEM keys, indented secret values) across lines."""
        header = b""
        for line in lines:
            if not self.enabled:
                yield line
                continue
            try:
                redacted, opened = self._engine.redact(self._mask_text(_as_text(line)), header)
                header = opened or b""
                yield self._redact_extra(redacted)
            except Exception:  # noqa: BLE001 - fail closed, never raise
                header = b""
                yield REDACTED

    def redact_blocks(self, blocks: Iterable[bytes]) -> Iterator[bytes]:
        """Redact a byte stream cut into blocks of whole lines (each block but the last ends with
        ``\n``), carrying multi-line blocks across them; the output of each block is what
        ``redact_lines`` gives for its lines.  Bytes that are not UTF-8 pass through unchanged.
        One scan per block instead of one per line: the fast path for ``kilo-loop redact``."""
        header = b""
        for block in blocks:
            redacted, header = self.redact_block(block, header)
            yield redacted

    def redact_block(self, block: bytes, header: bytes = b"") -> tuple[bytes, bytes]:
        """One block of whole lines, after a block that left ``header`` open (b"": none): its
        redaction, and the header that re-opens what it leaves unfinished (b"": nothing).  The
        result depends on nothing else, so blocks can be redacted apart and joined in order."""
        if not self.enabled or not block:
            return block, header if self.enabled else b""
        try:
            masked = self._mask_bytes(block)
            out, opened = self._engine.scan(header + masked)
            if out is not None and not out.startswith(header):  # pragma: no cover - see redact()
                raise ValueError("a re-opening header was changed")  # noqa: TRY301 - caught below: fail closed
            redacted = masked if out is None else out[len(header):]
            return self._redact_extra_bytes(redacted), opened or b""
        except Exception:  # noqa: BLE001 - fail closed, never raise
            return _failed_block(block), b""

    def explain_block(self, block: bytes, header: bytes = b"") -> tuple[bytes, bytes, list[tuple[int, str]]]:
        """``redact_block`` and, per redaction, its line in the block (0-based) and what fired:
        a rule's name, ``mask (<source>)`` for a known value, ``extra pattern``."""
        if not self.enabled or not block:
            return block, header if self.enabled else b"", []
        try:
            hits = self._known.hits(block) if self._known else []
            fired = [(block.count(b"\n", 0, hit.start), f"mask ({hit.source})") for hit in hits]
            masked = self._mask_bytes(block)
            out, opened, named = self._engine.explain(header + masked)
            redacted = masked if out is None else out[len(header):]
            plain = strip_ansi(header + masked)[0] if may_hold_ansi(header + masked) else header + masked
            skip = header.count(b"\n")
            fired += [(plain.count(b"\n", 0, start) - skip, name) for start, name in named if start >= len(header)]
            extra = self._redact_extra_bytes(redacted)
            if extra != redacted:
                before, after = redacted.split(b"\n"), extra.split(b"\n")
                fired += [(index, "extra pattern") for index, line in enumerate(after) if line != before[index]]
            return extra, opened or b"", sorted(fired)
        except Exception:  # noqa: BLE001 - fail closed, never raise
            return _failed_block(block), b"", [(0, "internal error: the whole block redacted")]

    def redact_value(self, value: Any) -> Any:
        """Redact strings (and bytes, as text) inside dicts/lists/tuples; keys stay as they are, and a
        string under a secret-named key (``password``, ``apiKey``, ``authorization`` …) is redacted wholesale."""
        if not self.enabled:
            return value
        try:
            return self._value(value, 0)
        except Exception:  # noqa: BLE001 - fail closed, never raise
            return REDACTED

    def _value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, (bytes, bytearray)):  # never written as they are: text, redacted
            return self.redact(_as_text(value))
        if depth >= _MAX_DEPTH and isinstance(value, (dict, list, tuple)):
            return REDACTED
        if isinstance(value, dict):
            return {key: self._entry(key, item, depth + 1) for key, item in value.items()}
        if isinstance(value, list):
            return [self._value(item, depth + 1) for item in value]
        if isinstance(value, tuple):
            return tuple(self._value(item, depth + 1) for item in value)
        return value

    def _entry(self, key: Any, value: Any, depth: int) -> Any:
        if not (isinstance(key, str) and sp.is_secret_key(key)):
            return self._value(value, depth)
        return self._secret(key, value, depth)

    def _secret(self, key: str, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return _wholesale(key, value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return REDACTED if sp.numeric_is_secret(key) else value
        if isinstance(value, (list, tuple)) and depth < _MAX_DEPTH:
            items = [self._secret(key, item, depth + 1) for item in value]
            return items if isinstance(value, list) else tuple(items)
        return self._value(value, depth)

    def _redact_extra_bytes(self, block: bytes) -> bytes:
        if not self._extra:
            return block
        out = []
        for line in block.split(b"\n"):
            text = self._redact_extra(line.decode("utf-8", "surrogateescape"))
            out.append(text.encode("utf-8", "surrogateescape"))
        return b"\n".join(out)

    def _redact_extra(self, text: str) -> str:
        for pattern in self._extra:
            text = pattern.sub(_extra_replacement, text)
        return text


def _failed_block(block: bytes) -> bytes:
    return (MARK + b"\n") * block.count(b"\n") + (b"" if block.endswith(b"\n") else MARK)


def _extra_replacement(match: re.Match[str]) -> str:
    return REDACTED if match.group(0) else ""


def _wholesale(key: str, value: str) -> str:
    raw = value.encode("utf-8", "surrogatepass")
    edits = value_edit(raw, 0, len(raw), key)
    if not edits:
        return value
    start = edits[0][0]
    return raw[:start].decode("utf-8", "surrogatepass") + REDACTED


@functools.lru_cache(maxsize=1)
def default_redactor() -> Redactor:
    return Redactor()


def redact_stream(lines: Iterable[str], redactor: Redactor | None = None) -> Iterator[str]:
    """``redactor.redact_lines(lines)`` with the default redactor."""
    return (redactor or default_redactor()).redact_lines(lines)
