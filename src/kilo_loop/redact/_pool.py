"""Redacting a big input on several cores, with exactly the output of one process.

A block of whole lines redacts to a result that depends on nothing but the block and the header
the block before it left open (``Redactor.redact_block``).  Worker processes redact each block as
if nothing were open; the blocks come back in input order, and the rare block whose predecessor
did leave something open (a PEM key or an indented secret running over the cut) is redone here
with that header.  A worker that fails costs nothing either: its block is redone here.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor

from kilo_loop.redact._redactor import Redactor

_worker_redactor: Redactor | None = None


def _install(redactor: Redactor) -> None:
    global _worker_redactor  # one redactor per worker process
    _worker_redactor = redactor
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the parent's to handle


def _redact_alone(block: bytes) -> tuple[bytes, bytes]:
    assert _worker_redactor is not None  # set by the pool's initializer
    return _worker_redactor.redact_block(block, b"")


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class InOrder:
    """Blocks redacted here or by a pool of worker processes, handed out in input order."""

    def __init__(self, redactor: Redactor, workers: int, header: bytes = b"") -> None:
        self._redactor = redactor
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._queue: deque[tuple[bytes, Future[tuple[bytes, bytes]]]] = deque()
        self._header = header  # what the last block handed out left open

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def window(self) -> int:
        """How many blocks may be in flight: enough to keep every worker busy."""
        return 2 * self._workers

    def here(self, block: bytes) -> bytes:
        """Redact ``block`` in this process (nothing may be pending)."""
        out, self._header = self._redactor.redact_block(block, self._header)
        return out

    def submit(self, block: bytes) -> None:
        """Hand ``block`` to a worker; ``next_done`` gives its redaction in turn."""
        if self._pool is None:
            # fork: the workers start with the parent's compiled rules instead of building them
            context = multiprocessing.get_context("fork")
            self._pool = ProcessPoolExecutor(
                self._workers, mp_context=context, initializer=_install, initargs=(self._redactor,)
            )
        self._queue.append((block, self._pool.submit(_redact_alone, block)))

    def next_done(self) -> bytes:
        """The redaction of the oldest submitted block (waiting for it if need be)."""
        block, future = self._queue.popleft()
        try:
            out, opened = future.result()
        except Exception:  # noqa: BLE001 - a broken worker: redo the block here
            return self.here(block)
        if self._header:  # the block before left something open: redo it with that header
            return self.here(block)
        self._header = opened
        return out

    def close(self, finished: bool) -> None:
        """Stop the workers: waiting for them when all went well (they are idle, and so they are
        reaped), dropping queued work when not (an error, Ctrl+C, a closed output)."""
        if self._pool is not None:
            self._pool.shutdown(wait=finished, cancel_futures=not finished)
            self._pool = None
        self._queue.clear()


def can_fork() -> bool:
    try:
        multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - platforms without fork
        return False
    return True
