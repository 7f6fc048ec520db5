"""Usage limits with a reset time are waited for, not retried: parsing the reset (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kilo_loop.agent.protocol import AgentResult
from kilo_loop.durations import format_duration, parse_duration
from kilo_loop.loop.retry import quota_limit, reset_time, transient_reason

NOW = datetime(2026, 11, 30, 14, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("AI_APICallError: Too Many Requests (HTTP 429), retry-after: 120", NOW + timedelta(seconds=120)),
        ('status 429 {"retry-after": "30"}', NOW + timedelta(seconds=30)),
        ("Claude AI usage limit reached|1764518400", datetime.fromtimestamp(1764518400, tz=UTC)),
        ("You've hit your usage limit. Try again in 2 hours 5 minutes.", NOW + timedelta(hours=2, minutes=5)),
        ("rate limit exceeded, retry in 31.5s", NOW + timedelta(seconds=31.5)),
        ("usage limit reached, resets at 2026-12-01T09:00:00Z", datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),
        ("5-hour limit reached ∙ resets 3pm UTC", datetime(2026, 11, 30, 15, 0, tzinfo=UTC)),
        ("usage limit reached; resets at 9:30 am UTC", datetime(2026, 12, 1, 9, 30, tzinfo=UTC)),
        ("quota exceeded, resets at 13:00 UTC", datetime(2026, 12, 1, 13, 0, tzinfo=UTC)),
    ],
)
def test_reset_times(line: str, expected: datetime) -> None:
    assert reset_time(line, NOW) == expected


@pytest.mark.parametrize("line", ["usage limit reached", "resets 3", "HTTP 500 internal error", "try again later"])
def test_no_reset_time_means_no_wait(line: str) -> None:
    assert reset_time(line, NOW) is None


def test_a_quota_with_a_reset_is_not_a_transient_retry_but_without_one_it_is() -> None:
    limited = AgentResult(exit_code=1, error="APIError: usage limit reached, try again in 10 minutes")
    quota = quota_limit(limited, NOW)
    assert quota is not None and quota.seconds_left(NOW) == 600 and "usage limit" in quota.reason
    vague = AgentResult(exit_code=1, error="APIError: rate limit (429)")
    assert quota_limit(vague, NOW) is None and transient_reason(vague)
    assert quota_limit(AgentResult(exit_code=0, error=None), NOW) is None
    killed = AgentResult(exit_code=1, error="usage limit reached, try again in 1m", killed=True)
    assert quota_limit(killed, NOW) is None
    in_stderr = AgentResult(exit_code=1, error="agent failed", stderr_tail="Error: 429 Too Many Requests\nretry-after: 5")
    found = quota_limit(in_stderr, NOW)
    assert found is not None and found.seconds_left(NOW) == 5


def test_durations() -> None:
    assert parse_duration("90") == 90 and parse_duration("1h30m") == 5400 and parse_duration("2.5m") == 150
    assert parse_duration(" 10 s ") == 10 and parse_duration(45) == 45.0
    for bad in ("soon", "5x", "-3", "", "1h junk"):
        with pytest.raises(ValueError):
            parse_duration(bad)
    assert format_duration(5400) == "1h 30m" and format_duration(75) == "1m 15s" and format_duration(9.6) == "10s"
