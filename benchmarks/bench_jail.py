"""What the jail costs: starting an agent process in it, and a command run inside it.

    PYTHONPATH=src python benchmarks/bench_jail.py [--starts 20] [--commands 1000] [--agent PATH]

1. **Agent start**: the agent CLI's `--version` (kilo from .tools by default: a real node start-up)
   started bare and started through the run's jail (the argv `sandbox.bwrap` builds for a project
   in a temporary git repository, the kilo backend's declared HOME paths), alternating, median
   wall time of each. Target (issue 23): the jail adds at most 50 ms.
2. **The jail's own set-up**: `/bin/true` started bare and jailed (the figure item 1 hides in a
   multi-second node start on a busy machine).
3. **Commands inside**: one jailed shell running `true` N times against the same shell run bare —
   what a command pays once it is inside (the namespaces and mounts are set up once per session).
   Target: at most 1.05x bare.

The floor of each ratio is measured in the same run; numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kilo_loop.agent.kilo.backend import kilo_backend
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.layout import project_facts
from kilo_loop.sandbox.probe import probe_bwrap
from kilo_loop.sandbox.setup import backend_paths

REPO = Path(__file__).resolve().parents[1]
START_TARGET_MS = 50.0
COMMAND_TARGET = 1.05


def wall(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def make_project(root: Path) -> tuple[Path, dict[str, str]]:
    project, home = root / "project", root / "home"
    project.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    return project, env


def median_pair(bare: list[str], jailed: list[str], env: dict[str, str], jail_env: dict[str, str], cwd: Path,
                rounds: int) -> tuple[float, float]:
    times: dict[str, list[float]] = {"bare": [], "jail": []}
    for _ in range(rounds):  # alternating, so a busy moment on a shared machine hits both
        times["bare"].append(wall(bare, env, cwd))
        times["jail"].append(wall(jailed, jail_env, cwd))
    return statistics.median(times["bare"]), statistics.median(times["jail"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--commands", type=int, default=1000)
    parser.add_argument("--agent", default=str(REPO / ".tools" / "node_modules" / ".bin" / "kilo"))
    args = parser.parse_args()
    status = probe_bwrap(use_cache=False)
    if not status.usable or status.binary is None:
        print(f"no jail here: {status.problem}")
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-jail-") as tmp:
        project, env = make_project(Path(tmp))
        jail = Jail(status.binary, project_facts(project), backend_paths(kilo_backend(args.agent)))

        agent = [args.agent, "--version"]
        jailed, jail_env = jail.wrap(agent, env)
        wall(agent, env, project)  # warm the page cache
        bare_s, jail_s = median_pair(agent, jailed, env, jail_env, project, args.starts)
        extra_ms = (jail_s - bare_s) * 1000
        print(f"agent start ({Path(args.agent).name} --version, median of {args.starts}): bare {bare_s * 1000:.1f} ms, "
              f"jail {jail_s * 1000:.1f} ms, +{extra_ms:.1f} ms "
              f"[{'ok' if extra_ms <= START_TARGET_MS else 'over'} target +{START_TARGET_MS:.0f} ms]")

        loop = f"i=0; while [ $i -lt {args.commands} ]; do true; /bin/true; i=$((i+1)); done"
        shell = ["/bin/sh", "-c", loop]
        jailed_shell, shell_env = jail.wrap(shell, env)
        bare_s, jail_s = median_pair(shell, jailed_shell, env, shell_env, project, 5)
        ratio = jail_s / bare_s
        print(f"`true` x{args.commands} (builtin and /bin/true) in one shell, median of 5: bare {bare_s * 1000:.1f} ms, "
              f"jail {jail_s * 1000:.1f} ms, {ratio:.3f}x [{'ok' if ratio <= COMMAND_TARGET else 'over'} target "
              f"{COMMAND_TARGET}x]")

        true = ["/bin/true"]
        jailed_true, true_env = jail.wrap(true, env)
        bare_s, jail_s = median_pair(true, jailed_true, env, true_env, project, args.starts * 5)
        print(f"the jail's own set-up (/bin/true started bare and jailed, median of {args.starts * 5}): "
              f"bare {bare_s * 1000:.2f} ms, jail {jail_s * 1000:.2f} ms, +{(jail_s - bare_s) * 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
