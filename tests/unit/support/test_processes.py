"""The test harness's own promise: a program a test runs leaves nothing behind, even on a timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.processes import run_in_group

# A parent that starts a grandchild (as an agent CLI starts its shells) and records its pid.
SPAWNER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_timed_out_program_takes_its_grandchildren_with_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    with pytest.raises(subprocess.TimeoutExpired):
        run_in_group([sys.executable, "-c", SPAWNER, str(pidfile)], timeout=8)
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_a_finished_program_gives_its_output_and_exit_code(tmp_path: Path) -> None:
    done = run_in_group([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], timeout=30,
                        env=dict(os.environ))
    assert (done.returncode, done.stdout) == (3, "out\n")
