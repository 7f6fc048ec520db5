"""The fleet with a real redis-server on a free loopback port and real worker processes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from kilo_loop.fleet.local import LocalWorker, RedisServer
from kilo_loop.fleet.queue import enqueue, make_broker
from kilo_loop.fleet.store import FleetStore, Job
from tests.fleet.support import agent_binary, goal, init_repo, loop_env, stage, write_goal

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


def submit(broker: str, repo: Path, goal_path: Path, env: dict[str, str], *flags: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "kilo_loop", "submit", "--broker", broker, "--repo", str(repo), "--goal",
         str(goal_path), *flags], env=env, capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def events_of(store: FleetStore, run_id: str) -> list[dict[str, object]]:
    return [event for _, event in store.events_after(run_id, count=1_000_000)]


def test_twelve_jobs_over_three_workers_each_run_exactly_once(tmp_path: Path, redis_server: RedisServer) -> None:
    repo = init_repo(tmp_path / "repo")
    env = loop_env(agent_binary(tmp_path))
    store = FleetStore.from_url(redis_server.url)
    workers = [LocalWorker(redis_server.url, tmp_path / f"w{n}", env).start() for n in range(3)]
    try:
        run_ids = []
        for n in range(12):
            plan = write_goal(tmp_path / "plans" / f"p{n}.json", goal(
                f"plan {n}", stage("s1", {"write": {f"f{n}.txt": f"{n}\n"}, "sleep": 0.3})))
            run_ids.append(submit(redis_server.url, repo, plan, env, "-n", "2"))
        wait_for(lambda: all(store.result(r) for r in run_ids), 240, "12 results")
    finally:
        for worker in workers:
            worker.stop()
    workers_used = set()
    for n, run_id in enumerate(run_ids):
        result = store.result(run_id)
        assert result["status"] == b"done", (run_id, result.get("status"), [e for e in events_of(store, run_id) if e["type"] in ("crashed", "warning", "run-finished", "error")])
        assert f"+{n}".encode() in result["patch"]
        assert b"# Run " in result["report"] and result["archive"][:2] == b"\x1f\x8b"
        started = [e for e in events_of(store, run_id) if e["type"] == "run-started"]
        assert len(started) == 1, "each job ran exactly once"
        workers_used.add(store.meta(run_id)["worker"])
    assert len(workers_used) >= 2, "the jobs were spread over the workers"
    assert not (repo / "f0.txt").exists(), "the submitted repository itself is never written"


def test_a_killed_worker_s_job_resumes_on_another_from_where_it_was(tmp_path: Path,
                                                                     redis_server: RedisServer) -> None:
    repo = init_repo(tmp_path / "repo")
    env = loop_env(agent_binary(tmp_path), KILO_LOOP_FLEET_HEARTBEAT_MS="2000")
    store = FleetStore.from_url(redis_server.url)
    stages = [stage(f"s{n}", {"append": {"log.txt": f"{n}\n"}, "sleep": 1.0}) for n in range(1, 5)]
    plan = write_goal(tmp_path / "plan.json", goal("long plan", *stages))
    first = LocalWorker(redis_server.url, tmp_path / "w1", env).start()
    run_id = submit(redis_server.url, repo, plan, env, "-n", "6")
    second: LocalWorker | None = None
    try:
        wait_for(lambda: any(e["type"] == "iteration-finished" and e.get("iteration") == 2
                             for e in events_of(store, run_id)), 120, "two iterations on the first worker")
        first.kill()
        second = LocalWorker(redis_server.url, tmp_path / "w2", env).start()
        wait_for(lambda: bool(store.result(run_id)), 180, "the job to finish on the second worker")
    finally:
        first.kill()
        if second is not None:
            second.stop()
    result = store.result(run_id)
    assert result["status"] == b"done"
    meta = store.meta(run_id)
    assert meta["resumed"] == "1" and meta["worker"].split(":")[1] == str(second.process.pid)  # type: ignore[union-attr]
    events = events_of(store, run_id)
    seqs = [int(e["seq"]) for e in events]  # type: ignore[call-overload]
    assert seqs == list(range(1, len(seqs) + 1)), "the fleet view sees one continuous stream"
    iterations = [e for e in events if e["type"] == "iteration-started"]
    assert len(iterations) <= 5, [(e["seq"], e["message"]) for e in events if e["level"] in ("heading", "warn", "error")]
    patch = result["patch"].decode()
    for n in range(1, 5):
        assert f"+{n}" in patch
    state = orjson.loads(store.client.get(f"kilo-loop:run:{run_id}:state"))
    assert [s["status"] for s in state["stages"]] == ["done"] * 4


def test_a_question_on_a_worker_is_answered_through_the_fleet_api(tmp_path: Path,
                                                                   redis_server: RedisServer) -> None:
    from fastapi.testclient import TestClient

    from kilo_loop.fleet.app import create_fleet_app
    from kilo_loop.fleet.sources import RedisRuns

    repo = init_repo(tmp_path / "repo")
    env = loop_env(agent_binary(tmp_path))
    store = FleetStore.from_url(redis_server.url)
    plan = write_goal(tmp_path / "plan.json", goal(
        "asks", stage("s1", {"write": {"q.txt": "1\n"}, "ask": "Which database?"}),
        stage("s2", {"append": {"q.txt": "2\n"}})))
    worker = LocalWorker(redis_server.url, tmp_path / "w1", env).start()
    api = TestClient(create_fleet_app(RedisRuns(store)))
    try:
        run_id = submit(redis_server.url, repo, plan, env, "-n", "3")
        wait_for(lambda: bool(api.get("/api/inbox").json()["items"]), 90, "the question in the fleet inbox")
        item = api.get("/api/inbox").json()["items"][0]
        assert item["runId"] == run_id and item["questions"][0]["question"] == "Which database?"
        assert api.post(f"/api/runs/{run_id}/answer", json={"answers": ["PostgreSQL"]}).status_code == 200
        wait_for(lambda: bool(store.result(run_id)), 90, "the run to finish")
    finally:
        worker.stop()
    assert store.result(run_id)["status"] == b"done"
    prompt = tmp_path / "w1" / run_id / ".kilocode-loop" / "runs" / run_id / "iterations" / "02-prompt.md"
    assert "PostgreSQL" in prompt.read_text(), "the answer reached that run's next prompt"


def test_push_branch_sends_the_result_to_the_job_s_remote(tmp_path: Path, redis_server: RedisServer) -> None:
    work = init_repo(tmp_path / "work")
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True)
    env = loop_env(agent_binary(tmp_path))
    store = FleetStore.from_url(redis_server.url)
    plan = write_goal(tmp_path / "plan.json", goal("push", stage("s1", {"write": {"pushed.txt": "result\n"}})))
    worker = LocalWorker(redis_server.url, tmp_path / "w1", env).start()
    try:
        run_id = submit(redis_server.url, origin, plan, env, "--push-branch", "-n", "2")
        wait_for(lambda: bool(store.result(run_id)), 90, "the run to finish")
    finally:
        worker.stop()
    assert store.result(run_id)["pushed"] == f"kilo-loop/{run_id}".encode()
    shown = subprocess.run(["git", "--git-dir", str(origin), "show", f"kilo-loop/{run_id}:pushed.txt"],
                           capture_output=True, text=True, check=True).stdout
    assert shown == "result\n"
    branches = subprocess.run(["git", "--git-dir", str(origin), "branch", "--list"], capture_output=True,
                              text=True, check=True).stdout
    assert "main" in branches, "the job's own branch is untouched"


def test_a_spent_quota_pauses_that_backend_s_jobs_until_the_reset(tmp_path: Path, redis_server: RedisServer) -> None:
    # Deterministic under load: the pause is read from the run's own record (not caught by polling a key
    # that expires), the held job is queued in-process the moment the pause is known (no `submit`
    # process start-up eating the pause), and that it was held is read from its record afterwards
    # (not from a status a poll could miss). The reset is 12 s away, far beyond those few milliseconds.
    repo = init_repo(tmp_path / "repo")
    env = loop_env(agent_binary(tmp_path))
    store = FleetStore.from_url(redis_server.url)
    limited = write_goal(tmp_path / "limited.json", goal("limited", stage("s1", {
        "error_once": "429 Too Many Requests: rate limit reached, try again in 12 seconds", "write": {"a.txt": "a\n"}})))
    other = write_goal(tmp_path / "other.json", goal("other", stage("s1", {"write": {"b.txt": "b\n"}})))
    workers = [LocalWorker(redis_server.url, tmp_path / f"w{n}", env).start() for n in range(2)]
    try:
        first = submit(redis_server.url, repo, limited, env, "--backend", "claude", "-n", "2", "--no-retry")
        wait_for(lambda: bool(store.meta(first).get("quotaUntil")), 120, "the backend's quota pause")
        until = float(store.meta(first)["quotaUntil"])
        second = Job("held", str(repo), "other.json", other.read_text(), flags=("-n", "2"), backend="claude")
        store.register(second)
        enqueue(make_broker(redis_server.url), second)
        queued_at = time.time()
        assert queued_at < until - 1, "the pause had nearly run out before the second job was queued"
        wait_for(lambda: bool(store.result(first)) and bool(store.result(second.run_id)), 180, "both jobs to finish")
    finally:
        for worker in workers:
            worker.stop()
    assert store.result(first)["status"] == b"done" and store.result(second.run_id)["status"] == b"done"
    assert float(store.meta(second.run_id).get("quotaUntil", 0)) == pytest.approx(until), "the second job was held"
    started = [e for e in events_of(store, second.run_id) if e["type"] == "run-started"]
    assert started and _epoch(str(started[0]["ts"])) >= until - 0.5, "the held job started after the reset"
    waits = [e for e in events_of(store, first) if e["type"] == "quota-wait"]
    assert waits, "the limited run waited for the reset itself instead of spending retries"


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()
