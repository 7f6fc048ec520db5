"""Where the many-runs dashboard reads runs and sends commands: the run directories of parallel
plans on this machine, or Redis for a fleet of workers. Both give the same shapes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

import orjson

from kilo_loop.fleet.inbox import InboxCommand, append_command
from kilo_loop.fleet.store import AsyncEventReader, FleetStore
from kilo_loop.fleet.tail import follow
from kilo_loop.run.status import FINAL_STATUSES


class RunSource(Protocol):
    def runs(self) -> list[dict[str, Any]]: ...

    def state(self, run_id: str) -> dict[str, Any] | None: ...

    def events(self, run_id: str, after_seq: int, gone: Callable[[], bool]) -> AsyncIterator[dict[str, Any]]: ...

    def send(self, run_id: str, command: InboxCommand) -> None: ...

    def paused_backends(self) -> dict[str, float]: ...


def summary(run_id: str, state: dict[str, Any] | None, meta: dict[str, Any]) -> dict[str, Any]:
    """One row of the runs list: where the run is, how long, how much, and what it is asking."""
    state = state or {}
    stages = state.get("stages") or []
    totals = state.get("totals") or {}
    status = str(meta.get("status") or state.get("status") or "queued")
    return {
        "runId": run_id,
        "title": state.get("goalTitle") or meta.get("title") or run_id,
        "status": status,
        "live": status not in FINAL_STATUSES,
        "iteration": state.get("iteration", 0),
        "maxIterations": state.get("maxIterations", 0),
        "stagesDone": sum(1 for s in stages if s.get("status") == "done"),
        "stagesTotal": len(stages),
        "cost": totals.get("cost", 0.0),
        "tokens": totals.get("tokens", 0),
        "startedAt": state.get("startedAt", ""),
        "worker": meta.get("worker", ""),
        "backend": meta.get("backend", state.get("runtime", "")),
        "quotaUntil": float(meta["quotaUntil"]) if meta.get("quotaUntil") else None,
        "pendingQuestions": state.get("pendingQuestions") or [],
    }


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


class LocalRuns:
    """Parallel plans on this machine: each run directory, wherever its worktree is."""

    def __init__(self, run_dirs: Callable[[], dict[str, Path]],
                 metas: Callable[[], dict[str, dict[str, str]]]) -> None:
        self._run_dirs = run_dirs
        self._metas = metas

    def runs(self) -> list[dict[str, Any]]:
        metas = self._metas()
        return [summary(run_id, _read_json(run_dir / "state.json"), metas.get(run_id, {}))
                for run_id, run_dir in self._run_dirs().items()]

    def state(self, run_id: str) -> dict[str, Any] | None:
        run_dir = self._run_dirs().get(run_id)
        return _read_json(run_dir / "state.json") if run_dir else None

    async def events(self, run_id: str, after_seq: int, gone: Callable[[], bool]) -> AsyncIterator[dict[str, Any]]:
        run_dir = self._run_dirs().get(run_id)
        if run_dir is None:
            return
        async for event in follow(run_dir / "events.jsonl", gone):
            if int(event.get("seq", 0)) > after_seq:
                yield event

    def send(self, run_id: str, command: InboxCommand) -> None:
        run_dir = self._run_dirs().get(run_id)
        if run_dir is None:
            raise KeyError(run_id)
        append_command(run_dir, command)

    def paused_backends(self) -> dict[str, float]:
        return {}


class RedisRuns:
    """Every run of every worker, from Redis: commands go back through Redis to the owning worker."""

    def __init__(self, store: FleetStore) -> None:
        self.store = store

    def runs(self) -> list[dict[str, Any]]:
        return [summary(run_id, self.store.state(run_id), self._meta(run_id)) for run_id in self.store.run_ids()]

    def _meta(self, run_id: str) -> dict[str, Any]:
        """The run's record; a stored result decides its status (it is the run's last word, stored
        after its last event, even when the events or the status in between were lost)."""
        meta: dict[str, Any] = self.store.meta(run_id)
        final = self.store.result_status(run_id)
        return {**meta, "status": final} if final else meta

    def state(self, run_id: str) -> dict[str, Any] | None:
        return self.store.state(run_id)

    async def events(self, run_id: str, after_seq: int, gone: Callable[[], bool]) -> AsyncIterator[dict[str, Any]]:
        reader = AsyncEventReader(self.store.url)  # its connection belongs to the calling event loop
        try:
            cursor = "0"
            while not gone():
                for entry_id, event in await reader.events_after(run_id, cursor, 1000):
                    cursor = entry_id
                    if int(event.get("seq", 0)) > after_seq:
                        yield event
        finally:
            await reader.close()

    def send(self, run_id: str, command: InboxCommand) -> None:
        if self.store.job(run_id) is None:
            raise KeyError(run_id)
        self.store.send_command(run_id, command.to_wire())

    def paused_backends(self) -> dict[str, float]:
        return self.store.paused_backends()
