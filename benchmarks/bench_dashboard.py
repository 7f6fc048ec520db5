"""Dashboard speed with a long run: `/api/state` size and latency for a synthetic run of
1,000 iterations, and SSE delivery latency to 50 clients at once.

Every figure is compared with a floor measured in the same run on the same server: fetching
a small static file (the favicon). Run by hand:

    PYTHONPATH=src .venv/bin/python benchmarks/bench_dashboard.py
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from kilo_loop.run.events import RunEvent
from kilo_loop.run.state import IterationSummary, VerifyResult
from kilo_loop.runner import RunHandle, make_backend, prepare_run, resolve_goal
from kilo_loop.settings import load_settings
from kilo_loop.web.server import Dashboard, prepare_dashboard

ITERATIONS = 1000
LOG_LINES = 400
REQUESTS = 200
SSE_CLIENTS = 50
SSE_EVENTS = 100
PLAN = "# Long plan\n\n" + "".join(f"- [ ] Stage {n} :: verify: pytest -q tests/test_{n}.py\n" for n in range(40))


def make_project(root: Path) -> Path:
    root.mkdir()
    (root / "plans").mkdir()
    (root / "plans" / "long.md").write_text(PLAN)
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(root)}
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@e", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    return root


def long_run(project: Path) -> tuple[Dashboard, RunHandle]:
    """A dashboard showing a run with ITERATIONS finished iterations and a full log tail."""
    settings = load_settings({"project": project, "port": 0, "dry_run": True, "goal": Path("plans/long.md")}, project)
    goal = resolve_goal(settings, project)
    backend, runtime = make_backend(settings)
    handle = RunHandle(settings, project, goal, backend, runtime, prepare_run(settings, goal, project, runtime))
    for n in range(1, ITERATIONS + 1):
        handle.state.iterations.append(IterationSummary(
            iteration=n, stage_id=f"stage-{n % 40 + 1}", stage_title=f"Stage {n % 40}", outcome="ok",
            tokens=14_000 + n, input_tokens=13_000, output_tokens=1000, cost=0.004 + n / 1e5, context_tokens=14_000,
            topic=f"Topic of iteration {n}", percent=n * 100 // ITERATIONS, next_stage="Stage next",
            summary="Reworked the parser and the tests around it. " * 4,
            files_changed=[f"src/pkg/module_{k}.py" for k in range(12)],
            verify=VerifyResult(command="pytest -q", exit_code=0, passed=True, output_tail="12 passed"),
        ))
    handle.state.iteration = ITERATIONS
    handle.state.status = "running"
    for n in range(LOG_LINES):
        handle.bus.emit(RunEvent("tool", f"▸ Edit src/pkg/module_{n % 12}.py", "tool", ITERATIONS,
                                 {"tool": "edit", "input": {"filePath": f"src/pkg/module_{n}.py"}}))
    dashboard = prepare_dashboard(settings, project, "direct", find_lan_address=lambda: None)
    return dashboard, handle


async def timed(request: Callable[[], Awaitable[httpx.Response]], count: int) -> tuple[list[float], int]:
    """Latencies in ms of `count` sequential requests, and the last body size."""
    latencies, size = [], 0
    for _ in range(count):
        start = time.perf_counter()
        response = await request()
        latencies.append((time.perf_counter() - start) * 1000)
        response.raise_for_status()
        size = len(response.content)
    return latencies, size


def summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"median {statistics.median(ordered):7.3f} ms   p95 {p95:7.3f} ms"


async def sse_latency(client: httpx.AsyncClient, handle: RunHandle) -> tuple[list[float], list[float], list[float]]:
    """(time until every client had an event, per-client delivery times, bus emit times) in ms."""
    arrivals: dict[int, list[float]] = {}
    all_in: dict[int, asyncio.Event] = {}
    ready = asyncio.Barrier(SSE_CLIENTS + 1)

    async def listen() -> None:
        url = f"/api/events?run={handle.run_id}&after={handle.bus.seq}"
        async with client.stream("GET", url) as response:
            lines = response.aiter_lines()
            async for line in lines:
                if line.startswith("event: hello"):
                    break
            await ready.wait()
            async for line in lines:
                if line.startswith("id: "):
                    seq = int(line[4:])
                    arrivals.setdefault(seq, []).append(time.perf_counter())
                    if len(arrivals[seq]) == SSE_CLIENTS:
                        all_in[seq].set()
                    if seq >= last_seq:
                        return

    last_seq = handle.bus.seq + SSE_EVENTS
    for seq in range(handle.bus.seq + 1, last_seq + 1):
        all_in[seq] = asyncio.Event()
    listeners = [asyncio.create_task(listen()) for _ in range(SSE_CLIENTS)]
    await ready.wait()
    everyone: list[float] = []
    each: list[float] = []
    emit_cost: list[float] = []
    for _ in range(SSE_EVENTS):
        sent = time.perf_counter()
        event = handle.bus.emit(RunEvent("tool", "▸ Run pytest -q", "tool", ITERATIONS, {"tool": "bash"}))
        emit_cost.append((time.perf_counter() - sent) * 1000)
        await all_in[event.seq].wait()
        everyone.append((max(arrivals[event.seq]) - sent) * 1000)
        each.extend((arrival - sent) * 1000 for arrival in arrivals[event.seq])
    await asyncio.gather(*listeners)
    return everyone, each, emit_cost


async def emit_cost_alone(handle: RunHandle) -> list[float]:
    costs = []
    for _ in range(SSE_EVENTS):
        start = time.perf_counter()
        handle.bus.emit(RunEvent("tool", "▸ Run pytest -q", "tool", ITERATIONS, {"tool": "bash"}))
        costs.append((time.perf_counter() - start) * 1000)
    return costs


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kilo-loop-bench-") as scratch:
        dashboard, handle = long_run(make_project(Path(scratch) / "repo"))
        await dashboard.start()
        dashboard.controller.adopt(handle)
        base = f"http://127.0.0.1:{dashboard.binding.port}"
        limits = httpx.Limits(max_connections=SSE_CLIENTS + 10)
        async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
            await timed(lambda: client.get("/favicon.ico"), 20)  # warm up
            floor, floor_size = await timed(lambda: client.get("/static/favicon.svg"), REQUESTS)
            warm, state_size = await timed(lambda: client.get("/api/state"), REQUESTS)

            async def changed_state() -> httpx.Response:
                handle.bus.emit(RunEvent("text", "progress", "info", ITERATIONS))  # invalidates the cached view
                return await client.get("/api/state")

            cold, _ = await timed(changed_state, REQUESTS // 2)
            alone = await emit_cost_alone(handle)
            everyone, each, emit_cost = await sse_latency(client, handle)
        await dashboard.stop()

    floor_ms = statistics.median(floor)
    print(f"run: {ITERATIONS} iterations, {LOG_LINES}+ log lines; {REQUESTS} requests per figure")
    print(f"floor  GET /static/favicon.svg ({floor_size} B)       {summary(floor)}")
    print(f"       GET /api/state, unchanged state             {summary(warm)}   "
          f"x{statistics.median(warm) / floor_ms:5.2f} floor")
    print(f"       GET /api/state, state changed before each   {summary(cold)}   "
          f"x{statistics.median(cold) / floor_ms:5.2f} floor")
    print(f"       /api/state size: {state_size / 1024:.1f} KB (budget 256 KB) "
          f"for a {ITERATIONS}-iteration run")
    print(f"SSE    {SSE_CLIENTS} clients, {SSE_EVENTS} events")
    print(f"       delivery to one client                      {summary(each)}   "
          f"x{statistics.median(each) / floor_ms:5.2f} floor")
    print(f"       delivery to all {SSE_CLIENTS} clients                 {summary(everyone)}   "
          f"x{statistics.median(everyone) / floor_ms:5.2f} floor")
    print(f"       bus.emit with {SSE_CLIENTS} clients {statistics.median(emit_cost) * 1000:7.1f} us   "
          f"without {statistics.median(alone) * 1000:7.1f} us   "
          f"x{statistics.median(emit_cost) / statistics.median(alone):5.2f}")


if __name__ == "__main__":
    asyncio.run(main())
