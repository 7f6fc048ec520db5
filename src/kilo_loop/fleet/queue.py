"""The fleet's Dramatiq wiring: one queue, one actor (`run_plan`), a Redis broker whose heartbeat
timeout decides how soon a dead worker's job goes to another worker.

A job is acknowledged only when its actor returns, i.e. when the run has ended; a worker that
dies mid-run leaves its message unacknowledged, and the broker's maintenance hands it to a live
worker once the dead one's heartbeat is older than the timeout. Dramatiq retries an ack that met a
dropped connection until Redis answers again.

Exactly once in effect, on top of that at-least-once delivery: a job whose result is stored is
never run again (a redelivered copy is acknowledged and dropped), and a copy that finds the run's
lease held by a live worker goes back on the queue, delayed, instead of running beside it — it
stays there until the holder stores the result, or dies and lets the copy resume the run.
"""

from __future__ import annotations

import os
import time
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from kilo_loop.fleet.connection import redis_client, until_up
from kilo_loop.fleet.jobrun import LeaseBusy, WorkerConfig, run_job
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
    broker = RedisBroker(client=redis_client(url), heartbeat_timeout=heartbeat,  # type: ignore[no-untyped-call]
                         maintenance_chance=chance)
    broker.declare_queue(QUEUE)
    return broker


def enqueue(broker: RedisBroker, job: Job, delay_ms: int | None = None) -> None:
    message: dramatiq.Message[Any] = dramatiq.Message(queue_name=QUEUE, actor_name=ACTOR, args=(job.to_wire(),), kwargs={}, options={})
    broker.enqueue(message, delay=delay_ms)


def declare_actor(broker: RedisBroker, config: WorkerConfig) -> dramatiq.Actor[Any, Any]:
    store = FleetStore(broker.client)

    def run_plan(job_wire: dict[str, Any]) -> None:
        # The actor never raises for an outage: Dramatiq's retry would be an enqueue on a Redis that is
        # away, and the message would be acknowledged all the same — the job lost. It waits instead.
        job = Job.from_wire(job_wire)
        if until_up(lambda: store.finished(job.run_id)):
            return  # a copy of a job that has its result already: acknowledged, never run again
        paused = until_up(lambda: store.backend_paused_until(job.backend))
        if paused is not None:
            # The provider's quota is spent until `paused`: wait it out instead of burning retries.
            until_up(lambda: _hold(store, broker, job, paused))
            return
        try:
            # The result is stored in Redis with the run, not returned.
            run_job(store, config, job, requeue=lambda: enqueue(broker, job))
        except LeaseBusy:
            # Another worker runs it (this copy came from a requeue after an outage): look again later.
            until_up(lambda: enqueue(broker, job, delay_ms=config.lease_ms))

    decorate = dramatiq.actor(broker=broker, actor_name=ACTOR, queue_name=QUEUE, max_retries=50,
                              min_backoff=1000, max_backoff=30_000, time_limit=WEEK_MS)
    return decorate(run_plan)


def _hold(store: FleetStore, broker: RedisBroker, job: Job, until: float) -> None:
    store.set_meta(job.run_id, status="waiting-quota", quotaUntil=until)
    enqueue(broker, job, delay_ms=max(100, int((until - time.time()) * 1000)))
