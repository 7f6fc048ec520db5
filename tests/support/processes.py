"""Run a program for a test so that nothing it started outlives the test.

`subprocess.run` kills only its direct child when the test times out or is interrupted; an agent CLI
(a node wrapper around the real binary, which starts shells of its own) then lives on, orphaned,
eating the CPU the rest of the suite needs. `run_in_group` starts the program in a process group of
its own and ends that group — the one this call started, by its id — however the call ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any


def run_in_group(command: Sequence[str], *, timeout: float, **popen: Any) -> subprocess.CompletedProcess[str]:
    """Like `subprocess.run(command, capture_output=True, text=True, timeout=…)`, in its own group."""
    process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, **popen)
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        end_group(process)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def end_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL what is left of the group `process` leads, then reap `process` itself."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.communicate(timeout=10)
