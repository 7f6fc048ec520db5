"""Guard decisions per second (tree-sitter-bash analysis + rule packs) over the dcg corpus and our
adversarial corpus, against floors measured in the same run: a bare `shlex.split` of the same
commands, and — when bashlex is still installed — a bare `bashlex.parse` (the old parser alone)
and the whole bashlex-based guard as it was at git ref `--old-ref` (default 1217d5e^, the last
commit before tree-sitter; loaded from git history into private modules). Target: at least the
~3,000 decisions/s the bashlex guard gave, i.e. a ratio >= 1 against the old guard in this run.

    .venv/bin/python benchmarks/bench_guard.py [--rounds N] [--old-ref REF]

The corpora are data: commands go to Guard.check_command, never to a shell.
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import subprocess
import sys
import time
import tomllib
import types
from collections.abc import Callable
from pathlib import Path

from kilo_loop.guard.runtime import Guard
from kilo_loop.guard.shell.parse import parse

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT / "tests" / "corpora"


def corpus_commands() -> list[str]:
    commands: list[str] = []
    for path in sorted((CORPORA / "dcg").rglob("*.toml")):
        for case in tomllib.loads(path.read_text(encoding="utf-8")).get("case", []):
            if isinstance(case.get("command"), str):
                commands.append(case["command"])
    adversarial = tomllib.loads((CORPORA / "guard_adversarial.toml").read_text(encoding="utf-8"))
    commands += [c["command"] for c in adversarial["deny"] + adversarial["allow"] if "{link}" not in c["command"]]
    return commands


def _shlex_floor(command: str) -> object:
    try:
        return shlex.split(command)
    except ValueError:
        return None


def _bashlex_parse() -> Callable[[str], object] | None:
    if importlib.util.find_spec("bashlex") is None:
        return None
    import bashlex

    def run(command: str) -> object:
        try:
            return bashlex.parse(command)
        except Exception:  # noqa: BLE001 - bashlex raises several kinds on what it cannot parse
            return None
    return run


def _old_guard(ref: str) -> Callable[[str], object] | None:
    """The bashlex guard's check_command at `ref`, or None (no bashlex, no git, no such ref)."""
    if importlib.util.find_spec("bashlex") is None:
        return None
    sources = {}
    for name in ("shell_words", "guard"):
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:src/kilo_loop/safety/{name}.py"],
                               capture_output=True, text=True, check=False)
        if shown.returncode != 0:
            return None
        sources[name] = shown.stdout
    words = types.ModuleType("old_shell_words")
    sys.modules["old_shell_words"] = words
    exec(compile(sources["shell_words"], "old_shell_words.py", "exec"), words.__dict__)  # our own history, from git
    guard = types.ModuleType("old_guard")
    sys.modules["old_guard"] = guard
    code = sources["guard"].replace("from kilo_loop.safety.shell_words import", "from old_shell_words import")
    exec(compile(code, "old_guard.py", "exec"), guard.__dict__)  # our own history, from git
    old = guard.Guard()
    return lambda command: old.check_command(command, "/repo")


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
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--old-ref", default="1217d5e^", help="git ref of the bashlex guard to compare with")
    args = parser.parse_args()
    commands = corpus_commands()
    guard = Guard()
    guard_rate = per_second(commands, args.rounds, lambda c: guard.check_command(c, "/repo"))
    parse_rate = per_second(commands, args.rounds, lambda c: parse(c.encode("utf-8", "surrogatepass")))
    floor_rate = per_second(commands, args.rounds, _shlex_floor)
    bashlex_run = _bashlex_parse()
    worst = max(commands, key=len)
    start = time.perf_counter()
    guard.check_command(worst, "/repo")
    longest_ms = (time.perf_counter() - start) * 1000
    print(f"commands: {len(commands)} (dcg + adversarial corpora), best of {args.rounds} rounds")
    print(f"guard decisions/s (tree-sitter): {guard_rate:10.0f}   target >= 3000")
    print(f"tree-sitter parse only/s:        {parse_rate:10.0f}")
    print(f"shlex.split/s:                   {floor_rate:10.0f}  (floor)")
    print(f"guard vs shlex.split:            {guard_rate / floor_rate:10.2f}x")
    if bashlex_run is not None:
        bashlex_rate = per_second(commands, args.rounds, bashlex_run)
        print(f"bashlex.parse only/s:            {bashlex_rate:10.0f}  (the old parser alone, no rules)")
        print(f"guard vs bashlex.parse:          {guard_rate / bashlex_rate:10.2f}x")
    else:
        print("bashlex is not installed: no bashlex figure in this run")
    old = _old_guard(args.old_ref)
    ratio = None
    if old is not None:
        old_rate = per_second(commands, args.rounds, old)
        ratio = guard_rate / old_rate
        print(f"old bashlex guard ({args.old_ref})/s:  {old_rate:10.0f}")
        print(f"guard vs old bashlex guard:      {ratio:10.2f}x   target >= 1")
    print(f"longest command ({len(worst)} chars): {longest_ms:.2f} ms")
    return 0 if (ratio if ratio is not None else guard_rate / 3000) >= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
