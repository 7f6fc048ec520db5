"""The dashboard server's lifecycle: bind the port up front, serve with uvicorn as a task on
the loop's own event loop (no threads, no signal handlers of its own: the CLI owns Ctrl+C),
and shut down cleanly even with event streams open."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from pathlib import Path

import uvicorn

from kilo_loop.redact import Redactor
from kilo_loop.settings import Settings
from kilo_loop.web.api_file import remove_api_file
from kilo_loop.web.app import create_app
from kilo_loop.web.binding import Binding, bound_port, open_listener, plan_binding
from kilo_loop.web.context import DashboardContext, Mode
from kilo_loop.web.controller import RunController, RunHooks
from kilo_loop.web.lan import lan_address
from kilo_loop.web.security import SecurityPolicy, new_token
from kilo_loop.web.sse import EventHub

GRACEFUL_SHUTDOWN_SECONDS = 2


class _EmbeddedServer(uvicorn.Server):
    """uvicorn without its signal capture (the run's own Ctrl+C handling stays in charge),
    reporting readiness through an event instead of a flag to poll."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@dataclass
class Dashboard:
    """A bound, not yet serving, dashboard: `await start()`, then `await stop()`."""

    ctx: DashboardContext
    binding: Binding
    token: str
    sock: socket.socket
    _server: _EmbeddedServer | None = None
    _task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The address to open, with the token; never a wildcard."""
        return self.binding.url(self.token)

    @property
    def controller(self) -> RunController:
        return self.ctx.controller

    @property
    def serving(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        policy = SecurityPolicy(
            self.binding.allowed_hosts(), self.token, cookie_name=f"kilo_loop_{self.binding.port}"
        )
        config = uvicorn.Config(
            create_app(self.ctx, policy),
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws="none",
            http="h11",
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        )
        self._server = _EmbeddedServer(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[self.sock]), name="kilo-loop dashboard")
        ready = asyncio.create_task(self._server.ready.wait())
        await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            self._task.result()  # startup failed: raise its error here
        self.controller.api_address = (self.binding.url(), self.token)

    async def stop(self) -> None:
        """Close the event streams, stop accepting, let requests in flight finish."""
        self.ctx.hub.close_all()
        live = self.controller.live
        if live is not None:
            remove_api_file(live.handle.layout.dir)
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            await asyncio.wait({self._task})
        self.sock.close()


def prepare_dashboard(
    settings: Settings,
    project: Path,
    mode: Mode,
    hooks: RunHooks | None = None,
    find_lan_address: Callable[[], str | None] = lan_address,
) -> Dashboard:
    """Bind the port (PortInUse / BindError when it cannot be had) and assemble the app.
    Nothing is written to disk."""
    binding = plan_binding(settings.host, settings.lan, settings.local, settings.port, find_lan_address)
    sock = open_listener(binding.bind_host, binding.port)
    binding = replace(binding, port=bound_port(sock))
    holder: list[Dashboard] = []
    hub = EventHub()
    controller = RunController(
        project, settings, hub, answer_channel=lambda: bool(holder and holder[0].serving), hooks=hooks
    )
    ctx = DashboardContext(
        project=project,
        base=settings,
        controller=controller,
        hub=hub,
        redactor=Redactor(enabled=settings.redact),
        mode=mode,
    )
    dashboard = Dashboard(ctx, binding, new_token(), sock)
    holder.append(dashboard)
    return dashboard
