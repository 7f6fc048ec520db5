"""The fleet under faults, with real processes: a redis-server with an append-only file (fsync at
every write), three `kilo-loop worker` processes and twelve jobs of the scripted goal agent, while
workers are killed with SIGKILL and replaced, redis-server is killed with SIGKILL and restarted on its
file, and redis-server is frozen (SIGSTOP) for 20 s. Every job must end `done` exactly once, its
stream whole, the fleet view agreeing with the run directories, and no job's sessions overlapping.

Also: a worker started before its Redis waits for it and then runs jobs.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kilo_loop.fleet.jobrun import RESULT_FILE
from kilo_loop.fleet.local import LocalWorker, RedisServer, free_port
from kilo_loop.fleet.sources import RedisRuns
from kilo_loop.fleet.store import FleetStore
from tests.fleet.support import agent_binary, goal, init_repo, loop_env, stage, write_goal
from tests.fleet.test_fleet import events_of, submit

pytestmark = [pytest.mark.fleet,
              pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")]

JOBS = 12
FREEZE_SECONDS = 20.0  # the fault itself: Redis frozen this long, then let go


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll a condition; Redis being away while it is looked at is not an answer yet."""
    from kilo_loop.fleet.connection import OUTAGE_ERRORS

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OUTAGE_ERRORS:
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def results(store: FleetStore, run_ids: list[str]) -> int:
    return sum(store.finished_many(run_ids))


def sessions(log: Path) -> dict[str, list[dict[str, Any]]]:
    by_run: dict[str, list[dict[str, Any]]] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        record = json.loads(line)
        by_run.setdefault(record["run"], []).append(record)
    return by_run


@pytest.mark.slow
def test_every_job_ends_done_exactly_once_through_killed_workers_a_killed_and_a_frozen_redis(
    tmp_path: Path,
) -> None:
    rng = random.Random(26)
    server = RedisServer(tmp_path / "redis", persistent=True).start()
    session_log = tmp_path / "sessions.jsonl"
    # A dead worker's job goes to another after 5 s without its heartbeat; the 20 s freeze outlasts
    # that and the 15 s lease, so the requeue, lease and replay paths are all taken.
    env = loop_env(agent_binary(tmp_path), KILO_LOOP_FLEET_HEARTBEAT_MS="5000", GOAL_AGENT_LOG=str(session_log))
    repo = init_repo(tmp_path / "repo")
    store = FleetStore.from_url(server.url)
    spawned = 0

    def new_worker() -> LocalWorker:
        nonlocal spawned
        spawned += 1
        return LocalWorker(server.url, tmp_path / f"w{spawned}", env).start()

    workers = [new_worker() for _ in range(3)]
    run_ids: list[str] = []
    try:
        for n in range(JOBS):
            plan = write_goal(tmp_path / "plans" / f"p{n}.json", goal(f"plan {n}", *(
                stage(f"s{k}", {"append": {f"f{n}.txt": f"{k}\n"}, "sleep": 1.0}) for k in (1, 2))))
            run_ids.append(submit(server.url, repo, plan, env, "-n", "4"))

        def kill_a_worker() -> None:
            victim = rng.randrange(len(workers))
            workers[victim].kill()
            workers[victim] = new_worker()

        wait_for(lambda: sum(store.meta(r).get("status") == "running" for r in run_ids) >= 2, 180, "jobs running")
        kill_a_worker()
        wait_for(lambda: results(store, run_ids) >= 3, 300, "three results")
        server.kill()
        time.sleep(2.0)  # the fault: Redis gone for two seconds
        server.start()  # same port, same append-only file
        wait_for(lambda: results(store, run_ids) >= 6, 300, "six results")
        assert server.process is not None
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            time.sleep(FREEZE_SECONDS)  # the fault: Redis frozen
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        wait_for(lambda: results(store, run_ids) >= 8, 300, "eight results")
        kill_a_worker()
        wait_for(lambda: results(store, run_ids) == JOBS, 420, "every job's result")
        view = {row["runId"]: row for row in RedisRuns(store).runs()}
    finally:
        for worker in workers:
            worker.stop()
        server.stop()
        dumps = {str(w.workspace): (w.workspace / "worker.log").read_text()[-3000:] for w in workers
                 if (w.workspace / "worker.log").exists()}

    ran = sessions(session_log)
    for run_id in run_ids:
        row = view[run_id]
        assert row["status"] == "done" and not row["live"], (run_id, row, dumps)
        records = [json.loads((d / run_id / ".kilocode-loop" / "runs" / run_id / RESULT_FILE).read_text())
                   for d in tmp_path.glob("w*") if (d / run_id / ".kilocode-loop" / "runs" / run_id / RESULT_FILE).exists()]
        assert [r["status"] for r in records] == ["done"], (run_id, records)
        mine = sorted(ran.get(run_id, []), key=lambda r: r["start"])
        assert {r["stage"] for r in mine} == {"s1", "s2"}, (run_id, mine)
        for before, after in itertools.pairwise(mine):
            assert after["start"] >= before["end"], f"two sessions of {run_id} ran at the same time: {before} {after}"
        assert len(mine) <= 4, (run_id, mine)
    # What Redis held at the end, read again from its append-only file.
    server.start()
    try:
        for run_id in run_ids:
            result = store.result(run_id)
            assert result["status"] == b"done" and result["stored"] == b"1", (run_id, result.get("stored"))
            assert b"\n+1\n+2\n" in result["patch"], (run_id, result["patch"][-200:])
            stream = events_of(store, run_id)
            seqs = [int(e["seq"]) for e in stream]  # type: ignore[call-overload]
            assert seqs == list(range(1, len(seqs) + 1)), f"{run_id}: the stream has gaps or repeats"
            assert [e["type"] for e in stream].count("run-finished") >= 1, run_id
    finally:
        server.stop()


def test_a_worker_started_before_its_redis_waits_for_it_then_runs_jobs(tmp_path: Path) -> None:
    port = free_port()
    server = RedisServer(tmp_path / "redis", port=port)
    env = loop_env(agent_binary(tmp_path))
    worker = LocalWorker(server.url, tmp_path / "w1", env).start()
    log = tmp_path / "w1" / "worker.log"
    try:
        wait_for(lambda: log.exists() and "waiting for the queue at" in log.read_text(), 60,
                 "the worker to say it waits")
        assert worker.process is not None and worker.process.poll() is None, "the worker waits, it does not exit"
        server.start()
        store = FleetStore.from_url(server.url)
        plan = write_goal(tmp_path / "plan.json", goal("late redis", stage("s1", {"write": {"x.txt": "x\n"}})))
        run_id = submit(server.url, init_repo(tmp_path / "repo"), plan, env, "-n", "2")
        wait_for(lambda: bool(store.result(run_id)), 120, "the job to run once Redis is up")
        assert store.result(run_id)["status"] == b"done"
        assert "the queue at" in log.read_text() and "answers" in log.read_text()
    finally:
        worker.stop()
        server.stop()
