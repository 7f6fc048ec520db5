"""Note delivery under `--transport serve`: the API call (`POST /api/notes`) to the model request that carries
the note, with the real kilo against the scripted provider.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_notes.py [--notes 20] [--step 0.25] [--runtime kilo]

The loop (`python -m kilo_loop`, dashboard on a free port) runs one long iteration: the scripted model
answers every request at once with one `sleep STEP` bash call, so the session makes a model request
every STEP seconds plus the CLI's own overhead. The benchmark sends NOTES notes through the run's API at
random moments (the same way `kilo-loop note` does, with the token from the run's api.json) and times each
from the moment the POST is sent until the provider receives the first request holding the note's text.

The floor, measured in the same run: the session's step period (the median gap between two consecutive
model requests): a note queued on the session waits for the step in flight, so about half a step on average
and one step at worst is the least any delivery that keeps the session's work can take.

Target: p95 ≤ 1 s. Exits 1 when it is missed. Everything happens in a temporary directory that is removed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_transport import make_project  # noqa: E402 — after the path
from tests.e2e.fake_provider import FakeProvider, RecordedRequest, call, provider_env, say  # noqa: E402

TOOLS_BIN = REPO / ".tools" / "node_modules" / ".bin"
TARGET_P95_S = 1.0


class TimedProvider(FakeProvider):
    """The scripted provider, noting when each request arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[tuple[float, RecordedRequest]] = []

    def _record(self, method: str, path: str, body: dict[str, Any] | None,
                authorization: str = "") -> tuple[RecordedRequest, str]:
        record, completion = super()._record(method, path, body, authorization)
        if record.is_chat and body and body.get("tools"):
            self.arrived.append((time.monotonic(), record))
        return record, completion


def _wait_for(path_glob: Path, pattern: str, timeout: float) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(path_glob.glob(pattern))
        if found:
            return found[0]
        time.sleep(0.05)
    raise SystemExit(f"no {pattern} within {timeout} s")


def _carried_at(provider: TimedProvider, text: str, after: float, timeout: float = 30.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for at, record in list(provider.arrived):
            if at >= after and text in record.all_text:
                return at
        time.sleep(0.002)
    raise SystemExit(f"the note {text!r} never reached the model within {timeout} s")


def measure(runtime: str, notes: int, step: float) -> tuple[list[float], float]:
    with tempfile.TemporaryDirectory(prefix="bench-notes-") as tmp, TimedProvider() as provider:
        root = Path(tmp)
        project = make_project(root)
        home = root / "home"
        home.mkdir()
        steps = int((notes * 1.5 + 10) * 1.5 / step) + 20
        provider.add_turns(*[call("bash", {"command": f"sleep {step}", "description": "work"})
                             for _ in range(steps)], say("done"))
        env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
        env.update(provider_env(provider.port, runtime, home, inline=False))  # type: ignore[arg-type]
        env.update({"KILO_BIN": str(TOOLS_BIN / runtime), "PYTHONPATH": str(REPO / "src"), "TMPDIR": str(root)})
        command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--dashboard", "--port", "0",
                   "--goal-text", "Work until told", "-n", "1", "--hitl", "off", "--transport", "serve", "--quiet"]
        process = subprocess.Popen(command, cwd=project, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        latencies: list[float] = []
        try:
            api = json.loads(_wait_for(project / ".kilocode-loop" / "runs", "*/api.json", 120).read_text())
            client = httpx.Client(base_url=api["url"], headers={"authorization": f"Bearer {api['token']}"},
                                  timeout=30)
            while len(provider.arrived) < 3:  # the session is working
                time.sleep(0.05)
            rng = random.Random(7)
            for index in range(notes):
                time.sleep(rng.uniform(0.2, 0.2 + 2 * step))
                text = f"bench note {index} {uuid.uuid4().hex}"
                sent = time.monotonic()
                response = client.post("api/notes", json={"text": text})
                if response.status_code != 201:
                    raise SystemExit(f"note {index} refused: {response.status_code} {response.text}")
                answered = time.monotonic() - sent
                latencies.append(_carried_at(provider, text, sent) - sent)
                print(f"note {index + 1}/{notes}: {latencies[-1] * 1000:.0f} ms (the API answered in "
                      f"{answered * 1000:.0f} ms)", flush=True)
            client.post("api/control", json={"action": "stop"})
            client.close()
            process.wait(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
        times = [at for at, _record in provider.arrived]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        return latencies, statistics.median(gaps)


# ------------------------------------------------------------------ queue against abort-and-continue
NOTE_TEXT = "operator note: use the helper in utils/"


async def _one_way(runtime: str, way: str) -> dict[str, Any]:
    """One session on a bare `<cli> serve`: its model step is in flight (held) when the note arrives.
    `queue`: the note is sent with prompt_async while the session is busy; `abort`: the turn is aborted
    (POST /session/{id}/abort) and the note sent as a new prompt with "continue". Then: did the in-flight
    step's work (its tool call writes kept.txt) survive, and when did a model request carry the note?"""
    import asyncio

    from tests.e2e.fake_provider import hold

    from kilo_loop.agent.serve.client import ServerClient
    from kilo_loop.agent.serve.process import AgentServer, ServerSpec

    with tempfile.TemporaryDirectory(prefix=f"bench-notes-{way}-") as tmp, TimedProvider() as provider:
        root = Path(tmp)
        project = make_project(root)
        home = root / "home"
        home.mkdir()
        provider.add_turns(hold(60, then=call("bash", {"command": "echo kept > kept.txt", "description": "work"})),
                           say("step done"), say("note read"), say("note read"))
        env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
        env.update(provider_env(provider.port, runtime, home, inline=True,  # type: ignore[arg-type]
                                permission={"bash": "allow", "edit": "allow"}))
        env.update({"TMPDIR": str(root), "PWD": str(project)})
        server = AgentServer(ServerSpec(str(TOOLS_BIN / runtime), runtime, project, env), root / "server.pid")
        client = ServerClient(server.base_url, server.username, server.password)
        await server.start(client.healthy)
        try:
            session = await client.create_session("bench")
            await client.prompt(session, "do the work")
            while not provider.held:
                await asyncio.sleep(0.01)
            sent = time.monotonic()
            if way == "queue":
                await client.prompt(session, NOTE_TEXT)
                provider.release()
            else:
                await client.abort(session)
                provider.release()
                await client.prompt(session, NOTE_TEXT + "\n\nContinue the work you were doing.")
            deadline = time.monotonic() + 60
            carried = None
            while time.monotonic() < deadline:
                carried = next((at for at, r in provider.arrived if at >= sent and NOTE_TEXT in r.all_text), None)
                if carried is not None and not await client.session_busy(session):
                    break
                await asyncio.sleep(0.05)
            requests = len(provider.arrived)
        finally:
            await client.aclose()
            await server.stop()
        return {"way": way, "kept": (project / "kept.txt").exists(), "requests": requests,
                "latency_s": None if carried is None else carried - sent}


def compare(runtime: str) -> None:
    import asyncio

    for way in ("queue", "abort"):
        result = asyncio.run(_one_way(runtime, way))
        latency = "never" if result["latency_s"] is None else f"{result['latency_s'] * 1000:.0f} ms"
        print(f"{runtime} {way:<5}: the in-flight step's work kept: {'yes' if result['kept'] else 'NO'}; "
              f"note carried after {latency}; model requests in all: {result['requests']}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=20)
    parser.add_argument("--step", type=float, default=0.25, help="seconds each scripted tool call sleeps")
    parser.add_argument("--runtime", choices=["kilo", "opencode"], default="kilo")
    parser.add_argument("--compare", action="store_true",
                        help="only compare queueing on the busy session with abort-and-continue")
    args = parser.parse_args()
    if args.compare:
        compare(args.runtime)
        return 0
    latencies, period = measure(args.runtime, args.notes, args.step)
    ordered = sorted(latencies)
    p50 = statistics.median(ordered)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    print(f"\n{args.runtime} serve, {len(ordered)} notes: API call -> the model request carrying it: "
          f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms")
    print(f"floor (the session's step period, median gap between model requests): {period * 1000:.0f} ms; "
          f"p95 / step period = {p95 / period:.2f}")
    ok = p95 <= TARGET_P95_S
    print(f"target p95 ≤ {TARGET_P95_S:.1f} s: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
