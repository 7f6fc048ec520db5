"""Known secrets masked by value, end to end: the real `kilo` on the warm server, the loop's dashboard
and a notification target, secrets that match no pattern.

`ACME_DEPLOY_TOKEN` (40 random base64 characters, holding "/" and "+" so its URL form differs) is in
the loop's environment. The scripted agent prints it through its shell tool plain, base64-encoded,
URL-encoded, JSON-escaped (slashes escaped) and wrapped at 100 columns with text after its tail (the
loop records a tool's command, not its output, so the forms are in the commands); it writes it into
its handoff and its progress summary, and runs a command carrying it that the guard refuses (the guard
notice quotes the command and goes to a notification receiver on 127.0.0.1). It also prints the warm
server's password, the run's own secret, which the test reads from the server's environment as the
agent could. The first model turn is held until the test is reading the dashboard's SSE stream with
the run's token. Afterwards no 8-character piece of any form of either secret is in the run's files,
the console, the SSE frames, the notifications, or the loop's prompt of the next iteration as the
model received it; state.json and report.md count the masks by source.

About 60 s: two iterations of the real CLI on the warm server, the server's start included.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from kilo_loop.agent.serve.process import PIDFILE
from tests.support.processes import end_group
from tests.web.support import dashboard_link

from .conftest import (
    LOOP_DIR,
    Loop,
    bash,
    iteration_marker,
    iteration_requests,
    write_handoff,
    write_progress,
)
from .fake_provider import FakeProvider, calls, hold, say

pytestmark = pytest.mark.e2e

PLAN = "# Deploy\n\nTwo small steps.\n\n- [ ] Prepare the deploy\n- [ ] Deploy\n"
DENIED = "acme-deploy"  # a command the guard is told to refuse (KILO_LOOP_GUARD_DENY)


def printed_forms(value: str) -> list[str]:
    """Shell commands that print the value plain, base64-encoded, URL-encoded, JSON-escaped (slashes
    escaped, as PHP writes JSON) and wrapped at 100 columns with text after its tail."""
    b64 = base64.b64encode(value.encode()).decode()
    quoted = urllib.parse.quote(value, safe="")
    escaped = json.dumps({"deploy": {"hook": value}}).replace("/", "\\/")
    line = "0" * 80 + " deploy " + value + '", next'
    wrapped = "\n".join(line[i:i + 100] for i in range(0, len(line), 100))
    return [f"echo {value}", f"echo {b64} | base64 -d", f"echo https://deploy.example/hooks/{quoted}",
            f"printf '%s\\n' '{escaped}'", f"printf '%s\\n' '{wrapped}'"]


def deploy_token() -> str:
    """40 characters of standard base64 holding both "/" and "+" (their URL form is %2F, %2B)."""
    while True:
        value = base64.b64encode(secrets.token_bytes(30)).decode()
        if "/" in value and "+" in value:
            return value


def pieces(value: str) -> set[str]:
    """Every 8-character piece of the value and of its URL, JSON-escaped and base64 forms (each alignment)."""
    forms = {value, urllib.parse.quote(value, safe=""), value.replace("/", "\\/")}
    raw = value.encode()
    for skip in range(3):
        chunk = raw[skip:][: (len(raw) - skip) // 3 * 3]
        forms.add(base64.b64encode(chunk).decode())
    forms.add(base64.b64encode(raw + b"\n").decode())
    return {form[i:i + 8] for form in forms for i in range(len(form) - 7)}


def leaks(text: str, secret_pieces: set[str]) -> list[str]:
    return sorted(piece for piece in secret_pieces if piece in text)


class Receiver:
    """A notification target on 127.0.0.1: keeps every body POSTed to it."""

    def __init__(self) -> None:
        self.bodies: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                owner.bodies.append(self.rfile.read(length).decode("utf-8", "replace"))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class SseReader:
    """The dashboard's event stream read on a thread until the dashboard closes it."""

    def __init__(self, url: str, token: str) -> None:
        self.frames: list[str] = []
        self._url, self._token = url, token
        self._thread = threading.Thread(target=self._read, daemon=True)
        self.connected = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def _read(self) -> None:
        headers = {"Authorization": f"Bearer {self._token}"}
        try:
            with httpx.stream("GET", f"{self._url}/api/events", headers=headers, timeout=httpx.Timeout(10, read=None)) \
                    as response:
                self.connected.set()
                for line in response.iter_lines():
                    self.frames.append(line)
        except httpx.HTTPError:
            pass  # the dashboard closed with the run
        finally:
            self.connected.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    @property
    def text(self) -> str:
        return "\n".join(self.frames)


def wait_for(check: Callable[[], object], what: str, timeout: float = 120.0) -> object:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return found


def server_password(run_dir: Path) -> str | None:
    """The warm server's password, as this test (root, like the agent's own user) reads it from the
    environment of the process the run's pidfile names (None: not found there)."""
    try:
        pid = json.loads((run_dir / PIDFILE).read_text())["pid"]
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except (OSError, ValueError, KeyError):
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(b"KILO_SERVER_PASSWORD="):
            return entry.split(b"=", 1)[1].decode()
    return None


def notice_events(receiver: Receiver) -> list[str]:
    return [json.loads(body).get("event", "") for body in receiver.bodies]


def files_under(root: Path) -> Iterator[tuple[str, str]]:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield str(path.relative_to(root)), path.read_bytes().decode("utf-8", "replace")


def test_known_secrets_are_masked_in_every_encoding_in_every_output(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    (project / "plan.md").write_text(PLAN, encoding="utf-8")
    token = deploy_token()
    forms = printed_forms(token)
    # The first turn is held until the test reads the stream and the server's password.
    fake_provider.add_turns(hold(120, then=bash(forms[0])), marker=iteration_marker(1))
    fake_provider.add_turns(
        calls(write_progress(project, 2, "stage-2", "done", percent=100, summary="deployed")),
        say("Stage two is done."),
        marker=iteration_marker(2),
    )
    command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--port", "0",
               "--goal", "plan.md", "-n", "2"]
    log = project.parent / "loop.log"
    with Receiver() as receiver:
        env = loop.environment("kilo", extra_env={
            "ACME_DEPLOY_TOKEN": token, "KILO_LOOP_GUARD_DENY": json.dumps([DENIED]),
            "KILO_LOOP_NOTIFY": json.dumps([receiver.url]), "PYTHONUNBUFFERED": "1",
        })
        env.pop("KILO_LOOP_TRANSPORT", None)  # the default transport: the warm server
        with log.open("w") as sink:
            process = subprocess.Popen(command, cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=sink,
                                       stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            url, dashboard_token = wait_for(lambda: dashboard_link(log.read_text()) or process.poll() is not None,
                                            "the dashboard link") or ("", "")  # type: ignore[misc]
            assert url, log.read_text()
            stream = SseReader(url, dashboard_token)
            stream.start()
            assert stream.connected.wait(30), log.read_text()
            assert fake_provider.wait_for_hold(180), log.read_text()
            run_dir = wait_for(lambda: next((project / LOOP_DIR / "runs").glob("*"), None), "the run directory")
            password = server_password(run_dir)  # type: ignore[arg-type]
            assert password, "the warm server's password is in its environment"
            fake_provider.add_turns(
                *(bash(form) for form in [*forms[1:], *printed_forms(password)[:2]]),
                bash(f"{DENIED} --now {token}"),
                calls(write_handoff(project, f"# Handoff\n\nThe deploy hook takes {token}; stage two deploys.\n"),
                      write_progress(project, 1, "stage-1", "done", percent=50,
                                     summary=f"prepared the deploy with {token}")),
                say("Stage one is done."),
                marker=iteration_marker(1),
            )
            fake_provider.release()
            returncode = process.wait(timeout=360)
            stream.join(30)
        finally:
            end_group(process)  # type: ignore[arg-type]
        output = log.read_text()
        assert returncode == 0, output[-6000:]
        wait_for(lambda: "run-done" in notice_events(receiver), "the run-done notification", 30)
        notifications = "\n".join(receiver.bodies)

    secret_pieces = pieces(token) | pieces(password)
    assert leaks(output, secret_pieces) == [], "the console"
    loop_files = {name: text for name, text in files_under(project / LOOP_DIR)
                  if name not in ("progress.json", "handoff.md")}  # the agent's own files, like the work tree's
    assert {name: found for name, text in loop_files.items() if (found := leaks(text, secret_pieces))} == {}
    written = {Path(name).name for name in loop_files}
    assert {"state.json", "events.jsonl", "report.md", "01-prompt.md", "02-prompt.md", "02-handoff-in.md"} <= written
    assert "deploy.example/hooks/[REDACTED]" in stream.text, "the stream carried the iteration's tool frames"
    assert leaks(stream.text, secret_pieces) == [], "the SSE frames"
    assert "guard" in notice_events(receiver) and DENIED in notifications, notifications
    assert leaks(notifications, secret_pieces) == [], "the notifications"
    second = iteration_requests(fake_provider, 2)
    assert second and all(leaks(request.all_text, secret_pieces) == [] for request in second), \
        "the loop's next prompt, as the model received it"
    assert any(token in request.all_text for request in iteration_requests(fake_provider, 1)), \
        "the agent's own tool output reaches the model unmasked (kilo sends it, not the loop)"

    state = json.loads((run_dir / "state.json").read_text())  # type: ignore[operator]
    masked = state["masked"]
    assert masked["environment"] >= 5, masked
    assert masked.get("agent server", 0) >= 2, masked
    report = (run_dir / "report.md").read_text()  # type: ignore[operator]
    shown = re.search(r"Masked: (\d+) \(([^)]*)\)", report)
    assert shown is not None and int(shown.group(1)) == sum(masked.values()), report
    assert "environment" in shown.group(2)
    events = (run_dir / "events.jsonl").read_text()  # type: ignore[operator]
    assert "[REDACTED]" in events and "secrets-masked" in events
