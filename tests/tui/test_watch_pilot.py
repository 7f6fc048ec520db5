"""Textual's pilot drives `kilo-loop watch` against a live dry run at 80x24: it answers the run's question,
sends a note (and one over 8 KB, refused in the run's words), pauses, resumes and stops — each through the dashboard API, each seen in the run's events."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

from kilo_loop.tui.app import WatchApp
from kilo_loop.tui.client import DashboardClient
from kilo_loop.tui.target import resolve_target
from tests.tui.live_run import live_dry_run


async def _until(pilot: Pilot[None], condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            message = pilot.app.query_one("#message").render()
            raise AssertionError(f"never: {what} (status {pilot.app.state.get('status')}; said: {message})")
        await pilot.pause(0.05)


async def test_the_pilot_answers_notes_pauses_resumes_and_stops_a_live_dry_run(tmp_path: Path) -> None:
    with live_dry_run(tmp_path, delay="0.5") as run:
        app = WatchApp(DashboardClient(resolve_target(None, run.project)))
        async with app.run_test(size=(80, 24)) as pilot:
            await _until(pilot, lambda: app.state.get("status") == "waiting-answer", "the question")
            await _until(pilot, lambda: "question(s) waiting" in str(app.query_one("#logbar").render()), "the hint")
            await pilot.press("a")
            await pilot.pause()
            await pilot.press("down", "enter")  # the second option
            await _until(pilot, lambda: app.state.get("status") != "waiting-answer", "the answer taken")

            await pilot.press("n")
            await pilot.pause()
            await pilot.press(*"use utils/")
            await pilot.press("enter")
            await _until(pilot, lambda: any(n.get("text") == "use utils/" for n in app.state.get("notes") or []),
                         "the note in the state")

            await pilot.press("n")  # a note over 8 KB: the run's own refusal, in its words
            await pilot.pause()
            app.screen.query_one(Input).value = "x" * 9000
            await pilot.press("enter")
            await _until(pilot, lambda: "note refused" in str(app.query_one("#message").render()), "the refusal")
            assert "8 KB" in str(app.query_one("#message").render())

            await pilot.press("p")
            await _until(pilot, lambda: app.state.get("paused") is True, "paused")
            await pilot.press("p")
            await _until(pilot, lambda: app.state.get("paused") is False, "resumed")

            await pilot.press("s")
            await pilot.pause()
            await pilot.press("y")
            await _until(pilot, lambda: app.state.get("status") in ("stopped", "aborted"), "stopped")
            await pilot.press("q")
        events = [json.loads(line) for line in run.events()]
    answers = [e for e in events if e["type"] == "answer"]
    assert answers and "Refactor into smaller modules" in json.dumps(answers[0])
    assert any(e["type"] == "note-queued" and "use utils/" in json.dumps(e) and "tui" in json.dumps(e) for e in events)
    controls = [(e["data"]["action"], e["data"]["value"]) for e in events if e["type"] == "control"]
    assert controls == [("pause", True), ("pause", False), ("stop", True)], controls  # pause, resume, stop
