"""A fleet on this machine for a try-out, a test or a benchmark: `redis-server` on a free loopback
port (no persistence unless asked: an append-only file fsynced at every write, as docs/fleet.md
advises for a real fleet) and N `kilo-loop worker` processes, each with its own workspace."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from kilo_loop.errors import KiloLoopError


class LocalFleetError(KiloLoopError, RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RedisServer:
    directory: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    persistent: bool = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            raise LocalFleetError("redis-server not found: install it (Debian: apt-get install redis-server) "
                                  "or pass --broker redis://host:port/0")
        self.directory.mkdir(parents=True, exist_ok=True)
        durability = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *durability,
             "--maxmemory-policy", "noeviction", "--dir", str(self.directory), "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.ConnectionError):
                if client.ping():
                    return self
            if self.process.poll() is not None:
                raise LocalFleetError(f"redis-server exited with {self.process.returncode}")
            time.sleep(0.05)
        raise LocalFleetError("redis-server did not answer within 10 s")

    def stop(self) -> None:
        _end(self.process)

    def kill(self) -> None:
        """The machine lost power: redis-server gone at once (a restart reads its append-only file)."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@dataclass
class LocalWorker:
    broker: str
    workspace: Path
    env: dict[str, str] = field(default_factory=dict)
    concurrency: int = 1
    process: subprocess.Popen[bytes] | None = None

    def start(self, log: Path | None = None) -> LocalWorker:
        self.workspace.mkdir(parents=True, exist_ok=True)
        out = (log or self.workspace / "worker.log").open("ab")
        with out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kilo_loop", "worker", "--broker", self.broker, "--workspace",
                 str(self.workspace), "--concurrency", str(self.concurrency)],
                env={**os.environ, **self.env}, stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    def kill(self) -> None:
        """The machine is gone: the worker and everything it started, at once."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        _end(self.process)


def _end(process: subprocess.Popen[bytes] | None, grace: float = 30) -> None:
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
