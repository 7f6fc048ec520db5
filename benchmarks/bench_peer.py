"""kilo-loop against a peer loop, ralphy, each spawning the same instant stub `opencode` per iteration.

    PYTHONPATH=src python benchmarks/bench_peer.py [--iterations 30] [--files 5000] [--ralphy PATH]

ralphy (npm `ralphy-cli` 4.7.2) is installed into a temporary prefix with `npm install`, as
scripts/install-agent-clis.sh installs the agent CLIs, unless `--ralphy` names a `ralphy` already
installed. Both tools drive a stub `opencode` executable (a POSIX shell script written here) that
appends a line to README.md, marks the prompt's current stage done in `.kilocode-loop/progress.json`
(kilo-loop's progress report; ralphy ticks its PRD itself) and prints a three-event
`opencode run --format json` stream. Each tool works through an N-task checklist on its own copy of
the same 5,000-file repository:

- `ralphy --opencode --prd PRD.md --fast --no-commit --max-iterations N`
- `python -m kilo_loop --goal PLAN.md -n N --no-confirm --no-dashboard --hitl off --quiet`, with
  KILO_BIN pointing at the stub, once with checkpoints and once with `--no-checkpoint`.

A tool's own cost per iteration = (wall - its start-up) / N - the stub's own cost (the stub run
directly, N times, in the same repository); the same in CPU time (the tool and every process it
reaped: the stub, git), which is steadier on a shared machine and is what the `ok` column judges.
Start-up: `ralphy --version`, and for kilo-loop the interpreter importing what a run imports.
Git floor: `git status` + `git diff HEAD` (as bench_loop). Targets (issue 8): kilo-loop with
--no-checkpoint at most 3x ralphy's own cost; with checkpoints at most the git floor plus that.
Where bubblewrap works, kilo-loop (checkpoints on) runs once more with `--sandbox off`: its own cost
with the jail at most 1.1x without (issue 23; the stub and every git call the agent makes run in the
jail, so this is the whole price of jailing an iteration).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_loop import ChildRun, Row, child_env, git_floor, make_repo, print_table, run_child, startup_floor

from kilo_loop.sandbox.probe import probe_bwrap

RALPHY = "ralphy-cli@4.7.2"
RATIO_TARGET = 3.0
JAIL_TARGET = 1.1

# The stub is data written to a file and executed as a program with an argv list (never through a
# shell command line). It must be cheap: one append, two `sed` runs, four printf lines.
STUB_OPENCODE = r"""#!/bin/sh
# An instant `opencode run --format json … <prompt>`: the prompt is the last argument.
for prompt; do :; done
printf 'stub iteration\n' >> README.md
stage=$(printf '%s\n' "$prompt" | sed -n 's/^Current stage: \([^ ]*\) — .*/\1/p')
iteration=$(printf '%s\n' "$prompt" | sed -n 's/^Iteration \([0-9]*\) of [0-9]*\.$/\1/p')
if [ -n "$stage" ]; then
  mkdir -p .kilocode-loop
  printf '{"iteration": %s, "stageId": "%s", "stageStatus": "done", "percent": 100, "summary": "stub", "filesChanged": ["README.md"], "needsInput": false, "questions": []}\n' "$iteration" "$stage" > .kilocode-loop/progress.json
fi
s='"sessionID":"ses_stub0000000000000000000"'
printf '{"type":"step_start","timestamp":1,%s,"part":{"id":"prt_1",%s,"messageID":"msg_1","type":"step-start"}}\n' "$s" "$s"
printf '{"type":"text","timestamp":2,%s,"part":{"id":"prt_2",%s,"messageID":"msg_1","type":"text","text":"Done."}}\n' "$s" "$s"
printf '{"type":"step_finish","timestamp":3,%s,"part":{"id":"prt_3",%s,"messageID":"msg_1","type":"step-finish","reason":"stop","cost":0.001,"tokens":{"total":1200,"input":1000,"output":200,"reasoning":0,"cache":{"read":0,"write":0}}}}\n' "$s" "$s"
"""


@dataclass(frozen=True)
class Cost:
    wall: float
    cpu: float

    def minus(self, other: Cost) -> Cost:
        return Cost(self.wall - other.wall, self.cpu - other.cpu)

    def per(self, count: int) -> Cost:
        """Per item, in ms."""
        return Cost(self.wall * 1000 / count, self.cpu * 1000 / count)


@dataclass(frozen=True)
class Measured:
    name: str
    run: Cost
    startup: Cost
    iterations: int

    def own_ms(self, stub: Cost) -> Cost:
        """ms per iteration of the tool itself: its run less its start-up, less the stub's own cost."""
        return self.run.minus(self.startup).per(self.iterations).minus(stub)


def median_cost(runs: Sequence[ChildRun]) -> Cost:
    return Cost(statistics.median(r.seconds for r in runs), statistics.median(r.cpu_seconds for r in runs))


def install_ralphy(prefix: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm not found: Node.js 20+ is needed to install ralphy")
    print(f"installing {RALPHY} into {prefix}…", flush=True)
    subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", RALPHY], check=True,
                   stdout=subprocess.DEVNULL)
    return prefix / "node_modules" / ".bin" / "ralphy"


def write_stub(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    stub = directory / "opencode"
    stub.write_text(STUB_OPENCODE, encoding="utf-8")
    stub.chmod(0o755)
    return stub


def fresh_repo(root: Path, files: int, iterations: int) -> Path:
    """make_repo's repository (PLAN.md: an N-stage goal) with the same checklist committed as PRD.md."""
    repo, goal = make_repo(root, files, iterations)
    (repo / "PRD.md").write_text(goal.read_text())
    subprocess.run(["git", "add", "PRD.md"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm",
                    "prd"], cwd=repo, check=True)
    return repo


def stub_cost(stub: Path, repo: Path, iterations: int) -> Cost:
    """ms of one stub run (a kilo-loop prompt, so it takes its longest path)."""
    prompt = "Iteration 1 of 1.\nCurrent stage: stage-1 — Implement part 1 of the widget pipeline\n"
    runs = [run_child([str(stub), "run", "--format", "json", prompt], dict(os.environ), cwd=repo)
            for _ in range(iterations)]
    subprocess.run(["git", "checkout", "-q", "--", "README.md"], cwd=repo, check=True)
    shutil.rmtree(repo / ".kilocode-loop", ignore_errors=True)
    return Cost(sum(r.seconds for r in runs), sum(r.cpu_seconds for r in runs)).per(iterations)


def run_ralphy(ralphy: Path, stub_dir: Path, repo: Path, iterations: int) -> Measured:
    env = {**os.environ, "PATH": f"{stub_dir}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1"}
    startup = median_cost([run_child([str(ralphy), "--version"], env, cwd=repo) for _ in range(5)])
    run = run_child([str(ralphy), "--opencode", "--prd", "PRD.md", "--fast", "--no-commit", "--max-iterations",
                     str(iterations)], env, cwd=repo)
    ticked = (repo / "PRD.md").read_text().count("- [x]")
    if run.exit_code != 0 or ticked != iterations:
        raise SystemExit(f"ralphy exited {run.exit_code} with {ticked}/{iterations} tasks ticked:\n"
                         f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    return Measured("ralphy 4.7.2", Cost(run.seconds, run.cpu_seconds), startup, iterations)


def run_kilo_loop(stub: Path, repo: Path, iterations: int, checkpoint: bool, startup: Cost,
                  sandbox: str = "auto") -> Measured:
    # The stub answers `opencode run` only: no server to start (ralphy starts none either), and no
    # pre-flight of its --help, as the test harnesses set for their stand-in CLIs.
    env = child_env({"KILO_BIN": str(stub), "KILO_LOOP_TRANSPORT": "run", "KILO_LOOP_PREFLIGHT": "0"})
    argv = [sys.executable, "-m", "kilo_loop", "-C", str(repo), "--goal", "PLAN.md", "-n", str(iterations),
            "--no-confirm", "--no-dashboard", "--hitl", "off", "--quiet", "--sandbox", sandbox,
            *([] if checkpoint else ["--no-checkpoint"])]
    run = run_child(argv, env, cwd=repo)
    reports = len(list((repo / ".kilocode-loop" / "runs").glob("*/iterations/*-report.json")))
    if run.exit_code != 0 or reports != iterations:
        raise SystemExit(f"kilo-loop exited {run.exit_code} after {reports}/{iterations} iterations:\n"
                         f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    label = "kilo-loop" + ("" if checkpoint else " --no-checkpoint") + (" --sandbox off" if sandbox == "off" else "")
    return Measured(label, Cost(run.seconds, run.cpu_seconds), startup, iterations)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--ralphy", type=Path, help="an installed ralphy 4.7.2 (default: npm install it)")
    args = parser.parse_args(argv)
    n = args.iterations
    with tempfile.TemporaryDirectory(prefix="kilo-loop-bench-peer-") as name:
        tmp = Path(name)
        ralphy = args.ralphy or install_ralphy(tmp / "npm")
        stub_file = write_stub(tmp / "bin")
        print(f"creating three copies of a {args.files:,}-file repository with a {n}-task checklist…", flush=True)
        labels = ("ralphy", "checkpoint", "no-checkpoint", "jail-off")
        repos = [fresh_repo(tmp / label, args.files, n) for label in labels]
        stub = stub_cost(stub_file, repos[0], n)
        git = git_floor_cost(repos[1], n)
        kilo_startup = Cost(*startup_floor(5))
        print(f"stub opencode {stub.wall:.1f} ms ({stub.cpu:.1f} ms CPU); git floor {git.cpu:.1f} ms CPU; kilo-loop "
              f"start-up {kilo_startup.wall * 1000:.0f} ms; running the three loops…", flush=True)
        peer = run_ralphy(ralphy, stub_file.parent, repos[0], n)
        with_cp = run_kilo_loop(stub_file, repos[1], n, True, kilo_startup)
        without = run_kilo_loop(stub_file, repos[2], n, False, kilo_startup)
        jailed = probe_bwrap().usable
        bare = run_kilo_loop(stub_file, repos[3], n, True, kilo_startup, "off") if jailed else None
    table = comparison(peer, [without, with_cp], stub, git)
    if bare is not None:
        table.append(jail_row(with_cp, bare, stub))
    print_table(table)
    return 0 if all(row.ok is not False for row in table) else 1


def jail_row(jailed: Measured, bare: Measured, stub: Cost) -> Row:
    """The loop's own cost per iteration with the jail against without it (both with checkpoints)."""
    on, off = jailed.own_ms(stub), bare.own_ms(stub)
    ratio = on.cpu / off.cpu if off.cpu > 0 else float("inf")
    return Row("jail: kilo-loop own / iteration", f"{on.wall:.1f} ms wall, {on.cpu:.1f} ms CPU",
               f"--sandbox off {off.wall:.1f} ms wall, {off.cpu:.1f} ms CPU",
               f"{on.wall / off.wall:.2f}x wall, {ratio:.2f}x CPU", f"<= {JAIL_TARGET}x CPU", ratio <= JAIL_TARGET)


def git_floor_cost(repo: Path, iterations: int) -> Cost:
    """bench_loop's git floor (status + diff HEAD per iteration), in wall and CPU ms per iteration."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = git_floor(repo, iterations)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Cost(wall, cpu).per(iterations)


def comparison(peer: Measured, ours: Sequence[Measured], stub: Cost, git: Cost) -> list[Row]:
    base = peer.own_ms(stub)
    table = [Row(f"{peer.name} own / iteration", f"{base.wall:.1f} ms wall, {base.cpu:.1f} ms CPU",
                 f"stub {stub.wall:.1f} ms, {stub.cpu:.1f} ms CPU", "", "", None)]
    for measured in ours:
        own = measured.own_ms(stub)
        allowance = git.cpu if "--no-checkpoint" not in measured.name else 0.0
        limit = allowance + RATIO_TARGET * base.cpu
        table.append(Row(f"{measured.name} own / iteration", f"{own.wall:.1f} ms wall, {own.cpu:.1f} ms CPU",
                         "ralphy's", f"{own.wall / base.wall:.1f}x wall, {own.cpu / base.cpu:.1f}x CPU",
                         f"<= {limit:.0f} ms CPU" + (" (git floor + 3x)" if allowance else " (3x)"), own.cpu <= limit))
    table.append(Row("git floor / iteration", f"{git.wall:.1f} ms wall, {git.cpu:.1f} ms CPU", "status + diff HEAD",
                     "", "", None))
    return table


if __name__ == "__main__":
    sys.exit(main())
