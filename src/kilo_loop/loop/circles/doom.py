"""A doom loop inside one session: the same tool call (the tool and its normalised arguments) N
times, or M failing tool calls in a row. One `DoomWatch` per session; it only counts."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Arguments that describe a call rather than make it: two calls differing only here are the same call.
_DESCRIPTIVE = frozenset({"description", "title", "explanation", "reason", "timeout"})
_SPACE = re.compile(r"\s+")


def call_key(tool: str, arguments: Mapping[str, Any]) -> str:
    """The tool and its arguments, whitespace collapsed and descriptive keys dropped, as one string."""
    kept = sorted((str(key), _normal(value)) for key, value in arguments.items() if key not in _DESCRIPTIVE)
    shown = ", ".join(f"{key}={value!r}" for key, value in kept)
    return f"{tool.strip().lower()}({shown})"


def _normal(value: Any) -> Any:
    if isinstance(value, str):
        return _SPACE.sub(" ", value).strip()
    if isinstance(value, Mapping):
        return {str(key): _normal(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(item) for item in value]
    return value


@dataclass(frozen=True)
class Doom:
    reason: str
    calls: int  # the session's tool calls so far


class DoomWatch:
    def __init__(self, max_repeat_calls: int, max_failed_calls: int) -> None:
        self._max_repeat = max_repeat_calls
        self._max_failed = max_failed_calls
        self._seen: Counter[str] = Counter()
        self._failed_in_a_row = 0
        self.calls = 0

    def observe(self, tool: str, arguments: Mapping[str, Any], failed: bool) -> Doom | None:
        """Count one finished tool call; a Doom when the session should end now."""
        self.calls += 1
        key = call_key(tool, arguments)
        self._seen[key] += 1
        self._failed_in_a_row = self._failed_in_a_row + 1 if failed else 0
        if self._max_repeat and self._seen[key] >= self._max_repeat:
            shown = key if len(key) <= 160 else key[:157] + "…"
            return Doom(f"the same tool call {self._seen[key]} times in one session (--max-repeat-calls "
                        f"{self._max_repeat}): {shown}", self.calls)
        if self._max_failed and self._failed_in_a_row >= self._max_failed:
            return Doom(f"{self._failed_in_a_row} failing tool calls in a row (--max-failed-calls "
                        f"{self._max_failed})", self.calls)
        return None


def saving(tokens: int, cost: float, elapsed_s: float, limit_s: float | None) -> tuple[int, float]:
    """What ending the session now saved, at the session's own average rate until the iteration's time
    limit (the doom loop would have run on until something stopped it)."""
    if not limit_s or elapsed_s <= 0 or limit_s <= elapsed_s:
        return 0, 0.0
    left = limit_s - elapsed_s
    return int(tokens / elapsed_s * left), round(cost / elapsed_s * left, 6)
