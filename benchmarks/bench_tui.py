"""`kilo-loop watch` following a run that emits 100 events/s: the TUI's resident memory and CPU share.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_tui.py [--rate 100] [--seconds 20]

A stand-in dashboard on 127.0.0.1 (uvicorn, in this process) serves `/api/state` and `/api/events` the way a
run's dashboard does: per event one `log` frame (a tool line, ~150 bytes) and one `state` frame (the state
header with its newest iterations, ~2 KB), RATE events a second. `kilo-loop watch URL` runs in a real terminal
(a private tmux server, 80x24) and is measured from /proc after a warm-up: peak VmRSS (VmHWM) and the CPU
time it used over SECONDS of wall time.

Floor, same run: the same TUI attached to the same server with no events (its clock ticks, nothing
arrives). Targets: ≤ 60 MB RSS, ≤ 5 % of one core. Exits 1 when one is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

REPO = Path(__file__).resolve().parents[1]
STAGES = [{"id": f"s{n}", "title": f"Stage number {n}", "status": "pending", "verify": None} for n in range(1, 9)]


def _state(seq: int) -> dict[str, Any]:
    return {"runId": "20261202-000000-0001", "status": "running", "goalTitle": "Benchmark run", "stages": STAGES,
            "currentStageId": "s2", "maxIterations": 100, "iteration": 2, "startedAt": "2026-12-02T12:00:00.000Z",
            "totals": {"tokens": seq * 100, "cost": seq / 1000}, "seq": seq, "notes": [], "pendingQuestions": [],
            "iterations": [{"iteration": 1, "outcome": "ok", "durationMs": 60_000},
                           {"iteration": 2, "outcome": "running", "startedAt": "2026-12-02T12:01:00.000Z"}],
            "logTail": []}


def _app(rate: float) -> Starlette:
    async def state(_: Request) -> JSONResponse:
        return JSONResponse(_state(0))

    async def events(_: Request) -> StreamingResponse:
        async def stream() -> AsyncIterator[bytes]:
            yield b'retry: 1000\n\nevent: hello\ndata: {"seq": 0}\n\n'
            seq, started = 0, time.monotonic()
            while True:
                if rate <= 0:
                    await asyncio.sleep(15)
                    yield b": keepalive\n\n"
                    continue
                seq += 1
                log = {"seq": seq, "ts": "2026-12-02T12:01:02.000Z", "type": "tool", "level": "info",
                       "message": f"▸ Run pytest -q tests/unit/test_module_{seq % 97}.py (exit 0, {seq} lines)",
                       "data": {"status": "completed"}}
                head = {k: v for k, v in _state(seq).items() if k != "logTail"}
                yield (f"id: {seq}\nevent: log\ndata: ".encode() + orjson.dumps(log) + b"\n\n"
                       + b"event: state\ndata: " + orjson.dumps(head) + b"\n\n")
                await asyncio.sleep(max(0.0, started + seq / rate - time.monotonic()))

        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(routes=[Route("/api/state", state), Route("/api/events", events),
                             Route("/api/runs/{run_id}/receipts", lambda _: JSONResponse({"budget": None}))])


def _serve(rate: float) -> tuple[str, uvicorn.Server]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(_app(rate), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the stand-in dashboard did not start")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}/?token=bench", server


def _proc(pid: int) -> tuple[float, int]:
    """(CPU seconds used, peak RSS in KB) of one process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmHWM:"))
    return cpu, hwm


def measure(rate: float, seconds: float, warmup: float) -> tuple[float, float]:
    """(CPU share of one core, peak RSS MB) of `kilo-loop watch` following a stand-in run at `rate` events/s."""
    url, server = _serve(rate)
    socket_name = f"kilo-loop-bench-{uuid.uuid4().hex[:10]}"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "TERM": "xterm-256color"}
    tmux = ["tmux", "-L", socket_name, "-f", "/dev/null"]
    try:
        subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "24", sys.executable, "-m", "kilo_loop",
                        "watch", url], check=True, env=env)
        pid = int(subprocess.run([*tmux, "display-message", "-p", "#{pane_pid}"], check=True, capture_output=True,
                                 text=True).stdout)
        time.sleep(warmup)  # start-up and the first screen are not what is measured
        cpu0, _ = _proc(pid)
        start = time.monotonic()
        time.sleep(seconds)
        cpu1, hwm = _proc(pid)
        wall = time.monotonic() - start
        screen = subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout
        if rate > 0 and "Run pytest" not in screen:
            raise SystemExit(f"the TUI shows no event:\n{screen}")
        return (cpu1 - cpu0) / wall, hwm / 1024
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, check=False)
        server.should_exit = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=100.0, help="events per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured window")
    parser.add_argument("--warmup", type=float, default=5.0)
    args = parser.parse_args()
    idle_cpu, idle_rss = measure(0, args.seconds, args.warmup)
    cpu, rss = measure(args.rate, args.seconds, args.warmup)
    print(f"floor (attached, no events): {idle_cpu * 100:5.2f} % of a core, peak RSS {idle_rss:5.1f} MB")
    print(f"{args.rate:.0f} events/s:            {cpu * 100:5.2f} % of a core, peak RSS {rss:5.1f} MB "
          f"(target ≤ 5 %, ≤ 60 MB)")
    sys.exit(0 if cpu <= 0.05 and rss <= 60 else 1)


if __name__ == "__main__":
    main()
