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
import re
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kilo_loop.fleet.jobrun import RESULT_FILE
from kilo_loop.fleet.local import LocalWorker, RedisServer, free_port
from kilo_loop.fleet.queue import enqueue, make_broker
from kilo_loop.fleet.sources import RedisRuns
from kilo_loop.fleet.store import FleetStore, Job
from tests.fleet.support import agent_binary, goal, init_repo, loop_env, stage, write_goal
from tests.fleet.test_fleet import events_of, submit

pytestmark = [pytest.mark.fleet,
              pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")]

JOBS = 12
FREEZE_SECONDS = 20.0  # the fault itself: Redis frozen this long, then let go
FAULTS = 4  # two workers killed, Redis killed once and frozen once
LONG = (3, 7, 11)  # these jobs' second session outlasts the 10 s after which a frozen worker stops its plan
LONG_SESSION = 25.0


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


def running(store: FleetStore, run_ids: list[str]) -> int:
    return sum(store.meta(r).get("status") == "running" for r in run_ids)


def early_in_second_iteration(stream: list[dict[str, Any]]) -> bool:
    """The long session began less than 5 s ago: a freeze now outlasts the lease before it ends."""
    from datetime import datetime

    started = [e for e in stream if e["type"] == "iteration-started" and e.get("iteration") == 2]
    ended = any(e["type"] in ("iteration-finished", "run-finished") and e.get("iteration") == 2 for e in stream)
    return bool(started) and not ended and time.time() - datetime.fromisoformat(str(started[0]["ts"])).timestamp() < 5


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
    """Over 60 s by design: Redis is frozen for 20 s (longer than the 15 s lease and the 5 s heartbeat),
    so the requeue, lease and replay paths are all taken, then 12 jobs must still end once each."""
    rng = random.Random(26)
    server = RedisServer(tmp_path / "redis", persistent=True).start()
    session_log = tmp_path / "sessions.jsonl"
    # A dead worker's job goes to another after 5 s without its heartbeat; the 20 s freeze outlasts
    # that and the 15 s lease, so the requeue, lease and replay paths are all taken.
    env = loop_env(agent_binary(tmp_path), KILO_LOOP_FLEET_HEARTBEAT_MS="5000", GOAL_AGENT_LOG=str(session_log))
    repo = init_repo(tmp_path / "repo")
    store = FleetStore.from_url(server.url)
    spawned = 0

    workspaces: dict[str, Path] = {}  # worker id (host:pid:…) → its workspace, filled from the logs

    def new_worker() -> LocalWorker:
        nonlocal spawned
        spawned += 1
        return LocalWorker(server.url, tmp_path / f"w{spawned}", env).start()

    workers = [new_worker() for _ in range(3)]
    run_ids: list[str] = []
    try:
        broker = make_broker(server.url)
        for n in range(JOBS):  # queued at once, in-process (test_fleet.py covers `kilo-loop submit`)
            plan = goal(f"plan {n}", *(stage(f"s{k}", {"append": {f"f{n}.txt": f"{k}\n"},
                                                       "sleep": LONG_SESSION if k == 2 and n in LONG else 1.0})
                                       for k in (1, 2)))
            job = Job(f"chaos-{n:02d}", str(repo), f"p{n}.json", json.dumps(plan), flags=("-n", "4"))
            store.register(job)
            enqueue(broker, job)
            run_ids.append(job.run_id)

        def kill_a_worker() -> None:
            victim = rng.randrange(len(workers))
            workers[victim].kill()
            workers[victim] = new_worker()

        wait_for(lambda: running(store, run_ids) >= 2, 180, "jobs running")
        kill_a_worker()
        wait_for(lambda: results(store, run_ids) >= 3 and running(store, run_ids) >= 2, 300,
                 "three results and two jobs running")
        server.kill()
        time.sleep(2.0)  # the fault: Redis gone for two seconds
        server.start()  # same port, same append-only file
        # Frozen while a long session runs: the worker's lease would lapse, so it stops the plan and
        # takes the job up again (or lets it go to the worker the job was requeued to).
        long_ids = [run_ids[n] for n in LONG]
        wait_for(lambda: any(early_in_second_iteration(events_of(store, r)) for r in long_ids), 300,
                 "a long session running")
        assert server.process is not None
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            time.sleep(FREEZE_SECONDS)  # the fault: Redis frozen
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        wait_for(lambda: results(store, run_ids) >= 8 and running(store, run_ids) >= 1, 300,
                 "eight results and a job running")
        kill_a_worker()
        wait_for(lambda: results(store, run_ids) == JOBS, 420, "every job's result")
        view = {row["runId"]: row for row in RedisRuns(store).runs()}
    finally:
        for worker in workers:
            worker.stop()
        server.stop()
        dumps = {str(w.workspace): (w.workspace / "worker.log").read_text()[-3000:] for w in workers
                 if (w.workspace / "worker.log").exists()}
    for log in tmp_path.glob("w*/worker.log"):
        for worker_id in re.findall(r"^kilo-loop worker (\S+): queue ", log.read_text(), re.MULTILINE):
            workspaces[worker_id] = log.parent

    ran = sessions(session_log)
    for run_id in run_ids:
        mine = sorted(ran.get(run_id, []), key=lambda r: r["start"])
        for before, after in itertools.pairwise(mine):
            assert after["start"] >= before["end"], f"two sessions of {run_id} ran at the same time: {before} {after}"
        worked = [r["stage"] for r in mine if r["stage"] in ("s1", "s2")]
        assert set(worked) == {"s1", "s2"}, (run_id, mine)
        # A stage's session is done again only when a fault cut its iteration off before it was saved.
        assert len(worked) <= 2 + FAULTS, (run_id, mine)
        assert view[run_id]["status"] == "done" and not view[run_id]["live"], (run_id, view[run_id], dumps)
    server.start()  # what Redis held at the end, read again from its append-only file
    try:
        for run_id in run_ids:
            result = store.result(run_id)
            assert result["status"] == b"done" and result["stored"] == b"1", (run_id, result.get("stored"))
            # The run directory of the worker that stored the result says the same.
            record = json.loads((workspaces[result["worker"].decode()] / run_id / ".kilocode-loop" / "runs" / run_id
                                 / RESULT_FILE).read_text())
            assert record["status"] == "done", (run_id, record)
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


def test_a_redis_that_comes_back_empty_gets_its_unfinished_jobs_back_from_the_fleet(tmp_path: Path) -> None:
    import subprocess
    import sys

    server = RedisServer(tmp_path / "redis").start()  # no persistence: a restart comes back empty
    env = loop_env(agent_binary(tmp_path))
    plan = write_goal(tmp_path / "plan.json", goal("forgotten", stage("s1", {"write": {"y.txt": "y\n"}})))
    run_id = submit(server.url, init_repo(tmp_path / "repo"), plan, env, "-n", "2")
    out = tmp_path / "fleet.log"
    with out.open("wb") as sink:
        fleet = subprocess.Popen([sys.executable, "-m", "kilo_loop", "fleet", "--broker", server.url, "-p", "0"],
                                 env=env, stdout=sink, stderr=sink, stdin=subprocess.DEVNULL)
    worker: LocalWorker | None = None
    try:
        wait_for(lambda: "1 known, 1 not finished" in out.read_text(), 60, "the fleet to record the job")
        server.stop()
        server.start()  # same port, nothing in it
        wait_for(lambda: "came back empty" in out.read_text(), 60, "the fleet to notice the empty Redis")
        assert f"re-submitted 1 unfinished job(s): {run_id}" in out.read_text()
        store = FleetStore.from_url(server.url)
        worker = LocalWorker(server.url, tmp_path / "w1", env).start()
        wait_for(lambda: bool(store.result(run_id)), 120, "the re-submitted job to run")
        assert store.result(run_id)["status"] == b"done"
    finally:
        if worker is not None:
            worker.stop()
        fleet.send_signal(signal.SIGINT)
        fleet.wait(30)
        server.stop()
