"""How the command line hosts the dashboard: direct runs, --keep-open, launcher mode, a busy port."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from kilo_loop.commands.run import run_main
from kilo_loop.settings import load_settings
from tests.web.support import dashboard_link, start_server

DIRECT = """
import sys
from pathlib import Path
from kilo_loop.commands.run import run_main
from kilo_loop.settings import load_settings
project = Path(sys.argv[1])
values = {"project": project, "port": 0, "goal": Path("plans/demo.md"), "dry_run": True, "hitl": "off",
          "iterations": 2, "keep_open": sys.argv[2] == "keep"}
if sys.argv[2].startswith("for="):
    values["keep_open_for"] = sys.argv[2][4:]
sys.exit(run_main(load_settings(values, project)))
"""


def spawn_direct(project: Path, log: Path, keep_open: bool | str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "COLUMNS": "200"}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parents[2] / "src"), env.get("PYTHONPATH", "")])
    )
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-c", DIRECT, str(project),
             keep_open if isinstance(keep_open, str) else ("keep" if keep_open else "close")],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def wait_for(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_busy_port_fails_before_anything_is_created(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        settings = load_settings(
            {"project": project, "port": port, "goal": Path("plans/demo.md"), "dry_run": True}, project
        )
        assert run_main(settings) == 2
    finally:
        holder.close()
    assert capsys.readouterr().err.strip() == f"kilo-loop: port {port} is in use; pass --port N"
    assert not (project / ".kilocode-loop" / "runs").exists()


def test_no_goal_and_no_dashboard_is_a_clear_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = load_settings({"project": project, "dashboard": False}, project)
    assert run_main(settings) == 2
    assert "no --goal given and the dashboard is off" in capsys.readouterr().err


def test_a_direct_run_serves_the_dashboard_then_closes_it(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    process = spawn_direct(project, log, keep_open=False)
    assert process.wait(60) == 1  # 2 iterations for 4 stages: done-with-errors
    output = log.read_text()
    assert re.search(r"Dashboard http://127\.0\.0\.1:\d+/\?token=[\w-]+ \(Ctrl\+Click to open\)", output)
    assert "run done-with-errors" in output


def test_keep_open_serves_the_finished_run_until_ctrl_c(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    process = spawn_direct(project, log, keep_open=True)
    try:
        wait_for(lambda: "Dashboard still open" in log.read_text(), "the keep-open notice")
        link = dashboard_link(log.read_text())
        assert link is not None
        url, token = link
        assert httpx.get(f"{url}/api/state").status_code == 401
        state = httpx.get(f"{url}/api/state", headers={"Authorization": f"Bearer {token}"}).json()
        assert state["status"] == "done-with-errors" and state["mode"] == "direct" and state["iteration"] == 2
        process.send_signal(signal.SIGINT)
        assert process.wait(20) == 1
    finally:
        if process.poll() is None:
            process.kill()


def test_keep_open_for_serves_the_finished_run_then_closes_by_itself(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    process = spawn_direct(project, log, keep_open="for=3s")
    try:
        wait_for(lambda: "Dashboard still open" in log.read_text(), "the keep-open notice")
        assert " for 3s — press Ctrl+C to close it" in log.read_text()
        link = dashboard_link(log.read_text())
        assert link is not None
        state = httpx.get(f"{link[0]}/api/state", headers={"Authorization": f"Bearer {link[1]}"}).json()
        assert state["status"] == "done-with-errors"
        assert process.wait(30) == 1  # no Ctrl+C: it closed when the time was up
        assert "kept open for 3s" in log.read_text()
    finally:
        if process.poll() is None:
            process.kill()


def test_launcher_mode_starts_runs_and_ctrl_c_stops_the_active_one(project: Path, tmp_path: Path) -> None:
    server = start_server(project, tmp_path / "launcher.log", {"KILO_LOOP_DRY_RUN_DELAY": "0.2"})
    try:
        http = server.http()
        started = http.post("/api/start", json={"file": "plans/demo.md", "dryRun": True, "iterations": 50})
        assert started.status_code == 201
        run_id = started.json()["runId"]
        wait_for(lambda: http.get("/api/state").json()["iteration"] >= 1, "the first iteration")
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(20) == 0
    finally:
        server.stop()
    state = (project / ".kilocode-loop" / "runs" / run_id / "state.json").read_text()
    assert '"status": "aborted"' in state
    assert "stopping the active run" in server.output()
