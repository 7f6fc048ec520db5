"""The guard as a pre-tool hook: what one Bash call pays before it runs (Claude Code PreToolUse,
Codex PreToolUse, Gemini CLI BeforeTool all spawn the hook once per call).

Measured side by side in one run, each spawned `--runs` times with the same hook JSON on stdin:
- floor: `python -c pass` (the interpreter's own start-up);
- `python -c "import kilo_loop.safety.guard"` (the guard's own import: the part of the hook's cost
  that belongs to the guard, not to the hook entry);
- `python -m kilo_loop.agent.hook --rules <file>` (what the loop installs);
- `python -m kilo_loop guard hook` (the public command, for comparison);
for an allowed command and a refused one (the refusal is data fed on stdin, never run).
Prints the median wall time of each, the hook's ratio to the floor, and whether the hook stays
within the 100 ms target; exits 1 when it does not. Run by hand:

    PYTHONPATH=src .venv/bin/python benchmarks/bench_hook.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 100.0
ALLOWED = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls -la src"},
           "cwd": "/tmp"}
REFUSED = {"hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": "git push --force origin main"}, "cwd": "/tmp"}


def median_ms(command: list[str], stdin: bytes, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, input=stdin, capture_output=True, check=False)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "guard-rules.json"
        rules.write_text(json.dumps({"deny": [], "allow": []}), encoding="utf-8")
        commands = {
            "floor: python -c pass": [python, "-c", "pass"],
            "guard import": [python, "-c", "import kilo_loop.safety.guard"],
            "hook: -m kilo_loop.agent.hook": [python, "-m", "kilo_loop.agent.hook", "--rules", str(rules)],
            "cli: -m kilo_loop guard hook": [python, "-m", "kilo_loop", "guard", "hook"],
        }
        rows = []
        for label, payload in (("allowed", ALLOWED), ("refused", REFUSED)):
            stdin = json.dumps(payload).encode()
            figures = {name: median_ms(command, stdin, args.runs) for name, command in commands.items()}
            rows.append((label, figures))
    floor_name, guard_name, hook_name, cli_name = list(commands)
    ok = True
    print(f"{'call':<9} {'floor ms':>9} {'guard ms':>9} {'hook ms':>9} {'hook/floor':>11} {'hook-guard':>11} "
          f"{'cli ms':>9} {'cli/floor':>10} {'≤100 ms':>8}")
    for label, figures in rows:
        floor, guard, hook, cli = (figures[name] for name in (floor_name, guard_name, hook_name, cli_name))
        within = hook <= TARGET_MS
        ok = ok and within
        print(f"{label:<9} {floor:>9.1f} {guard:>9.1f} {hook:>9.1f} {hook / floor:>10.1f}x {hook - guard:>9.1f}ms "
              f"{cli:>9.1f} {cli / floor:>9.1f}x {'yes' if within else 'NO':>8}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
