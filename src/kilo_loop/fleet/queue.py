"""The fleet's Dramatiq wiring: one queue, one actor (`run_plan`), a Redis broker whose heartbeat
timeout decides how soon a dead worker's job goes to another worker.

A job is acknowledged only when its actor returns, i.e. when the run has ended; a worker that
dies mid-run leaves its message unacknowledged, and the broker's maintenance hands it to a live
worker once the dead one's heartbeat is older than the timeout.
"""

from __future__ import annotations

import os
import time
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from kilo_loop.fleet.jobrun import WorkerConfig, run_job
from kilo_loop.fleet.store import FleetStore, Job

QUEUE = "kilo-loop"
ACTOR = "run_plan"
WEEK_MS = 7 * 24 * 3600 * 1000
HEARTBEAT_ENV = "KILO_LOOP_FLEET_HEARTBEAT_MS"
DEFAULT_HEARTBEAT_MS = 60_000


def make_broker(url: str, heartbeat_ms: int | None = None) -> RedisBroker:
    heartbeat = heartbeat_ms or int(os.environ.get(HEARTBEAT_ENV, DEFAULT_HEARTBEAT_MS))
    # Maintenance (requeueing a dead worker's messages) on every fetch when the timeout is short,
    # as in a try-out or a test; at the default, Dramatiq's own rate.
    chance = 1_000_000 if heartbeat < DEFAULT_HEARTBEAT_MS else 16_000
    broker = RedisBroker(url=url, heartbeat_timeout=heartbeat, maintenance_chance=chance)  # type: ignore[no-untyped-call]
    broker.declare_queue(QUEUE)
    return broker


def enqueue(broker: RedisBroker, job: Job, delay_ms: int | None = None) -> None:
    message: dramatiq.Message[Any] = dramatiq.Message(queue_name=QUEUE, actor_name=ACTOR, args=(job.to_wire(),), kwargs={}, options={})
    broker.enqueue(message, delay=delay_ms)


def declare_actor(broker: RedisBroker, config: WorkerConfig) -> dramatiq.Actor[Any, Any]:
    store = FleetStore(broker.client)

    def run_plan(job_wire: dict[str, Any]) -> None:
        job = Job.from_wire(job_wire)
        paused = store.backend_paused_until(job.backend)
        if paused is not None:
            # The provider's quota is spent until `paused`: wait it out instead of burning retries.
            store.set_meta(job.run_id, status="waiting-quota", quotaUntil=paused)
            enqueue(broker, job, delay_ms=max(100, int((paused - time.time()) * 1000)))
            return
        run_job(store, config, job)  # the result is stored in Redis with the run, not returned

    decorate = dramatiq.actor(broker=broker, actor_name=ACTOR, queue_name=QUEUE, max_retries=50,
                              min_backoff=1000, max_backoff=30_000, time_limit=WEEK_MS)
    return decorate(run_plan)
