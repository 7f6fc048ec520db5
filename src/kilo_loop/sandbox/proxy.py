"""The loop's side of `--sandbox-network model|none`: an HTTP proxy on a Unix socket that the jail
binds read-only (so the agent can neither replace it nor reach anything else). It answers `CONNECT
host:port` (a tunnel: HTTPS, or the bridge's forwarded loopback ports) and plain-HTTP absolute-form
requests, for the hosts `NetworkPolicy` allows; anything else gets 403 and is remembered as a refusal,
which the session reports as a guard event (the report and the next prompt say what was refused).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from kilo_loop.sandbox.network import Endpoint, NetworkPolicy, parse_request_head

_HEAD_LIMIT = 64 * 1024
_CONNECT_TIMEOUT_S = 30.0
SOCKET_NAME = "proxy.sock"


@dataclass(frozen=True)
class Refusal:
    target: str  # host:port, or what the request named
    method: str


async def splice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction until it ends, then half-close the other side."""
    try:
        while chunk := await reader.read(1 << 16):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def pipe_both(a: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                    b: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
    try:
        await asyncio.gather(splice(a[0], b[1]), splice(b[0], a[1]))
    finally:
        for writer in (a[1], b[1]):
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()


class NetworkProxy:
    """One per run; `start()` before the first jailed process, `aclose()` with the run."""

    def __init__(self, policy: NetworkPolicy, on_refused: Callable[[Refusal], None] | None = None) -> None:
        self.policy = policy
        self.directory = Path(tempfile.mkdtemp(prefix="kl-net-"))  # short: a socket path has ~100 bytes
        self.socket = self.directory / SOCKET_NAME
        self._on_refused = on_refused
        self._refused: list[Refusal] = []
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket))

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
        with contextlib.suppress(OSError):
            self.socket.unlink()
            self.directory.rmdir()

    def allow_model(self, endpoints: tuple[Endpoint, ...]) -> None:
        """The model endpoints a jailed CLI's environment names (learnt as each child starts)."""
        if not set(endpoints) <= set(self.policy.model):
            self.policy = replace(self.policy, model=tuple(sorted({*self.policy.model, *endpoints})))

    def drain(self) -> list[Refusal]:
        """The refusals since the last call."""
        found, self._refused = self._refused, []
        return found

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        method, target, rewritten = parse_request_head(head[:_HEAD_LIMIT])
        if target is None or not self.policy.allows(target):
            self._refuse(writer, method, target, head)
            return
        try:
            upstream = await asyncio.wait_for(asyncio.open_connection(target.host, target.port), _CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError):
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            upstream[1].write(rewritten)
        await pipe_both((reader, writer), upstream)

    def _refuse(self, writer: asyncio.StreamWriter, method: str, target: Endpoint | None, head: bytes) -> None:
        named = str(target) if target is not None else head.split(b"\r\n", 1)[0].decode("latin-1")[:200]
        refusal = Refusal(named, method or "?")
        self._refused.append(refusal)
        if self._on_refused is not None:
            self._on_refused(refusal)
        body = (f"kilo-loop's jail refused {named}: the network is limited to "
                f"{self.policy.describe()} (--sandbox-network {self.policy.mode})\n").encode()
        writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        writer.close()
