"""The fleet's own record of its jobs, for the day Redis forgets them.

A Redis without persistence that restarts (or one that is flushed) comes back empty: queued jobs,
their records and their results are gone, and nobody would run them. Redis holds a fleet epoch key
(set once by the first fleet process that reaches it); `kilo-loop fleet` remembers it and every job
it has seen. When the epoch is gone or changed, Redis lost everything: the jobs on record as not
finished are put back and queued again, and the fleet says which. A worker still running one of them
restores its record and keeps the lease, so the new copy waits on the queue instead of running twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kilo_loop.fleet.store import FleetStore, Job


def came_back_empty(remembered: str | None, current: str | None) -> bool:
    """A remembered epoch that is gone or replaced: Redis lost its data since the last look."""
    return remembered is not None and current != remembered


def unfinished(jobs: dict[str, Job], finished: set[str]) -> list[Job]:
    return [job for run_id, job in jobs.items() if run_id not in finished]


@dataclass
class FleetKeeper:
    store: FleetStore
    enqueue: Callable[[Job], None]
    say: Callable[[str], None]
    jobs: dict[str, Job] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)
    epoch: str | None = None

    def check(self) -> list[str]:
        """One look at Redis: the run ids re-submitted (none, unless Redis came back empty)."""
        current = self.store.epoch()
        first = self.epoch is None
        resubmitted: list[str] = []
        if came_back_empty(self.epoch, current):
            resubmitted = self._resubmit()
        self.epoch = self.store.ensure_epoch()
        self._remember()
        if first:
            self.say(f"keeping a record of the fleet's jobs: {len(self.jobs)} known, "
                     f"{len(self.jobs) - len(self.finished)} not finished")
        return resubmitted

    def _resubmit(self) -> list[str]:
        lost = [job for job in unfinished(self.jobs, self.finished) if not self.store.finished(job.run_id)]
        for job in lost:
            self.store.restore(job)
            self.enqueue(job)
        if lost:
            names = ", ".join(job.run_id for job in lost)
            self.say(f"the queue came back empty (its fleet epoch changed): re-submitted {len(lost)} unfinished "
                     f"job(s): {names}")
        else:
            self.say("the queue came back empty (its fleet epoch changed): no unfinished job to re-submit")
        return [job.run_id for job in lost]

    def _remember(self) -> None:
        for run_id in self.store.run_ids():
            if run_id not in self.jobs:
                job = self.store.job(run_id)
                if job is not None:
                    self.jobs[run_id] = job
        open_ids = [run_id for run_id in self.jobs if run_id not in self.finished]
        for run_id, done in zip(open_ids, self.store.finished_many(open_ids), strict=True):
            if done:
                self.finished.add(run_id)
