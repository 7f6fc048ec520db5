"""Operator-facing features through the real CLI: notifications, --list-goals, new-plan, the launcher
used from a project that has this repository as a git submodule."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.integration.loop_harness import (
    REPO,
    FakeKilo,
    init_repo,
    progress,
    run_loop,
    step,
    text,
)
from tests.integration.test_setup_errors import cli

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2


class Receiver:
    def __init__(self) -> None:
        self.bodies: list[dict] = []
        received = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                received.append(json.loads(self.rfile.read(length) or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


def test_notifications_reach_a_webhook_redacted(project: Path, fake: FakeKilo, receiver: Receiver) -> None:
    goal = project / "goal.md"
    goal.write_text("# Notify\n- [ ] Only :: verify: false\n")
    ask = [text("q"), {"write": "a", "text": "a"},
           progress("stage-1", "done", needsInput=True, questions=[{"question": f"Use token {SECRET}?"}]), step()]
    run = run_loop(fake, project, [ask], "--goal", str(goal), "-n", "1", "--notify", receiver.url, stdin="yes\n")
    assert run.proc.returncode == 1
    events = [body["event"] for body in receiver.bodies]
    assert {"verify-failed", "question", "run-done"} <= set(events), events
    for body in receiver.bodies:
        assert set(body) == {"event", "title", "text", "sentAt"}
        assert SECRET not in json.dumps(body)
    assert receiver.url not in run.proc.stdout + run.proc.stderr


def test_bad_notify_target_fails_before_the_run(project: Path) -> None:
    result = cli(["--goal-text", "x", "--dry-run", "--no-dashboard", "--notify", "gopher://nope/xyzsecret"], project)
    assert result.returncode == 2 and "--notify" in result.stderr and "xyzsecret" not in result.stderr
    assert not (project / ".kilocode-loop").exists()


def test_list_goals_and_new_plan(project: Path) -> None:
    empty = cli(["--list-goals"], project)
    assert empty.returncode == 0 and "No plans found" in empty.stdout
    made = cli(["new-plan", "Ship the parser", "--epoch", "1700000000000"], project)
    assert made.returncode == 0, made.stderr
    plan = project / ".kilo" / "plans" / "1700000000000-ship-the-parser.md"
    assert plan.is_file() and "- [ ]" in plan.read_text()
    listed = cli(["--list-goals"], project)
    assert listed.returncode == 0 and ".kilo/plans/1700000000000-ship-the-parser.md" in listed.stdout
    assert "Ship the parser" in listed.stdout
    again = cli(["new-plan", "Ship the parser", "--epoch", "1700000000000"], project)
    assert again.returncode == 1


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_launcher_as_a_submodule_from_a_subdirectory(tmp_path: Path) -> None:
    """Over 60 s: the launcher in a fresh clone makes its own .venv (a pip install) the way a user's
    first run does; nothing cheaper proves that the submodule path works from a subdirectory."""
    source = tmp_path / "kilocode-loop"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(source)], check=True)
    host = init_repo(tmp_path / "host")
    subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source),
                    "tools/kilocode-loop"], cwd=host, check=True)
    (host / "src" / "deep").mkdir(parents=True)
    (host / "plans").mkdir()
    (host / "plans" / "tidy.md").write_text("# Tidy\n- [ ] One\n- [x] Two\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    launcher = host / "tools" / "kilocode-loop" / "kilo-loop"
    listed = subprocess.run([str(launcher), "--list-goals"], cwd=host / "src" / "deep", env=env,
                            capture_output=True, text=True, timeout=900)
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert "plans/tidy.md" in listed.stdout and "1/2" in listed.stdout
    assert (host / "tools" / "kilocode-loop" / ".venv" / "bin" / "kilo-loop").exists()
    # Through a symlink on PATH, from anywhere in the host repo: the same repo is in scope.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kilo-loop").symlink_to(launcher)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    dry = subprocess.run(["kilo-loop", "--dry-run", "--goal", "plans/tidy.md", "--no-dashboard", "--hitl", "off"],
                         cwd=host / "src", env={**env, "KILO_LOOP_DRY_RUN_DELAY": "0"},
                         capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    assert list((host / ".kilocode-loop" / "runs").glob("*/state.json"))
    assert not (host / "tools" / "kilocode-loop" / ".kilocode-loop").exists()
    shutil.rmtree(host / "tools" / "kilocode-loop" / ".venv", ignore_errors=True)
