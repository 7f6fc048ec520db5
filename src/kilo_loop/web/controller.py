"""The dashboard's run lifecycle: the one active run (adopted from the CLI, or started from
the launcher), its cached views, and the refusal to start a second run while one is going."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kilo_loop.errors import KiloLoopError
from kilo_loop.goal.model import GoalError
from kilo_loop.goal.registry import resolve_plan_file
from kilo_loop.loop.commands import Command, Reply, SetPromptExtra, StopNow
from kilo_loop.run.events import RunEvent
from kilo_loop.run.state import Question, RunState
from kilo_loop.run.status import is_final
from kilo_loop.runner import AllStagesDone, RunHandle, SetupError, plan_run
from kilo_loop.settings import Settings
from kilo_loop.web.api_file import write_api_file
from kilo_loop.web.launcher import run_settings
from kilo_loop.web.schemas import StartRequest
from kilo_loop.web.snapshot import HEAD_ITERATIONS, KEPT_ITERATIONS, compact_state, state_head
from kilo_loop.web.sse import EventHub

log = logging.getLogger(__name__)


class RunBusy(KiloLoopError, RuntimeError):
    """A run is active; a second one is refused."""


class StartRefused(KiloLoopError, ValueError):
    """The start request cannot be honoured (bad plan, every stage done, agent CLI missing)."""


class LiveRun:
    """A run the dashboard shows: its handle, its task (None when the CLI drives it) and
    views of its state computed at most once per change."""

    def __init__(self, handle: RunHandle, task: asyncio.Task[Any] | None = None) -> None:
        self.handle = handle
        self.task = task
        self._saves = 0
        self._cache: tuple[tuple[int, int], dict[str, Any]] | None = None
        # The pending-question list the dashboard already answered: a double click sends nothing twice.
        self.answered: list[Question] | None = None
        handle.recorder.on_state(self._count_save)

    def _count_save(self, _state: object) -> None:
        self._saves += 1

    @property
    def run_id(self) -> str:
        return self.handle.run_id

    @property
    def state(self) -> RunState:
        """The run's current state (read only)."""
        return self.handle.state

    async def ask(self, command: Command) -> Reply:
        """Send a command to the run and wait for its reply (CommandRefused when refused)."""
        return await self.handle.ask(command)

    @property
    def seq(self) -> int:
        return self.handle.bus.seq

    @property
    def events_path(self) -> Path:
        return self.handle.layout.events

    @property
    def finished(self) -> bool:
        if self.task is not None:
            return self.task.done()
        return is_final(self.handle.state.status)

    def subscribe(
        self, on_event: Callable[[RunEvent], None], on_state: Callable[[], None]
    ) -> Callable[[], None]:
        active = {"on": True}
        unsubscribe = self.handle.bus.subscribe(on_event)
        self.handle.recorder.on_state(lambda _state: on_state() if active["on"] else None)

        def stop() -> None:
            active["on"] = False
            unsubscribe()

        return stop

    def _extras(self) -> dict[str, Any]:
        return {"idle": False, "seq": self.seq, "running": not self.finished}

    def snapshot(self) -> dict[str, Any]:
        """The state for /api/state (`RunState.snapshot`, its newest iterations only: a long run is never
        dumped whole), recomputed only after something changed. It needs no redaction: the state is
        built from events the bus redacted."""
        key = (self.seq, self._saves)
        if self._cache is None or self._cache[0] != key:
            total = _history_length(self.handle.state)
            self._cache = (key, compact_state(self.state.snapshot(KEPT_ITERATIONS), iterations_total=total))
        return {**self._cache[1], **self._extras()}

    def head(self) -> dict[str, Any]:
        total = _history_length(self.handle.state)
        return {**state_head(self.state.snapshot(HEAD_ITERATIONS), iterations_total=total), **self._extras()}


def _history_length(state: RunState) -> int:
    return max(state.iterations_total, len(state.iterations))  # older state.json files have no total


@dataclass
class RunHooks:
    """What the command line wants to know about runs started from the dashboard."""

    started: Callable[[RunHandle], None] = lambda handle: None
    finished: Callable[[RunHandle], None] = lambda handle: None


class RunController:
    def __init__(
        self,
        project: Path,
        base: Settings,
        hub: EventHub,
        answer_channel: Callable[[], bool],
        hooks: RunHooks | None = None,
    ) -> None:
        self.project = project
        self.base = base
        self.hub = hub
        self.live: LiveRun | None = None
        self._answer_channel = answer_channel
        self.hooks = hooks or RunHooks()
        self.global_verify: str | None = None  # set from the dashboard; wins for later runs
        self.api_address: tuple[str, str] | None = None  # (base URL, token) once the dashboard serves

    @property
    def busy(self) -> bool:
        return self.live is not None and not self.live.finished

    def adopt(self, handle: RunHandle, task: asyncio.Task[Any] | None = None) -> LiveRun:
        """Show (and steer) this run; a question now waits for an answer from the dashboard too."""
        handle.answer_channels.append(self._answer_channel)
        if self.api_address is not None:
            write_api_file(handle.layout.dir, *self.api_address)
        self.live = LiveRun(handle, task)
        self.hub.attach(self.live)
        return self.live

    def start(self, request: StartRequest) -> LiveRun:
        """Set up and start a run from the launcher. Synchronous on purpose: nothing can slip in
        between the busy check and the new run becoming the active one."""
        if self.busy:
            raise RunBusy(f"run {self.live.run_id if self.live else ''} is still active: stop it or wait")
        try:
            handle = self._prepare(request)
        except GoalError as exc:
            raise StartRefused(exc.message if exc.source is None else str(exc)) from exc
        except SetupError as exc:
            raise StartRefused(str(exc)) from exc
        if request.prompt_extra and request.prompt_extra.strip():
            handle.send(SetPromptExtra(request.prompt_extra))
        self.hooks.started(handle)
        task = asyncio.create_task(handle.run(), name=f"kilo-loop run {handle.run_id}")
        task.add_done_callback(lambda done: self._on_done(handle, done))
        return self.adopt(handle, task)

    def _prepare(self, request: StartRequest) -> RunHandle:
        path = resolve_plan_file(self.project, request.file)
        settings = run_settings(self.base, request, path, self.global_verify)
        try:
            return plan_run(settings, self.project, check_hitl=False).handle()  # the dashboard answers
        except AllStagesDone as exc:
            raise StartRefused(f"{exc}: Clear done first, or start with force") from exc

    def _on_done(self, handle: RunHandle, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("run %s ended with an internal error", handle.run_id, exc_info=task.exception())
        self.hooks.finished(handle)

    async def stop_active(self) -> None:
        """Stop the active run (if the dashboard started it) and wait for it to save its state."""
        live = self.live
        if live is None or live.finished:
            return
        live.handle.send(StopNow())
        if live.task is not None:
            await asyncio.wait({live.task})
