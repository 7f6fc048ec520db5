"""A real terminal for tests: a private tmux server, a program in one pane, and its screen read back.

Each screen gets its own server socket (`tmux -L`), so parallel tests never share one, and the
server is ended with the screen. Waits are on the screen's text, with a deadline, never on time."""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path


class TmuxScreen:
    def __init__(self, command: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                 width: int = 120, height: int = 40) -> None:
        self.socket = f"kilo-loop-test-{uuid.uuid4().hex[:12]}"
        env_args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        # `remain-on-exit` keeps the pane (and its last screen) after the program ends
        self._tmux("new-session", "-d", "-s", "main", "-x", str(width), "-y", str(height),
                   "-c", str(cwd), *env_args, *command)
        self._tmux("set-option", "-t", "main", "remain-on-exit", "on")

    def _tmux(self, *args: str) -> str:
        # COLUMNS/LINES from the test's own environment would pin the program to 80x24, whatever the pane
        env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], check=True,
                              capture_output=True, text=True, env=env).stdout

    def text(self) -> str:
        """Everything the program printed so far, scrollback included, lines joined where they wrapped."""
        return self._tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "main")

    def type(self, keys: str, *, enter: bool = True) -> None:
        self._tmux("send-keys", "-t", "main", "-l", keys)
        if enter:
            self._tmux("send-keys", "-t", "main", "Enter")

    def wait_for(self, pattern: str, *, timeout: float = 60.0, after: int = 0) -> re.Match[str]:
        """The first match of `pattern` in the text from offset `after`; fails with the screen shown."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.text()
            found = re.compile(pattern, re.MULTILINE).search(screen, after)
            if found:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not on the screen after {timeout:.0f} s:\n{screen[-3000:]}")
            time.sleep(0.1)

    def exited(self) -> bool:
        return self._tmux("display-message", "-p", "-t", "main", "#{pane_dead}").strip() == "1"

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "kill-server"], capture_output=True,
                       check=False)
