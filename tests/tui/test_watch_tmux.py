"""`kilo-loop watch` in a real terminal (tmux, 80x24) over a real dry run: the screen shows the run, a note
typed there reaches the run, and `q` leaves the UI while the run goes on."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.support.tmux import TmuxScreen
from tests.tui.live_run import live_dry_run, run_env


def test_watch_in_tmux_shows_the_run_takes_a_note_and_q_leaves_it_running(tmp_path: Path) -> None:
    with live_dry_run(tmp_path, delay="0.5") as run:
        env = {**run_env("0.5"), "TERM": "xterm-256color"}
        screen = TmuxScreen([sys.executable, "-m", "kilo_loop", "watch"], cwd=run.project, env=env,
                            width=80, height=24)
        try:
            screen.wait_for(r"Five steps · run \d{8}-\d{6}-\d+ · dry run")
            screen.wait_for(r"Stages")
            screen.wait_for(r"question\(s\) waiting: press a")
            screen.type("n", enter=False)
            screen.wait_for(r"A note to the agent")
            screen.type("from tmux")
            screen.wait_for(r"note n1 queued")
            assert any("from tmux" in line and "note-queued" in line for line in run.events())
            screen.type("q", enter=False)
            deadline = time.monotonic() + 30
            while not screen.exited():
                assert time.monotonic() < deadline, f"q did not leave the UI:\n{screen.text()}"
                time.sleep(0.05)
            assert run.process.poll() is None, "q ended the run"
        finally:
            screen.close()
