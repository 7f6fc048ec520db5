"""The many-runs dashboard's API over both sources: Redis (a fleet) and run directories (parallel plans)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient

from kilo_loop.fleet.app import create_fleet_app
from kilo_loop.fleet.inbox import INBOX_FILE, InboxCommand, parse_command
from kilo_loop.fleet.local import RedisServer
from kilo_loop.fleet.sources import LocalRuns, RedisRuns, RunSource
from kilo_loop.fleet.store import FleetStore, Job
from kilo_loop.web.security import SecurityMiddleware, SecurityPolicy

TOKEN = "t0ken-for-tests"
HEADERS = {"authorization": f"Bearer {TOKEN}"}
needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")


def client_for(source: RunSource) -> TestClient:
    policy = SecurityPolicy(frozenset({"testserver"}), TOKEN)
    return TestClient(SecurityMiddleware(create_fleet_app(source), policy))


def state(status: str = "running", questions: list[dict[str, object]] | None = None) -> dict[str, object]:
    return {"runId": "r1", "status": status, "goalTitle": "Plan one", "iteration": 2, "maxIterations": 5,
            "stages": [{"id": "a", "status": "done"}, {"id": "b", "status": "in_progress"}],
            "totals": {"cost": 0.25, "tokens": 900}, "pendingQuestions": questions or []}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[FleetStore]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer(tmp_path / "redis").start()
    yield FleetStore.from_url(server.url)
    server.stop()


@needs_redis
def test_runs_inbox_and_state_from_redis(store: FleetStore) -> None:
    store.register(Job("r1", "/repo", "plan.md", "# Plan one\n- [ ] a\n"))
    store.put_state("r1", orjson.dumps(state(questions=[{"question": "Which DB?", "options": ["pg", "sqlite"]}])))
    store.set_meta("r1", status="waiting-answer", worker="host:1:abc")
    store.pause_backend("claude", 4_102_444_800.0)
    client = client_for(RedisRuns(store))
    runs = client.get("/api/runs", headers=HEADERS).json()
    row = runs["runs"][0]
    assert (row["runId"], row["status"], row["stagesDone"], row["stagesTotal"], row["cost"]) == \
        ("r1", "waiting-answer", 1, 2, 0.25)
    assert runs["pausedBackends"] == [{"backend": "claude", "until": 4_102_444_800.0}]
    inbox = client.get("/api/inbox", headers=HEADERS).json()["items"]
    assert inbox == [{"runId": "r1", "title": "Plan one", "questions": [{"question": "Which DB?",
                                                                        "options": ["pg", "sqlite"]}]}]
    assert client.get("/api/runs/r1/state", headers=HEADERS).json()["goalTitle"] == "Plan one"
    assert client.get("/api/runs/nope/state", headers=HEADERS).status_code == 404


@needs_redis
def test_commands_go_back_through_redis_to_the_owning_worker(store: FleetStore) -> None:
    store.register(Job("r1", "/repo", "plan.md", "x"))
    client = client_for(RedisRuns(store))
    assert client.post("/api/runs/r1/control", json={"action": "pause"}, headers=HEADERS).status_code == 200
    assert client.post("/api/runs/r1/answer", json={"answers": ["pg"]}, headers=HEADERS).status_code == 200
    assert client.post("/api/runs/r1/control", json={"action": "explode"}, headers=HEADERS).status_code == 422
    assert client.post("/api/runs/r1/control", json={"action": "shared-context"},
                       headers=HEADERS).status_code == 422
    assert client.post("/api/runs/zz/control", json={"action": "stop"}, headers=HEADERS).status_code == 404
    assert client.post("/api/runs/r1/answer", json={"answers": []}, headers=HEADERS).status_code == 422
    sent = [parse_command(c) for c in store.take_commands("r1")]
    assert sent == [InboxCommand("pause"), InboxCommand("answer", answers=("pg",))]


@needs_redis
def test_event_stream_replays_from_redis_and_resumes_after_last_event_id(store: FleetStore) -> None:
    store.register(Job("r1", "/repo", "plan.md", "x"))
    store.publish_events("r1", [{"seq": n, "type": "warning", "level": "warn", "message": f"line {n}"}
                                for n in range(1, 6)])
    client = client_for(RedisRuns(store))
    with client.stream("GET", "/api/runs/r1/events", headers={**HEADERS, "last-event-id": "3"}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = []
        for line in response.iter_lines():
            if line.startswith("data: "):
                frames.append(orjson.loads(line[6:]))
            if len(frames) == 2:
                break
    assert [f["seq"] for f in frames] == [4, 5]


def test_every_route_needs_the_token() -> None:
    client = client_for(LocalRuns(dict, dict))
    for method, path in (("GET", "/api/runs"), ("GET", "/api/inbox"), ("GET", "/api/runs/r1/state"),
                         ("POST", "/api/runs/r1/control"), ("POST", "/api/runs/r1/answer"), ("GET", "/")):
        response = client.request(method, path, json={} if method == "POST" else None)
        assert response.status_code == 401, (method, path)


def test_local_runs_write_commands_to_the_run_s_inbox(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "state.json").write_bytes(orjson.dumps(state()))
    client = client_for(LocalRuns(lambda: {"r1": run_dir}, dict))
    assert client.get("/api/runs", headers=HEADERS).json()["runs"][0]["title"] == "Plan one"
    assert client.post("/api/runs/r1/control", json={"action": "shared-context", "value": True},
                       headers=HEADERS).status_code == 200
    lines = (run_dir / INBOX_FILE).read_text().splitlines()
    assert [parse_command(orjson.loads(line)) for line in lines] == [InboxCommand("shared-context", True)]


@pytest.mark.parametrize("record", [[], {"command": "rm"}, {"command": "answer", "answers": "x"},
                                    {"command": "shared-context"}, "stop"])
def test_malformed_inbox_lines_are_refused_with_a_reason(record: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        parse_command(record)
