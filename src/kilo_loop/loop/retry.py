"""Which agent failures are transient (worth retrying), and how long to wait; which are usage
limits with a reset time (worth waiting for instead)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

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


# ------------------------------------------------------------------ usage limits (quota)
@dataclass(frozen=True)
class QuotaLimit:
    """A usage or rate limit with a known reset: wait until `until`, then go on."""

    until: datetime
    reason: str

    def seconds_left(self, now: datetime) -> float:
        return max(0.0, (self.until - now).total_seconds())


_LIMIT = re.compile(
    r"usage limit|rate.?limit|quota|too many requests|limit reached|limit exceeded|\b429\b|hit your .*limit",
    re.IGNORECASE,
)
_RETRY_AFTER = re.compile(r"retry-after[\"']?\s*[:=]\s*[\"']?(\d+(?:\.\d+)?)\s*(?:s|sec|seconds)?\b", re.IGNORECASE)
_UNIX_RESET = re.compile(r"limit reached\|(\d{10})\b", re.IGNORECASE)
_IN_DURATION = re.compile(
    r"(?:try again|retry|resets?|available again)\s+in\s+((?:\d+(?:\.\d+)?\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|"
    r"seconds?|secs?|s)\b[\s,and]*)+)",
    re.IGNORECASE,
)
_AT_ISO = re.compile(r"(?:resets?|try again|available again|retry)\s+(?:at|after|on)?\s*"
                     r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)", re.IGNORECASE)
_AT_CLOCK = re.compile(
    r"(?:resets?|try again|available again)\s+(?:at\s+)?(\d{1,2})(?::(\d\d))?\s*([ap]\.?m\.?)?\s*(utc|gmt|z)?(?![\d:])",
    re.IGNORECASE,
)
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def quota_limit(result: AgentResult, now: datetime) -> QuotaLimit | None:
    """A usage limit with a reset time in the agent's error or stderr, else None.

    `now` must be timezone-aware; a clock time without a zone is read in the machine's zone.
    A limit without a reset time is no QuotaLimit: it stays a transient error with backoff.
    """
    if result.killed or result.timed_out or not result.failed:
        return None
    for line in (result.error or "").splitlines() + result.stderr_tail.splitlines():
        if not _LIMIT.search(line) and not _RETRY_AFTER.search(line):
            continue
        until = reset_time(line, now)
        if until is not None:
            return QuotaLimit(until, line.strip()[:200])
    return None


def reset_time(line: str, now: datetime) -> datetime | None:
    """When the limit in `line` resets: retry-after seconds, `…|<unix time>`, `try again in 2h 5m`,
    `resets at 2026-12-01T10:00Z`, `resets 3pm` / `resets at 15:30 UTC` (the next such time)."""
    if match := _RETRY_AFTER.search(line):
        return now + timedelta(seconds=float(match.group(1)))
    if match := _UNIX_RESET.search(line):
        return datetime.fromtimestamp(int(match.group(1)), tz=UTC)
    if match := _IN_DURATION.search(line):
        return now + timedelta(seconds=_spoken_seconds(match.group(1)))
    if match := _AT_ISO.search(line):
        return _iso(match.group(1), now)
    if match := _AT_CLOCK.search(line):
        return _next_clock(match, now)
    return None


def _spoken_seconds(text: str) -> float:
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]+)", text.lower()):
        total += float(number) * _UNIT_SECONDS.get(unit[0], 0)
    return total


def _iso(text: str, now: datetime) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace(" ", "T"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=now.astimezone().tzinfo)


def _next_clock(match: re.Match[str], now: datetime) -> datetime | None:
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    meridiem, zone = (match.group(3) or "").lower().replace(".", ""), match.group(4)
    if meridiem and not 1 <= hour <= 12:
        return None
    if meridiem == "pm" and hour != 12:
        hour += 12
    elif meridiem == "am" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59 or (not meridiem and match.group(2) is None):
        return None  # a bare number ("resets 3") is too vague to wait for
    local = now.astimezone(UTC if zone else now.astimezone().tzinfo)
    candidate = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if candidate <= local:
        candidate += timedelta(days=1)
    return candidate
