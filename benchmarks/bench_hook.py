"""The guard as a pre-tool hook: what one Bash call pays before it runs (Claude Code PreToolUse,
Codex PreToolUse, Gemini CLI BeforeTool all spawn the hook once per call).

Measured side by side in one run, each spawned `--runs` times with the same hook JSON on stdin:
- floor: `python -c pass` (the interpreter's own start-up);
- `python -c "import kilo_loop.guard.runtime"` (the guard's own import: the part of the hook's cost
  that belongs to the guard, not to the hook entry);
- the hook command the loop installs (`kilo_loop.agent.hook.hook_command`: today
  `python -P -m kilo_loop.agent.hook --rules <file>`), split into argv and run without a shell;
- `python -m kilo_loop guard hook` (the public command, which also looks up the project's config);
for an allowed command and a refused one (the refusal is data fed on stdin, never run).
The commands run round-robin; each hook answer is checked (a broken hook would be fast too).
Prints the median wall time of each, the hook's ratio to the floor, and whether the installed
hook and `guard hook` both stay within the 100 ms target (exits 1 when they do not); then the
same in CPU time (user + system), which a loaded machine inflates less.
The package's sources are byte-compiled first (`compileall`, as pip does when it installs a
package): a session with PYTHONDONTWRITEBYTECODE=1 would otherwise time Python compiling the
guard's source on every call. Run by hand:

    PYTHONPATH=src .venv/bin/python benchmarks/bench_hook.py [--runs 20]
"""

from __future__ import annotations

import argparse
import compileall
import json
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import kilo_loop
from kilo_loop.agent.hook import hook_command, write_rules

TARGET_MS = 100.0
# The hook JSON a CLI sends (its "cwd" is added per run); the refused command is data on stdin, never run.
ALLOWED = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls -la src"}}
REFUSED = {"hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": "git push --force origin main"}}


def timed(command: list[str], stdin: bytes, cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    """Wall ms, CPU ms (user + system of the call and what it reaped) and the finished call."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, check=False, cwd=cwd)
    wall, after = (time.perf_counter() - started) * 1000, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return wall, cpu, done


def check_answer(name: str, label: str, done: subprocess.CompletedProcess[bytes]) -> None:
    """A broken hook is fast too: the hook must refuse the refused call and let the allowed one run."""
    if not name.startswith(("hook", "cli")):
        return
    refused = b"deny" in done.stdout
    if refused != (label == "refused") or done.returncode not in (0, 2):
        raise SystemExit(f"{name} answered {label!r} wrongly (exit {done.returncode}):\n"
                         f"{done.stdout.decode(errors='replace')}{done.stderr.decode(errors='replace')}")


Figures = dict[str, dict[str, float]]


def measure(commands: dict[str, list[str]], stdin: dict[str, bytes], runs: int, cwd: Path,
            ) -> tuple[Figures, Figures]:
    """Median wall and CPU ms per call kind and command; the commands run round-robin, so load bursts
    hit all alike."""
    walls: dict[str, dict[str, list[float]]] = {label: {name: [] for name in commands} for label in stdin}
    cpus: dict[str, dict[str, list[float]]] = {label: {name: [] for name in commands} for label in stdin}
    for _ in range(runs):
        for label, payload in stdin.items():
            for name, command in commands.items():
                wall, cpu, done = timed(command, payload, cwd)
                check_answer(name, label, done)
                walls[label][name].append(wall)
                cpus[label][name].append(cpu)

    def medians(samples: dict[str, dict[str, list[float]]]) -> Figures:
        return {label: {name: statistics.median(v) for name, v in by_name.items()} for label, by_name in samples.items()}

    return medians(walls), medians(cpus)


def compile_sources() -> None:
    """Byte-code for every module of the package, where an installed package has it."""
    compileall.compile_dir(str(Path(kilo_loop.__file__).parent), quiet=2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    python = sys.executable
    compile_sources()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)  # where the CLI starts the hook: the agent's working directory
        rules = write_rules(cwd / "run" / "guard-rules.json", [], [])
        commands = {
            "floor: python -c pass": [python, "-c", "pass"],
            "guard import": [python, "-c", "import kilo_loop.guard.runtime"],
            "hook: as installed": shlex.split(hook_command(rules, python)),
            "cli: -m kilo_loop guard hook": [python, "-m", "kilo_loop", "guard", "hook"],
        }
        stdin = {label: json.dumps({**payload, "cwd": str(cwd)}).encode()
                 for label, payload in (("allowed", ALLOWED), ("refused", REFUSED))}
        walls, cpus = measure(commands, stdin, args.runs, cwd)
    print(f"installed hook: {hook_command(Path('<run>/guard-rules.json'), 'python')}")
    ok = True
    for title, rows in (("wall", walls), ("cpu", cpus)):
        print(f"{title + ' ms':<13} {'floor':>7} {'guard':>7} {'hook':>7} {'hook/floor':>11} {'hook-guard':>11} "
              f"{'cli':>7} {'cli/floor':>10} {'≤100 ms' if title == 'wall' else '':>8}")
        for label, figures in rows.items():
            floor, guard, hook, cli = (figures[name] for name in commands)
            within = hook <= TARGET_MS and cli <= TARGET_MS
            verdict = ("yes" if within else "NO") if title == "wall" else ""
            ok = ok and (within or title != "wall")
            print(f"{label:<13} {floor:>7.1f} {guard:>7.1f} {hook:>7.1f} {hook / floor:>10.1f}x {hook - guard:>9.1f}ms "
                  f"{cli:>7.1f} {cli / floor:>9.1f}x {verdict:>8}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
