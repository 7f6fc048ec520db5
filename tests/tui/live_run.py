"""A real dry run with its dashboard on a free port, for the TUI's tests: started in a process group of its own
(ended with the test), found through the api.json it writes, the way `kilo-loop watch` finds it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.integration.loop_harness import init_repo
from tests.support.processes import end_group

REPO = Path(__file__).resolve().parents[2]
PLAN = "# Five steps\n\n" + "".join(f"- [ ] Step {n}\n" for n in ("one", "two", "three", "four", "five"))


@dataclass
class LiveRun:
    project: Path
    run_dir: Path
    process: subprocess.Popen[str]

    def events(self) -> list[str]:
        return (self.run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()


def run_env(delay: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILO_LOOP_")}
    env.update({"PYTHONPATH": str(REPO / "src"), "KILO_LOOP_DRY_RUN_DELAY": delay, "NO_COLOR": "1"})
    return env


@contextmanager
def live_dry_run(tmp_path: Path, delay: str = "0.2", iterations: int = 8) -> Iterator[LiveRun]:
    project = init_repo(tmp_path / "repo")
    (project / "plan.md").write_text(PLAN, encoding="utf-8")
    command = [sys.executable, "-m", "kilo_loop", "--dry-run", "--goal", "plan.md", "-n", str(iterations),
               "--no-confirm", "--port", "0", "--answer-timeout", "10m"]
    log = (tmp_path / "run.log").open("w")
    process = subprocess.Popen(command, cwd=project, env=run_env(delay), stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        runs = project / ".kilocode-loop" / "runs"
        while not (found := [p for p in runs.glob("*/api.json") if (p.parent / "state.json").is_file()]
                        if runs.is_dir() else []):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the dry run wrote no api.json:\n{(tmp_path / 'run.log').read_text()}")
            time.sleep(0.05)
        yield LiveRun(project, found[0].parent, process)
    finally:
        end_group(process)
        log.close()
