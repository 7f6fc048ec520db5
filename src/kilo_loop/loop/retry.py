"""Which agent failures are transient (worth retrying), and how long to wait."""

from __future__ import annotations

import random
import re

from kilo_loop.agent.protocol import AgentResult

_TRANSIENT = re.compile(
    r"connection reset(?: by (?:peer|server))?|ECONNRESET|ETIMEDOUT|EPIPE|ECONNREFUSED|EAI_AGAIN"
    r"|socket hang up|fetch failed|premature close|rate.?limit|overloaded|timed out|too many requests"
    r"|\b(?:HTTP|status(?:Code)?)[ :=]*(?:429|5\d\d)\b|\b(?:429|50[0-4]|529)\b",
    re.IGNORECASE,
)


def transient_reason(result: AgentResult) -> str | None:
    """The line that shows a provider/network hiccup (the reason to report), else None.

    Iteration timeouts and kills (guard hits, user stop) are never transient.
    """
    if result.timed_out or result.killed or not result.failed:
        return None
    if result.retryable and result.error:  # the backend knows its CLI's transient failures
        return result.error.splitlines()[0][:200]
    for source in (result.error or "", result.stderr_tail):
        for line in source.splitlines():
            if _TRANSIENT.search(line):
                return line.strip()[:200]
    return None


def backoff_delay_ms(attempt: int, base_ms: int, cap_ms: int, rng: random.Random | None = None) -> int:
    """Exponential backoff with full jitter in the upper half: base·2^(attempt-1), capped."""
    ceiling = min(cap_ms, base_ms * (2 ** max(0, attempt - 1)))
    roll = (rng or random).random()
    return int(ceiling / 2 + roll * ceiling / 2)
