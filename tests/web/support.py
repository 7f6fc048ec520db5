"""Shared by the dashboard tests: a project to run plans in, and a dashboard server started
as its own process (the way users start it), whose address is read from its output."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.git import git

DEMO_PLAN = (
    "# Demo plan\n\n- [ ] First stage\n- [ ] Second stage :: verify: true\n- [ ] Third stage\n"
    "- [ ] Fourth stage\n"
)
JSON_PLAN = (
    '{\n  "title": "JSON plan",\n  "stages": [\n    {"id": "a", "title": "Stage A"},\n'
    '    {"id": "b", "title": "Stage B"}\n  ]\n}\n'
)
SERVER_SCRIPT = """
import sys
from pathlib import Path
from kilo_loop.commands.run import run_main
from kilo_loop.settings import load_settings
project = Path(sys.argv[1])
sys.exit(run_main(load_settings({"project": project, "port": 0}, project)))
"""
_URL = re.compile(r"Dashboard (http://[^/\s]+)/\?token=([\w-]+)")


def git_env(home: Path) -> dict[str, str]:
    """Environment that keeps git away from the user's own configuration."""
    config = home / "gitconfig"
    config.write_text("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n")
    return {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1"}


def make_project(root: Path) -> Path:
    """A git repository with a markdown plan under plans/ and a JSON goal under .kilocode-loop/goals/."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    (root / "plans").mkdir()
    (root / "plans" / "demo.md").write_text(DEMO_PLAN)
    goals = root / ".kilocode-loop" / "goals"
    goals.mkdir(parents=True)
    (goals / "json-plan.json").write_text(JSON_PLAN)
    (root / "README.md").write_text("hello\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('v1')\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


def dashboard_link(output: str) -> tuple[str, str] | None:
    """(base URL, token) from the `Dashboard http://…/?token=…` line kilo-loop prints."""
    match = _URL.search(output)
    return (match.group(1), match.group(2)) if match else None


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    url: str  # without the token: requests carry it as a header (see `http`), a browser opens `link`
    log: Path
    token: str

    @property
    def link(self) -> str:
        """What the terminal prints, the way the operator opens the dashboard."""
        return f"{self.url}/?token={self.token}"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.auth, timeout=20)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # Ctrl+C: stops an active run, then exits
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def start_server(project: Path, log: Path, extra_env: dict[str, str], timeout: float = 30.0) -> ServerProcess:
    """The launcher (`kilo-loop` with no goal) on a free port, its output going to `log`;
    returns once it has printed its URL."""
    env = {**os.environ, **extra_env, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "COLUMNS": "200"}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH", "")]))
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-c", SERVER_SCRIPT, str(project)],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        found = dashboard_link(log.read_text(errors="replace"))
        if found:
            return ServerProcess(process, found[0], log, found[1])
        time.sleep(0.05)
    process.kill()
    process.wait(5)
    raise RuntimeError("the dashboard did not start:\n" + log.read_text(errors="replace"))
