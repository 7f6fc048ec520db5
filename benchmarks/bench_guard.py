"""Guard decisions per second over the whole dcg corpus, against a floor measured in the same run:
a bare `shlex.split` of the same commands. Run by hand:

    PYTHONPATH=src .venv/bin/python benchmarks/bench_guard.py [--rounds N]
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

from kilo_loop.safety.guard import Guard

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpora" / "dcg"


def corpus_commands() -> list[str]:
    commands: list[str] = []
    for path in sorted(CORPUS.rglob("*.toml")):
        for case in tomllib.loads(path.read_text(encoding="utf-8")).get("case", []):
            if isinstance(case.get("command"), str):
                commands.append(case["command"])
    return commands


def _shlex_floor(command: str) -> object:
    try:
        return shlex.split(command)
    except ValueError:
        return None


def per_second(commands: list[str], rounds: int, decide: Callable[[str], object]) -> float:
    """Best of `rounds` passes over all commands, as commands per second."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for command in commands:
            decide(command)
        best = min(best, time.perf_counter() - start)
    return len(commands) / best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}", file=sys.stderr)
        return 2
    commands = corpus_commands()
    guard = Guard()
    guard_rate = per_second(commands, args.rounds, guard.check_command)
    floor_rate = per_second(commands, args.rounds, _shlex_floor)
    worst = max(commands, key=len)
    start = time.perf_counter()
    guard.check_command(worst)
    longest_ms = (time.perf_counter() - start) * 1000
    print(f"commands: {len(commands)} (dcg corpus), best of {args.rounds} rounds")
    print(f"guard decisions/s:  {guard_rate:10.0f}")
    print(f"shlex.split/s:      {floor_rate:10.0f}  (floor)")
    print(f"ratio floor/guard:  {floor_rate / guard_rate:10.1f}x slower than a bare shlex.split")
    print(f"longest command ({len(worst)} chars): {longest_ms:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
