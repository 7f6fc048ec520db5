"""The serve transport against the run transport: the same scripted 10-iteration goal, the real CLI.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_transport.py [--iterations 10]
        [--runtime kilo|opencode|both]

For each runtime (kilo, opencode) the loop (`python -m kilo_loop`) runs the same goal twice against
the scripted provider of tests/e2e/fake_provider.py on 127.0.0.1: once with `--transport run`
(the floor: one `<cli> run` process per iteration) and once with `--transport serve` (one warm
`<cli> serve` for the whole run). Each iteration the scripted model runs one bash command and
answers; under serve that command also goes through the loop's permission broker.

Printed per runtime and transport:
- wall time per iteration: the median of the iterations' own durations (reports), and the whole
  run's wall time divided by the iteration count (this one includes the server's start);
- peak RSS of the agent side: the sum over every process below the loop (the CLI, the server,
  their shells), polled from /proc every 50 ms.

Targets: serve's median iteration at most 1/3 of run's; serve's agent-side peak RSS at most
that of one run-transport CLI process (run's peak, which is one CLI at a time) x 1.25.
Exits 1 when a target is missed. Everything happens in a temporary directory that is removed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.fake_provider import FakeProvider, call, provider_env, say  # noqa: E402 — after the path

TOOLS_BIN = REPO / ".tools" / "node_modules" / ".bin"
WALL_TARGET = 1 / 3
RSS_TARGET = 1.25
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Measure:
    runtime: str
    transport: str
    median_iteration_s: float
    run_wall_per_iteration_s: float
    peak_rss_mb: float
    iterations: int


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def _rss_bytes(pid: int) -> int:
    try:
        return int((Path(f"/proc/{pid}/statm")).read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def agent_side_rss(loop_pid: int) -> int:
    """RSS summed over every descendant of the loop process (not the loop itself)."""
    tree, total = _children(), 0
    todo = list(tree.get(loop_pid, []))
    while todo:
        pid = todo.pop()
        total += _rss_bytes(pid)
        todo += tree.get(pid, [])
    return total


class PeakSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self._done = pid, 0, threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.05):
            self.peak = max(self.peak, agent_side_rss(self.pid))

    def stop(self) -> None:
        self._done.set()
        self.join()


def make_project(root: Path) -> Path:
    project = root / "project"
    project.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.name", "Bench"],
                 ["config", "user.email", "bench@example.invalid"]):
        subprocess.run(["git", *args], cwd=project, check=True)
    (project / "README.md").write_text("# bench\n")
    subprocess.run(["git", "add", "README.md"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=project, check=True)
    return project


def measure(runtime: str, transport: str, iterations: int) -> Measure:
    with tempfile.TemporaryDirectory(prefix="bench-transport-") as tmp, FakeProvider() as provider:
        root = Path(tmp)
        project = make_project(root)
        home = root / "home"
        home.mkdir()
        for i in range(1, iterations + 1):
            provider.add_turns(call("bash", {"command": f"echo {i} >> log.txt", "description": "log"}),
                               say(f"iteration {i} logged"), marker=f"Iteration {i} of ")
        env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
        env.update(provider_env(provider.port, runtime, home, inline=False))  # type: ignore[arg-type]
        env.update({"KILO_BIN": str(TOOLS_BIN / runtime), "PYTHONPATH": str(REPO / "src"),
                    "TMPDIR": str(root), "KILO_LOOP_TRANSPORT": transport})
        command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard",
                   "--goal-text", "Log one line per iteration", "-n", str(iterations), "--hitl", "off",
                   "--max-stale-iterations", str(iterations + 1), "--quiet"]
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=project, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sampler = PeakSampler(process.pid)
        sampler.start()
        out, err = process.communicate(timeout=1800)
        wall = time.monotonic() - started
        sampler.stop()
        states = list((project / ".kilocode-loop" / "runs").glob("*/state.json"))
        if len(states) != 1:
            raise SystemExit(f"{runtime}/{transport}: no run state (exit {process.returncode})\n{out[-3000:]}\n"
                             f"{err[-2000:]}")
        state = json.loads(states[0].read_text())
        durations = [i["durationMs"] / 1000 for i in state["iterations"] if i.get("outcome") == "ok"]
        if len(durations) != iterations:
            raise SystemExit(f"{runtime}/{transport}: {len(durations)} of {iterations} iterations ok "
                             f"(exit {process.returncode})\n{out[-3000:]}\n{err[-2000:]}")
        return Measure(runtime, transport, statistics.median(durations), wall / iterations,
                       sampler.peak / 2**20, iterations)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--runtime", choices=["kilo", "opencode", "both"], default="both")
    args = parser.parse_args()
    runtimes = ["kilo", "opencode"] if args.runtime == "both" else [args.runtime]
    ok = True
    rows = []
    for runtime in runtimes:
        floor = measure(runtime, "run", args.iterations)
        print(f"{runtime} run:   {floor.median_iteration_s:.2f} s/iteration (median), "
              f"{floor.run_wall_per_iteration_s:.2f} s/iteration (whole run), peak agent RSS "
              f"{floor.peak_rss_mb:.0f} MB", flush=True)
        serve = measure(runtime, "serve", args.iterations)
        print(f"{runtime} serve: {serve.median_iteration_s:.2f} s/iteration (median), "
              f"{serve.run_wall_per_iteration_s:.2f} s/iteration (whole run), peak agent RSS "
              f"{serve.peak_rss_mb:.0f} MB", flush=True)
        wall_ratio = serve.median_iteration_s / floor.median_iteration_s
        run_ratio = serve.run_wall_per_iteration_s / floor.run_wall_per_iteration_s
        rss_ratio = serve.peak_rss_mb / floor.peak_rss_mb
        wall_ok, rss_ok = wall_ratio <= WALL_TARGET, rss_ratio <= RSS_TARGET
        ok = ok and wall_ok and rss_ok
        rows.append((runtime, wall_ratio, run_ratio, rss_ratio, wall_ok, rss_ok))
    print("\nruntime   iteration serve/run (target ≤ 0.33)   whole run serve/run   peak RSS serve/run (≤ 1.25)")
    for runtime, wall_ratio, run_ratio, rss_ratio, wall_ok, rss_ok in rows:
        print(f"{runtime:<9} {wall_ratio:>6.2f} {'yes' if wall_ok else 'NO':<30} {run_ratio:>6.2f}"
              f"{'':<16}{rss_ratio:>6.2f} {'yes' if rss_ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
