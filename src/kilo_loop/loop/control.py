"""The one control channel: terminal keys and the dashboard both call these methods,
and the orchestrator reads them between (and, for stop, during) iterations."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class AnswerItem:
    question: str
    answer: str
    source: str = "terminal"


class ControlError(ValueError):
    pass


CONTROL_ACTIONS = ("pause", "resume", "abort-after-current", "stop", "set-shared-context")


class RunControl:
    def __init__(self, shared_context: bool = False) -> None:
        self._resume = asyncio.Event()
        self._resume.set()
        self._stop = asyncio.Event()
        self._answers: asyncio.Queue[list[AnswerItem]] = asyncio.Queue()
        self.abort_after_current = False
        self.shared_context = shared_context
        self.waiting_for_answers = False
        self._listeners: list[Callable[[str, object], None]] = []

    def on_change(self, listener: Callable[[str, object], None]) -> None:
        self._listeners.append(listener)

    def _changed(self, what: str, value: object) -> None:
        for listener in list(self._listeners):
            listener(what, value)

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def pause(self) -> None:
        self._resume.clear()
        self._changed("pause", True)

    def resume(self) -> None:
        self._resume.set()
        self._changed("pause", False)

    def toggle_pause(self) -> None:
        self.resume() if self.paused else self.pause()

    def request_abort_after_current(self) -> None:
        self.abort_after_current = True
        self._resume.set()  # a paused loop wakes up to end the run instead of running one more session
        self._changed("abort-after-current", True)

    def stop(self) -> None:
        self._stop.set()
        self._resume.set()
        self._changed("stop", True)

    def set_shared_context(self, value: bool) -> None:
        self.shared_context = value
        self._changed("set-shared-context", value)

    def apply(self, action: str, value: object = None) -> None:
        """Apply a dashboard/API action by name."""
        if action == "pause":
            self.pause()
        elif action == "resume":
            self.resume()
        elif action == "abort-after-current":
            self.request_abort_after_current()
        elif action == "stop":
            self.stop()
        elif action == "set-shared-context":
            if not isinstance(value, bool):
                raise ControlError("set-shared-context needs a boolean 'value'")
            self.set_shared_context(value)
        else:
            raise ControlError(f"unknown action {action!r}; expected one of {', '.join(CONTROL_ACTIONS)}")

    async def wait_until_resumed(self) -> None:
        await self._resume.wait()

    async def wait_for_stop(self) -> None:
        await self._stop.wait()

    def begin_question_round(self) -> None:
        """Forget answers left over from an earlier round (e.g. extra pasted lines)."""
        while not self._answers.empty():
            self._answers.get_nowait()

    def submit_answers(self, answers: list[AnswerItem]) -> None:
        if not answers:
            raise ControlError("no answers given")
        self._answers.put_nowait(answers)

    async def next_answers(self) -> list[AnswerItem] | None:
        """Wait for answers; None when the run is stopped meanwhile."""
        getter = asyncio.ensure_future(self._answers.get())
        stopper = asyncio.ensure_future(self._stop.wait())
        self.waiting_for_answers = True
        try:
            done, _ = await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.waiting_for_answers = False
            stopper.cancel()
        if getter in done:
            return getter.result()
        getter.cancel()
        return None
