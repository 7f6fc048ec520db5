"""Drive the CLI on a real pseudo-terminal: type keys, read the screen, check the tty mode."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.integration.loop_harness import REPO

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class PtyRun:
    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.master, self.slave = os.openpty()
        os.set_blocking(self.master, False)
        self.before = termios.tcgetattr(self.slave)
        full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"),
                                                                           os.environ.get("PYTHONPATH", "")) if p),
                    "KILO_LOOP_DRY_RUN_DELAY": "0.15", "KILO_LOOP_SANDBOX": "off", "COLUMNS": "160", "TERM": "xterm", **(env or {})}
        self.proc = subprocess.Popen([sys.executable, "-m", "kilo_loop", *args], cwd=cwd, env=full_env,
                                     stdin=self.slave, stdout=self.slave, stderr=self.slave,
                                     start_new_session=True)
        self.screen = ""

    def read(self, timeout: float = 0.2) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:
                    break
                self.screen += _ANSI.sub("", data.decode("utf-8", "replace"))
        return self.screen

    def wait_for(self, text: str, timeout: float = 30) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.read(0.1):
                return self.screen
            if self.proc.poll() is not None:
                self.read(0.3)
                break
        assert text in self.screen, f"{text!r} not seen; screen:\n{self.screen[-3000:]}"
        return self.screen

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def ctrl_c(self) -> None:
        # What the terminal does for ^C: SIGINT to the foreground process group.
        os.killpg(self.proc.pid, 2)

    def finish(self, timeout: float = 60) -> int:
        end = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < end:
            self.read(0.1)
        self.read(0.2)
        code = self.proc.wait(timeout=1)
        return code

    def mode_restored(self) -> bool:
        after = termios.tcgetattr(self.slave)
        return bool(after[3] & termios.ECHO) and bool(after[3] & termios.ICANON) and after[3] == self.before[3]

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        os.close(self.master)
        os.close(self.slave)
