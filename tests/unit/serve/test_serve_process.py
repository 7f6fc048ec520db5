"""The agent server's lifecycle helpers: pidfiles, leftover clean-up, a server that will not start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kilo_loop.agent.serve.process import (
    PIDFILE,
    AgentServer,
    ServerSpec,
    ServerStartError,
    free_port,
    kill_leftover,
    kill_leftovers,
    process_start_time,
)


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)


def _gone(process: subprocess.Popen[bytes]) -> bool:
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return False
    return True


def test_a_leftover_server_named_by_its_pidfile_is_killed(tmp_path: Path) -> None:
    child = _sleeper()
    try:
        run = tmp_path / "runs" / "r1"
        run.mkdir(parents=True)
        (run / PIDFILE).write_text(json.dumps({"pid": child.pid, "started": process_start_time(child.pid)}))
        assert kill_leftovers(tmp_path / "runs") == 1
        assert _gone(child) and not (run / PIDFILE).exists()
    finally:
        child.kill()


def test_a_reused_pid_is_never_killed(tmp_path: Path) -> None:
    child = _sleeper()
    try:
        pidfile = tmp_path / PIDFILE
        started = process_start_time(child.pid)
        assert started is not None
        pidfile.write_text(json.dumps({"pid": child.pid, "started": started - 1}))
        assert kill_leftover(pidfile) is False
        assert child.poll() is None and not pidfile.exists()
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("content", ["", "{broken", '{"pid": 1, "started": 0}', '{"pid": "x"}', "[]"])
def test_a_bad_or_foreign_pidfile_kills_nothing(tmp_path: Path, content: str) -> None:
    pidfile = tmp_path / PIDFILE
    pidfile.write_text(content)
    assert kill_leftover(pidfile) is False
    assert kill_leftovers(tmp_path / "missing") == 0


def test_free_port_is_on_loopback_and_usable() -> None:
    assert 0 < free_port() < 65536


async def test_a_server_that_exits_at_once_is_a_clear_start_error(tmp_path: Path) -> None:
    fake = tmp_path / "kilo"
    fake.write_text("#!/bin/sh\necho 'error: unknown command serve' >&2\nexit 3\n")
    fake.chmod(0o755)
    pidfile = tmp_path / PIDFILE
    server = AgentServer(ServerSpec(str(fake), "kilo", tmp_path, dict(os.environ), start_timeout_s=20), pidfile)

    async def never_healthy() -> bool:
        return False

    with pytest.raises(ServerStartError, match=r"exited with status 3.*unknown command serve"):
        await server.start(never_healthy)
    await server.stop()
    assert not pidfile.exists()


async def test_the_password_reaches_only_the_childs_environment(tmp_path: Path) -> None:
    server = AgentServer(ServerSpec("opencode", "opencode", tmp_path, {"PATH": "/bin"}))
    env = server.child_env()
    assert env["OPENCODE_SERVER_PASSWORD"] == server.password and len(server.password) >= 24
    assert env["PWD"] == str(tmp_path)
    assert server.password not in repr(server.spec) and server.password not in json.dumps(dict(os.environ))


def test_process_start_time_of_a_missing_pid_is_none() -> None:
    assert process_start_time(2**22 + 12345) is None
    assert process_start_time(os.getpid()) is not None


async def test_a_health_probe_that_is_never_answered_gives_up_soon_and_the_next_one_succeeds() -> None:
    """opencode accepts its first connection before it is ready and never answers it: the probe
    must not wait the 30 s request timeout (it made every serve start 30 s slower)."""
    import asyncio

    from kilo_loop.agent.serve.client import ServerClient

    seen = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal seen
        seen += 1
        await reader.readuntil(b"\r\n\r\n")
        if seen == 1:
            await asyncio.sleep(60)  # the first request is swallowed, as the real server does
        body = b'{"healthy":true}'
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                     % (len(body), body))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = ServerClient(f"http://127.0.0.1:{port}", "opencode", "pw")
    try:
        started = asyncio.get_running_loop().time()
        assert await client.healthy() is False
        assert await client.healthy() is True
        assert asyncio.get_running_loop().time() - started < 10
    finally:
        await client.aclose()
        server.close()
