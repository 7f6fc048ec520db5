"""Start-up of the commands a person or a hook runs often, against `python -c pass` in the same run.

    PYTHONPATH=src python benchmarks/bench_startup.py [--repeat 15]

Each command is a fresh interpreter of the same Python (the one running this script): the floor
`python -c pass`, then `python -m kilo_loop --help`, `--version`, `guard check "ls"` and `guard hook`
fed a PreToolUse JSON payload for the benign `ls` on stdin (what Claude Code runs before every Bash
call). The commands are run round-robin, `--repeat` times each, so a busy machine slows all of them
alike; the table shows the median wall time and its ratio to the floor's (the target), and the
same for CPU time (user + system, steadier on a shared machine). (No peak RSS: a child
spawned from this process reports this process's own RSS as its ru_maxrss on Linux.)
Target (issue 8 item 8): `--help` and `guard check` at most 6x `python -c pass`.
The package's sources are byte-compiled first (`compileall`, as pip does when it installs a
package), so a session with PYTHONDONTWRITEBYTECODE=1 does not time Python compiling them.
`--importtime CMD…` prints the 15 costliest imports of one command (`python -X importtime`).
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench_loop import BENCH_DIR, Row, child_env, print_table, run_child

TARGET = 6.0
_HOOK_PAYLOAD = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]
    target: float | None = None
    stdin: bytes = b""


@dataclass
class Samples:
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def cases(cwd: Path) -> list[Case]:
    hook = json.dumps({**_HOOK_PAYLOAD, "cwd": str(cwd)}).encode()
    return [
        Case("python -c pass (floor)", ("-c", "pass")),
        Case("kilo-loop --help", ("-m", "kilo_loop", "--help"), TARGET),
        Case('kilo-loop guard check "ls"', ("-m", "kilo_loop", "guard", "check", "ls"), TARGET),
        Case("kilo-loop guard hook (stdin JSON)", ("-m", "kilo_loop", "guard", "hook"), None, hook),
        Case("kilo-loop --version", ("-m", "kilo_loop", "--version")),
    ]


def measure(all_cases: Sequence[Case], repeat: int, cwd: Path) -> list[Samples]:
    samples = [Samples() for _ in all_cases]
    env = child_env()
    for _ in range(repeat):
        for case, sample in zip(all_cases, samples, strict=True):
            run = run_child([sys.executable, *case.args], env, cwd=cwd, stdin=case.stdin)
            if run.exit_code != 0:
                raise SystemExit(f"{case.name} exited {run.exit_code}:\n{run.stderr[-2000:]}")
            sample.seconds.append(run.seconds)
            sample.cpu.append(run.cpu_seconds)
    return samples


def rows(all_cases: Sequence[Case], samples: Sequence[Samples]) -> list[Row]:
    floor = statistics.median(samples[0].seconds)
    floor_cpu = statistics.median(samples[0].cpu)
    table: list[Row] = []
    for case, sample in zip(all_cases, samples, strict=True):
        median, cpu = statistics.median(sample.seconds), statistics.median(sample.cpu)
        ratio = median / floor
        table.append(Row(case.name, f"{median * 1000:.0f} ms (cpu {cpu * 1000:.0f})",
                         f"{floor * 1000:.0f} ms (cpu {floor_cpu * 1000:.0f})",
                         f"{ratio:.1f}x (cpu {cpu / floor_cpu:.1f}x)", f"<= {case.target:.0f}x" if case.target else "",
                         None if case.target is None else ratio <= case.target))
    return table


def importtime(args: Sequence[str], cwd: Path, top: int = 15) -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "kilo_loop", *args], cwd=cwd,
                          env=child_env(), capture_output=True, text=True, check=False)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("import time:") and "|" in line]

    def cumulative(line: str) -> int:
        value = line.split("|")[1].strip()
        return int(value) if value.isdigit() else 0

    print(f"--- top {top} imports of `kilo-loop {' '.join(args)}` by cumulative µs")
    print("\n".join(sorted(lines, key=cumulative, reverse=True)[:top]))


def compile_sources() -> None:
    """Byte-code for every module of the package measured (this checkout's src/), where pip puts it."""
    compileall.compile_dir(str(BENCH_DIR.parent / "src" / "kilo_loop"), quiet=2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15, help="runs of each command (median)")
    parser.add_argument("--importtime", nargs="+", metavar="ARG", help="profile the imports of one command")
    args = parser.parse_args(argv)
    compile_sources()
    with tempfile.TemporaryDirectory(prefix="kilo-loop-bench-startup-") as name:
        cwd = Path(name)  # not a repository, no config: the commands' bare cost
        if args.importtime:
            importtime(args.importtime, cwd)
            return 0
        all_cases = cases(cwd)
        print(f"running {len(all_cases)} commands round-robin, {args.repeat} times each…", flush=True)
        table = rows(all_cases, measure(all_cases, args.repeat, cwd))
    print_table(table)
    return 0 if all(row.ok is not False for row in table) else 1


if __name__ == "__main__":
    sys.exit(main())
