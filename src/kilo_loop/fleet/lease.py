"""How long the lease on a run is this worker's, as far as this worker can know.

Redis expires the lease `ttl` after the last renewal reached it; the worker counts from when it
*sent* that renewal (never later than Redis's own clock started), and stops its plan `margin`
before then. A worker cut off from Redis therefore stops running a job before another worker can
take the lease: a job never runs twice at the same time, even across an outage.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class LeaseClock:
    def __init__(self, ttl_ms: int, margin: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl_ms / 1000
        self._margin = margin
        self._clock = clock
        self._valid_until = clock() + self._ttl - margin

    def renewed(self, sent_at: float) -> None:
        self._valid_until = sent_at + self._ttl - self._margin

    def expired(self) -> bool:
        return self._clock() >= self._valid_until

    def remaining(self) -> float:
        return self._valid_until - self._clock()
