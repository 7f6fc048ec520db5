"""Serve the many-runs dashboard on the event loop that runs the plans (or on its own, for
`kilo-loop fleet`): bound before anything starts, behind the same front door as the run
dashboard — Host check, Origin check, and a token even on loopback."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import uvicorn

from kilo_loop.fleet.app import create_fleet_app
from kilo_loop.fleet.sources import RunSource
from kilo_loop.web.binding import Binding, bound_port, open_listener, plan_binding, url_host
from kilo_loop.web.security import SecurityMiddleware, SecurityPolicy, new_token


class _Quiet(uvicorn.Server):
    """uvicorn without its own signal capture: the caller's Ctrl+C handling stays in charge."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[no-untyped-def]
        yield


@dataclass
class FleetDashboard:
    source: RunSource
    binding: Binding
    token: str = field(default_factory=new_token)

    def __post_init__(self) -> None:
        self._sock = open_listener(self.binding.bind_host, self.binding.port)
        self.binding = replace(self.binding, port=bound_port(self._sock))
        self._server: _Quiet | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The address to open, with the token (the page moves it into a cookie)."""
        return f"http://{url_host(self.binding.shown_host)}:{self.binding.port}/?token={self.token}"

    async def start(self) -> None:
        policy = SecurityPolicy(self.binding.allowed_hosts(), self.token,
                                cookie_name=f"kilo_loop_{self.binding.port}")
        app = SecurityMiddleware(create_fleet_app(self.source), policy)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", ws="none",
                                http="h11", proxy_headers=False, server_header=False,
                                timeout_graceful_shutdown=2)
        self._server = _Quiet(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[self._sock]), name="kilo-loop fleet dashboard")
        while not self._server.started and not self._task.done():
            await asyncio.sleep(0.02)
        if self._task.done():
            self._task.result()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=5)
        self._sock.close()


def fleet_dashboard(source: RunSource, host: str | None, port: int, lan: bool = False,
                    find_lan_address: Callable[[], str | None] = lambda: None) -> FleetDashboard:
    """Bind now (PortInUse / BindError when the port cannot be had)."""
    return FleetDashboard(source, plan_binding(host, lan, not lan, port, find_lan_address))
