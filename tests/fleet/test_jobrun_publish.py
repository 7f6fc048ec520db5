"""A worker publishes a run's events at once, except `iteration-finished`, which waits for the
progress save it asked for (so a resume elsewhere starts from at least that iteration)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kilo_loop.fleet.jobrun import JobRun, WorkerConfig
from kilo_loop.fleet.store import Job


class _Store:
    def __init__(self) -> None:
        self.published: list[str] = []

    def publish_events(self, run_id: str, events: list[dict[str, Any]]) -> int:
        self.published.extend(str(e["type"]) for e in events)
        return len(events)


def _job_run(tmp_path: Path, release: threading.Event, saves: list[int]) -> tuple[JobRun, _Store]:
    store = _Store()
    run = JobRun(store, WorkerConfig(workspace=tmp_path), Job("r1", str(tmp_path), "g.md", "# g"))  # type: ignore[arg-type]

    def slow_save() -> tuple[str, bytes]:
        release.wait(10)
        saves.append(len(store.published))
        return "", b""

    run._save_progress = slow_save  # type: ignore[method-assign]
    return run, store


def _events(*kinds: str) -> list[dict[str, Any]]:
    return [{"type": kind} for kind in kinds]


def test_events_before_an_unsaved_iteration_end_go_out_at_once_and_the_end_waits(tmp_path: Path) -> None:
    release, saves = threading.Event(), []
    run, store = _job_run(tmp_path, release, saves)
    run._held.extend(_events("iteration-started", "tool", "iteration-finished", "iteration-started", "text"))
    run._publish_held(wait=False)
    assert store.published == ["iteration-started", "tool"], "nothing after an unsaved iteration end is published"
    release.set()
    run._publish_held(wait=True)
    assert store.published == ["iteration-started", "tool", "iteration-finished", "iteration-started", "text"]
    assert saves == [2], "the save ran once, before the iteration end was published"
    run._saver.shutdown()


def test_each_iteration_end_gets_its_own_save(tmp_path: Path) -> None:
    release, saves = threading.Event(), []
    release.set()
    run, store = _job_run(tmp_path, release, saves)
    run._held.extend(_events("iteration-finished", "iteration-started", "iteration-finished", "run-finished"))
    run._publish_held(wait=True)
    assert store.published == ["iteration-finished", "iteration-started", "iteration-finished", "run-finished"]
    assert saves == [0, 2]
    run._saver.shutdown()
