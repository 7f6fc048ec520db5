"""How the fleet talks to Redis when Redis may be away: one client shape for every fleet process, the
errors that mean "the queue is not there right now", and waiting for it with backoff at start-up."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.exceptions
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

# A refused connection, a reset, a timeout (a frozen Redis), Redis still loading its AOF
# (BusyLoadingError is a ConnectionError), a read-only replica after a fail-over.
OUTAGE_ERRORS: tuple[type[Exception], ...] = (
    redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, redis.exceptions.ReadOnlyError,
    TimeoutError, ConnectionError,
)
SOCKET_TIMEOUT = 3.0
T = TypeVar("T")


def masked(url: str) -> str:
    """The broker URL without its password, for anything printed."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def redis_client(url: str) -> redis.Redis:
    """A client that notices an outage within seconds: a frozen Redis (SIGSTOP, a partition) times a
    call out instead of hanging it, and a refused connection is retried once, briefly, not ten times."""
    return redis.Redis.from_url(url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT,
                                retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 1), health_check_interval=10)


def backoff_delays(first: float = 0.5, cap: float = 10.0) -> Callable[[], float]:
    """Successive waits: 0.5 s, 1 s, 2 s … up to `cap`."""
    state = {"next": first}

    def delay() -> float:
        current = state["next"]
        state["next"] = min(cap, current * 2)
        return current

    return delay


def wait_for_broker(client: Any, url: str, wait_seconds: float | None, say: Callable[[str], None],
                    sleep: Callable[[float], None] = time.sleep,
                    clock: Callable[[], float] = time.monotonic) -> str | None:
    """Ping until Redis answers. `wait_seconds` None waits forever, 0 tries once. None when it
    answered, else why not. One "waiting for the queue at …" line when it first fails, then one line
    a minute at most."""
    deadline = None if wait_seconds is None else clock() + wait_seconds
    delay = backoff_delays()
    said_at: float | None = None
    while True:
        try:
            client.ping()
        except OUTAGE_ERRORS as exc:
            now = clock()
            if deadline is not None and now >= deadline:
                return _reason(exc)
            if said_at is None or now - said_at >= 60:
                limit = "until it answers" if deadline is None else f"for up to {wait_seconds:g} s"
                say(f"waiting for the queue at {masked(url)} ({_reason(exc)}), {limit}")
                said_at = now
            pause = delay()
            sleep(pause if deadline is None else max(0.0, min(pause, deadline - now)))
            continue
        if said_at is not None:
            say(f"the queue at {masked(url)} answers")
        return None


def _reason(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:160]


def until_up(step: Callable[[], T], say: Callable[[str], None] | None = None,
             sleep: Callable[[float], None] = time.sleep) -> T:
    """`step()`, tried again with backoff for as long as Redis is away (a worker has nothing better
    to do with a job than wait for the queue: giving up would lose it)."""
    delay = backoff_delays(0.25, 5.0)
    said = False
    while True:
        try:
            return step()
        except OUTAGE_ERRORS as exc:
            if say is not None and not said:
                say(f"the queue is away ({_reason(exc)}): trying again until it answers")
                said = True
            sleep(delay())
