"""The fleet's throughput, its own cost per job, and how fast a run's events reach the dashboard.

A stub agent sleeps 1 s per session (standing in for the model, which is the bottleneck in real
use); every job is a three-stage plan, so three sessions. Measured in one run, on a real
redis-server on a free loopback port with real worker processes:

  * the fleet's own cost per job (queueing, cloning, bookkeeping): PAIRS times, the same job run
    directly (`kilo-loop --goal … -C <clone>`, the floor) and then through one idle worker, from
    enqueue to its stored result; the median of the differences (pairs cancel the load's drift);
  * JOBS jobs through 1 worker and through 4 workers: jobs per minute;
  * event latency worker → fleet dashboard: each event's timestamp (written by the run when it
    happened) against when an SSE client of `kilo-loop fleet`'s API received it, p50 / p95;
  * the outage buffer's cost per event in normal operation: EVENTS events appended to a run's
    events.jsonl in batches and taken to Redis by a worker's tick (follow, hold, publish, with the
    outage and lease bookkeeping) against the floor — the same batches published straight to the
    stream — per event (`--buffer-only` measures just this).

Targets (issue "Many plans at once"): 4 workers ≥ 3x the throughput of 1; the fleet's own cost ≤
150 ms per job; event latency p95 ≤ 250 ms; (issue 26) the outage buffer ≤ 1 ms per event. Run by hand:

    PYTHONPATH=src:. .venv/bin/python benchmarks/bench_fleet.py [--jobs 40] [--pairs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx

from kilo_loop.fleet.local import LocalWorker, RedisServer
from kilo_loop.fleet.queue import enqueue, make_broker
from kilo_loop.fleet.serve import fleet_dashboard
from kilo_loop.fleet.sources import RedisRuns
from kilo_loop.fleet.store import FleetStore, Job

ROOT = Path(__file__).resolve().parents[1]
GOAL_AGENT = ROOT / "tests" / "fleet" / "goal_agent.py"
SESSION_SECONDS = 1.0


def plan(n: int) -> str:
    stages = [{"id": f"s{k}", "title": f"step {k}", "details": "agent: " + json.dumps(
        {"append": {f"job{n}.txt": f"{k}\n"}, "sleep": SESSION_SECONDS})} for k in (1, 2, 3)]
    return json.dumps({"title": f"job {n}", "stages": stages})


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    for args in (["init", "-q"], ["-c", "user.name=b", "-c", "user.email=b@e", "commit", "-q", "--allow-empty",
                                   "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    (path / "README.md").write_text("bench\n")
    return path


def agent_env(tmp: Path) -> dict[str, str]:
    binary = tmp / "bin" / "kilo"
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_text(f"#!/bin/sh\nexec {sys.executable} {GOAL_AGENT} \"$@\"\n")
    binary.chmod(0o755)
    # The stub speaks `kilo run`'s stream only: no `kilo serve` (it would be taken as a session), no
    # kilo.db to read usage from, no pre-flight of its --help — as the test harnesses set for it.
    return {**os.environ, "KILO_BIN": str(binary), "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1",
            "KILO_LOOP_TRANSPORT": "run", "KILO_LOOP_USAGE_DB": "false", "KILO_LOOP_PREFLIGHT": "0"}


def direct_run(tmp: Path, repo: Path, env: dict[str, str], n: int) -> float:
    """Seconds for one job run directly: a fresh clone, then `kilo-loop --goal … -C <clone>`."""
    start = time.perf_counter()
    clone = tmp / f"direct-{n}"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    goal = tmp / f"direct-{n}.json"
    goal.write_text(plan(n))
    subprocess.run([sys.executable, "-m", "kilo_loop", "--goal", str(goal), "-C", str(clone), "-n", "4",
                    "--no-dashboard", "--no-confirm", "--quiet"], env=env, check=True, capture_output=True,
                   stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def paired(tmp: Path, repo: Path, env: dict[str, str], pairs: int) -> list[tuple[float, float]]:
    """(direct, through one idle worker) seconds for the same job, alternately: pairing cancels the
    slow drift of a shared machine's load, which swamps a 150 ms difference between batches."""
    server = RedisServer(tmp / "redis-paired").start()
    store, broker = FleetStore.from_url(server.url), make_broker(server.url)
    worker = LocalWorker(server.url, tmp / "paired-w", env).start()
    time.sleep(2.0)
    out: list[tuple[float, float]] = []
    try:
        for n in range(pairs):
            job = Job(f"paired-{n}", str(repo), f"job{n}.json", plan(n), flags=("-n", "4"))
            store.register(job)
            start = time.perf_counter()
            enqueue(broker, job)
            while not store.result(job.run_id):
                time.sleep(0.01)
            through_worker = time.perf_counter() - start
            out.append((direct_run(tmp, repo, env, n), through_worker))
    finally:
        worker.stop()
        server.stop()
    return out


def through_fleet(tmp: Path, repo: Path, env: dict[str, str], jobs: int, workers: int,
                  latencies: dict[str, list[float]] | None = None) -> float:
    """Wall seconds for `jobs` jobs through `workers` workers, from the first submit to the last result."""
    server = RedisServer(tmp / f"redis-{workers}").start()
    store = FleetStore.from_url(server.url)
    broker = make_broker(server.url)
    pool = [LocalWorker(server.url, tmp / f"fleet{workers}-w{k}", env).start() for k in range(workers)]
    time.sleep(2.0)  # workers up and consuming before the clock starts
    try:
        run_ids = [f"bench-{workers}-{n}" for n in range(jobs)]
        queued = [Job(run_id, str(repo), f"job{n}.json", plan(n), flags=("-n", "4")) for n, run_id in enumerate(run_ids)]
        for job in queued:
            store.register(job)  # known to the dashboard before the watchers subscribe
        watcher = _LatencyWatcher(store, run_ids[: min(8, jobs)], latencies) if latencies is not None else None
        start = time.perf_counter()
        for job in queued:
            enqueue(broker, job)
        while not all(store.result(run_id) for run_id in run_ids):
            time.sleep(0.1)
        elapsed = time.perf_counter() - start
        if watcher is not None:
            watcher.stop()
        bad = [r for r in run_ids if store.result(r).get("status") != b"done"]
        if bad:
            raise SystemExit(f"jobs not done: {bad[:3]}")
        return elapsed
    finally:
        for worker in pool:
            worker.stop()
        server.stop()


class _LatencyWatcher:
    """SSE clients of the fleet dashboard's API, one per watched run, recording delivery delays."""

    def __init__(self, store: FleetStore, run_ids: list[str], latencies: dict[str, list[float]]) -> None:
        self.latencies = latencies
        self.dashboard = fleet_dashboard(RedisRuns(store), None, 0)
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(run_ids),))
        self._thread.start()
        time.sleep(1.0)

    async def _main(self, run_ids: list[str]) -> None:
        await self.dashboard.start()
        headers = {"authorization": f"Bearer {self.dashboard.token}"}
        base = f"http://127.0.0.1:{self.dashboard.binding.port}"
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=None) as client:
            tasks = [asyncio.create_task(self._follow(client, run_id)) for run_id in run_ids]
            await self._stop.wait()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.dashboard.stop()

    async def _follow(self, client: httpx.AsyncClient, run_id: str) -> None:
        async with client.stream("GET", f"/api/runs/{run_id}/events") as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    sent = datetime.fromisoformat(event["ts"]).timestamp()
                    self.latencies.setdefault(str(event.get("type")), []).append(time.time() - sent)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


def buffer_cost(tmp: Path, events: int = 20_000, batch: int = 20) -> tuple[float, float]:
    """(floor, through a worker's tick) microseconds per event, the same batches to the same Redis."""
    from kilo_loop.fleet.jobrun import JobRun, WorkerConfig

    server = RedisServer(tmp / "redis-buffer").start()
    try:
        store = FleetStore.from_url(server.url)
        lines = [json.dumps({"seq": n, "type": "tool", "ts": "2026-01-01T00:00:00+00:00",
                             "data": {"tool": "bash", "output": "x" * 200}}).encode() + b"\n"
                 for n in range(1, events + 1)]
        start = time.perf_counter()
        for k in range(0, events, batch):
            store.publish_events("floor", [json.loads(line) for line in lines[k:k + batch]])
        floor = time.perf_counter() - start
        run = JobRun(store, WorkerConfig(workspace=tmp / "buffer-ws", worker_id="bench"),
                     Job("ticked", str(tmp), "g.md", "# g"))
        store.acquire("ticked", "bench", 60_000)
        run._publish_state = lambda: None  # type: ignore[method-assign]  # no state.json here
        file = run.run_dir / "events.jsonl"
        file.parent.mkdir(parents=True)
        ticked = 0.0
        with file.open("ab") as handle:
            for k in range(0, events, batch):
                handle.write(b"".join(lines[k:k + batch]))
                handle.flush()
                start = time.perf_counter()
                run._tick()
                ticked += time.perf_counter() - start
        run._saver.shutdown()
        if store.last_seq("ticked") != events:
            raise SystemExit("the ticked run did not publish every event")
        return floor / events * 1e6, ticked / events * 1e6
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--pairs", type=int, default=10, help="direct/fleet pairs for the fleet's own cost")
    parser.add_argument("--buffer-only", action="store_true", help="only the outage buffer's cost per event")
    args = parser.parse_args()
    if args.buffer_only:
        with tempfile.TemporaryDirectory(prefix="bench-fleet-") as name:
            floor_us, ticked_us = buffer_cost(Path(name))
        print(f"outage buffer: {ticked_us:.1f} µs per event through a worker's tick, floor {floor_us:.1f} µs "
              f"(published straight): +{(ticked_us - floor_us) / 1000:.3f} ms per event (target ≤ 1 ms)")
        return
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as name:
        tmp = Path(name)
        repo = make_repo(tmp / "repo")
        env = agent_env(tmp)
        pairs = paired(tmp, repo, env, args.pairs)
        by_type: dict[str, list[float]] = {}
        one = through_fleet(tmp, repo, env, args.jobs, 1, by_type)
        four = through_fleet(tmp, repo, env, args.jobs, 4)
    per_job_one = one / args.jobs
    direct_per_job = statistics.median(d for d, _ in pairs)
    overhead_ms = statistics.median(f - d for d, f in pairs) * 1000
    latencies = sorted(x for values in by_type.values() for x in values)
    p50 = statistics.median(latencies) * 1000
    p95 = latencies[int(0.95 * (len(latencies) - 1))] * 1000
    print(f"jobs: {args.jobs} x 3 sessions of {SESSION_SECONDS:.0f} s (stub agent)")
    print(f"direct (floor): {direct_per_job:.2f} s per job (median of {len(pairs)})")
    print(f"1 worker: {one:.1f} s, {60 * args.jobs / one:.1f} jobs/min, {per_job_one:.2f} s per job")
    print(f"4 workers: {four:.1f} s, {60 * args.jobs / four:.1f} jobs/min — {one / four:.2f}x of 1 worker"
          f" (target ≥ 3x)")
    print(f"fleet's own cost per job: {overhead_ms:.0f} ms over direct, median of {len(pairs)} pairs run alternately"
          f" (target ≤ 150 ms); mean {1000 * statistics.mean(f - d for d, f in pairs):.0f} ms")
    print(f"event latency worker → dashboard: p50 {p50:.0f} ms, p95 {p95:.0f} ms over {len(latencies)} events"
          f" (target p95 ≤ 250 ms)")
    slowest = sorted(by_type.items(), key=lambda item: -max(item[1]))[:5]
    print("  slowest event types (max ms, count): " + ", ".join(
        f"{kind} {max(values) * 1000:.0f} ({len(values)})" for kind, values in slowest))


if __name__ == "__main__":
    main()
