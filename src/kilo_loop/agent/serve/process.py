"""One warm `kilo serve` / `opencode serve` process per run: start, health-check, stop, and
clean up after a loop that was killed with -9.

The server listens on 127.0.0.1 on a free port, runs in the project directory
(cwd and `PWD`), in its own process group, and takes a random per-run password
from its environment only (`KILO_SERVER_PASSWORD` / `OPENCODE_SERVER_PASSWORD`):
it is never logged, written to state or put in an event. A pidfile in the run
directory records the group and the process's start time, so the next start in
the project kills a server a killed loop left behind (and never a reused pid).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import signal
import socket
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from kilo_loop.errors import KiloLoopError
from kilo_loop.process_group import signal_group, terminate_process_group
from kilo_loop.sandbox.failure import jail_failure

if TYPE_CHECKING:
    from kilo_loop.sandbox.jail import Jail

PIDFILE = "agent-server.pid"
_LOG_TAIL_LINES = 40


class ServerStartError(KiloLoopError, RuntimeError):
    """The server did not come up; the message says why (the loop falls back to `run`)."""


@dataclass(frozen=True)
class ServerSpec:
    binary: str
    runtime: str  # "kilo" | "opencode"
    project: Path
    env: Mapping[str, str]
    start_timeout_s: float = 180.0
    jail: Jail | None = None  # the whole server runs in the run's jail, so every tool it runs does


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks since boot): tells a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 1 :].split()
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def kill_leftover(pidfile: Path) -> bool:
    """Kill the server group a pidfile names if that very process still runs; True when one was killed."""
    try:
        record = orjson.loads(pidfile.read_bytes())
    except (OSError, ValueError):
        record = None
    if not isinstance(record, dict):
        pidfile.unlink(missing_ok=True)
        return False
    pid, started = record.get("pid"), record.get("started")
    pidfile.unlink(missing_ok=True)
    if not isinstance(pid, int) or pid <= 1 or started is None or process_start_time(pid) != started:
        return False
    signal_group(pid, signal.SIGKILL)
    return True


def kill_leftovers(runs_dir: Path) -> int:
    """Every leftover server of earlier runs of this project (pidfiles under runs/*/)."""
    return sum(kill_leftover(path) for path in runs_dir.glob(f"*/{PIDFILE}")) if runs_dir.is_dir() else 0


class AgentServer:
    """The server child. `start()` returns once `/global/health` answers."""

    def __init__(self, spec: ServerSpec, pidfile: Path | None = None) -> None:
        self.spec = spec
        self.pidfile = pidfile
        self.password = secrets.token_urlsafe(24)
        self.port = free_port()  # picked now so the client's URL is known before the start
        self._process: asyncio.subprocess.Process | None = None
        self._log: deque[str] = deque(maxlen=_LOG_TAIL_LINES)
        self._drain: asyncio.Task[None] | None = None
        # A jail with its own network: the loop reaches the server through a socket in this directory.
        self._inbound_dir = Path(tempfile.mkdtemp(prefix="kl-srv-")) if self._own_network() else None

    @property
    def uds(self) -> str | None:
        """The Unix socket the loop reaches a server inside a jail's own network through, or None (TCP)."""
        return str(self._inbound_dir / "server.sock") if self._inbound_dir is not None else None

    def _own_network(self) -> bool:
        jail = self.spec.jail
        return jail is not None and jail.network != "full" and jail.proxy is not None

    def _listening_socket(self) -> socket.socket:
        """Made by the loop in a directory of its own, outside the jail; the in-jail bridge inherits it,
        so no process in the jail can replace it with one of its own."""
        assert self._inbound_dir is not None
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listening.bind(str(self._inbound_dir / "server.sock"))
        listening.listen(64)
        listening.set_inheritable(True)
        return listening

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def username(self) -> str:
        return self.spec.runtime

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    async def exited(self, within_s: float) -> bool:
        """True once the process has exited (waiting up to `within_s` for it to be reaped)."""
        if self._process is None:
            return True
        try:
            await asyncio.wait_for(self._process.wait(), within_s)
        except TimeoutError:
            return False
        return True

    def log_tail(self) -> str:
        return "\n".join(self._log)

    def child_env(self) -> dict[str, str]:
        env = dict(self.spec.env)
        env["PWD"] = str(self.spec.project)
        env[f"{self.spec.runtime.upper()}_SERVER_PASSWORD"] = self.password
        return env

    async def start(self, healthy: Callable[[], Awaitable[bool]]) -> None:
        command = [self.spec.binary, "serve", "--port", str(self.port), "--hostname", "127.0.0.1"]
        env = self.child_env()
        listening = self._listening_socket() if self._own_network() else None
        if self.spec.jail is not None:
            inbound = (listening.fileno(), self.port) if listening is not None else None
            command, env = self._jailed(command, env, inbound)
        try:
            self._process = await asyncio.create_subprocess_exec(
                *command, cwd=self.spec.project, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
                pass_fds=(listening.fileno(),) if listening is not None else (),
            )
        except OSError as exc:
            raise ServerStartError(f"could not start `{self.spec.binary} serve`: {exc}") from exc
        finally:
            if listening is not None:
                listening.close()  # the bridge holds its own copy
        self._write_pidfile()
        self._drain = asyncio.create_task(self._drain_output())
        await self._wait_healthy(healthy)

    async def _wait_healthy(self, healthy: Callable[[], Awaitable[bool]]) -> None:
        deadline = time.monotonic() + self.spec.start_timeout_s
        while time.monotonic() < deadline:
            if not self.alive:
                await asyncio.sleep(0.2)  # let the last output lines arrive
                failure = jail_failure(self.log_tail(), self.returncode) if self.spec.jail is not None else None
                raise ServerStartError(failure or f"`{self.spec.runtime} serve` exited with status {self.returncode}: "
                                       f"{self.log_tail()[-600:] or 'no output'}")
            if await healthy():
                return
            await asyncio.sleep(0.2)
        await self.stop()
        raise ServerStartError(f"`{self.spec.runtime} serve` did not answer within {self.spec.start_timeout_s:.0f} s")

    def _jailed(self, command: list[str], env: dict[str, str],
                inbound: tuple[int, int] | None = None) -> tuple[list[str], dict[str, str]]:
        """The server in the run's jail, its commands each in a user namespace of their own (so none can
        read the password from the server's /proc entries: `sandbox.toolshell`)."""
        assert self.spec.jail is not None
        if self.pidfile is not None:
            shell = self.spec.jail.tool_shell(self.pidfile.parent / "jail", env)
            if shell is not None:
                env["SHELL"] = str(shell)
        return self.spec.jail.wrap(command, env, inbound=inbound)

    def _write_pidfile(self) -> None:
        if self.pidfile is None or self._process is None:
            return
        record = {"pid": self._process.pid, "started": process_start_time(self._process.pid),
                  "runtime": self.spec.runtime, "port": self.port}
        with contextlib.suppress(OSError):
            self.pidfile.parent.mkdir(parents=True, exist_ok=True)
            self.pidfile.write_bytes(orjson.dumps(record))

    async def _drain_output(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        async for line in self._process.stdout:
            self._log.append(line.decode("utf-8", "replace").rstrip())

    async def stop(self) -> None:
        """End the server and everything it started (its shells, their children)."""
        process = self._process  # kept until it is gone: a force exit meanwhile can still kill it
        if process is not None:
            await terminate_process_group(process, grace_s=3.0)
            self._process = None
        if self._drain is not None:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self._drain, 2)
            self._drain = None
        if self.pidfile is not None:
            self.pidfile.unlink(missing_ok=True)
        if self._inbound_dir is not None:
            shutil.rmtree(self._inbound_dir, ignore_errors=True)

    def kill_now(self) -> None:
        """Synchronous SIGKILL of the group, for a force-exit path that cannot await."""
        if self._process is not None and self._process.returncode is None:
            signal_group(self._process.pid, signal.SIGKILL)
        if self.pidfile is not None:
            with contextlib.suppress(OSError):
                self.pidfile.unlink(missing_ok=True)

