"""Where the dashboard listens and what address it shows.

`plan_binding` turns the settings (--host, --lan, --local) into a bind address, the URL to
print and the Host headers to accept; it is pure. `open_listener` binds the socket up front,
so a port in use is reported before the run creates anything, and hands it to uvicorn.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from dataclasses import dataclass

from kilo_loop.errors import UsageError

LOOPBACK = "127.0.0.1"
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
IPV4_LOOPBACK_NAMES = ("localhost", "127.0.0.1")
IPV6_LOOPBACK_NAMES = ("localhost", "[::1]")


class PortInUse(UsageError, OSError):
    def __init__(self, port: int) -> None:
        super().__init__(f"port {port} is in use; pass --port N")
        self.port = port


class BindError(UsageError, OSError):
    """The host cannot be bound (not an address of this machine, unresolvable)."""


def is_wildcard(host: str) -> bool:
    return host in WILDCARDS


def choose_bind_host(host: str | None, lan: bool, local: bool) -> str:
    """--local forces loopback; otherwise an explicit --host wins over --lan; default loopback."""
    if local:
        return LOOPBACK
    if host:
        return host.strip()
    return "0.0.0.0" if lan else LOOPBACK


def url_host(host: str) -> str:
    """A host as it appears in a URL or a Host header (IPv6 in brackets)."""
    bare = host.strip("[]")
    return f"[{bare}]" if ":" in bare else bare


def loopback_names(bind_host: str) -> tuple[str, ...]:
    """The loopback names that lead to a server bound to `bind_host`: 127.0.0.1 only when it
    listens on IPv4 loopback, `[::1]` only when it listens on IPv6 loopback (`::` is dual-stack
    here), none for one specific non-loopback address."""
    bare = bind_host.strip("[]")
    if bare == "::":
        return ("localhost", "127.0.0.1", "[::1]")
    if bare in {"0.0.0.0", "", "127.0.0.1", "localhost"}:
        return IPV4_LOOPBACK_NAMES
    if bare == "::1":
        return IPV6_LOOPBACK_NAMES
    return ()


@dataclass(frozen=True)
class Binding:
    bind_host: str
    port: int
    shown_host: str  # never a wildcard
    lan_address: str | None

    def url(self, token: str | None = None) -> str:
        """The address to open; with the token (loopback too: any local process could otherwise
        drive the loop), as the terminal prints it."""
        base = f"http://{url_host(self.shown_host)}:{self.port}/"
        return f"{base}?token={token}" if token else base

    def allowed_hosts(self) -> frozenset[str]:
        """`Host` header values a request may carry: only names that lead to this server."""
        names = set(loopback_names(self.bind_host))
        if not is_wildcard(self.bind_host):
            names.add(url_host(self.bind_host))
        names.add(url_host(self.shown_host))
        if self.lan_address:
            names.add(url_host(self.lan_address))
        allowed = {f"{name}:{self.port}".lower() for name in names}
        if self.port == 80:
            allowed |= {name.lower() for name in names}
        return frozenset(allowed)


def plan_binding(
    host: str | None, lan: bool, local: bool, port: int, find_lan_address: Callable[[], str | None]
) -> Binding:
    bind_host = choose_bind_host(host, lan, local)
    lan_address = find_lan_address() if is_wildcard(bind_host) else None
    shown = (lan_address or LOOPBACK) if is_wildcard(bind_host) else bind_host
    return Binding(bind_host, port, shown, lan_address)


def open_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port; PortInUse when another process holds the port."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise BindError(f"cannot resolve dashboard host {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and is_wildcard(host):
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(port) from None
        raise BindError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def bound_port(sock: socket.socket) -> int:
    return int(sock.getsockname()[1])
