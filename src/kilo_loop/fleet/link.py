"""A worker's link to Redis while it runs a job: up, or down since when and when to try again.

Pure bookkeeping (the clock is passed in): the job run decides what to do while Redis is away —
keep the plan running, leave its events in events.jsonl, and replay them once Redis answers."""

from __future__ import annotations

import time
from collections.abc import Callable

FIRST_RETRY = 0.25
MAX_RETRY = 5.0


class Link:
    def __init__(self, say: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._say = say
        self._clock = clock
        self.down_since: float | None = None
        self._retry_at = 0.0
        self._delay = FIRST_RETRY

    @property
    def up(self) -> bool:
        return self.down_since is None

    def lost(self, exc: BaseException) -> None:
        """A call failed: the first failure of an outage is said once, then retries back off."""
        if self.down_since is None:
            self.down_since = self._clock()
            self._delay = FIRST_RETRY
            self._say(f"lost the queue ({_reason(exc)}): the run goes on, its events wait in events.jsonl")
        self._retry_at = self._clock() + self._delay
        self._delay = min(MAX_RETRY, self._delay * 2)

    def due(self) -> bool:
        """Down, and time to try again."""
        return self.down_since is not None and self._clock() >= self._retry_at

    def wait_seconds(self) -> float:
        return 0.0 if self.up else max(0.0, self._retry_at - self._clock())

    def restored(self) -> float:
        """Redis answered again: how long it was away."""
        since, self.down_since = self.down_since, None
        return 0.0 if since is None else self._clock() - since


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:160]
