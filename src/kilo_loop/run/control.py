"""The live run's wake-ups: a paused loop waits to be resumed, a running session or verify waits
for Stop, a question waits for its answers. Only asyncio events and the answer queue live here;
the flags the loop decides on (paused, stop, abort after the session, shared context, the
operator's instructions) are the state's, written by the reducer from `control` events.
Only the command handler (`loop/commands.py`) pulls these strings; terminal keys and the
dashboard send commands, never call these."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kilo_loop.errors import KiloLoopError


@dataclass(frozen=True)
class AnswerItem:
    question: str
    answer: str
    source: str = "terminal"


class ControlError(KiloLoopError, ValueError):
    """A command the run cannot take as given (a wrong value, no question waiting)."""


class RunControl:
    def __init__(self) -> None:
        self._resume = asyncio.Event()
        self._resume.set()
        self._stop = asyncio.Event()
        self._answers: asyncio.Queue[list[AnswerItem]] = asyncio.Queue()
        self.waiting_for_answers = False
        self._notes = asyncio.Event()

    def note_queued(self) -> None:
        """Wake whatever delivers notes into a running session (serve)."""
        self._notes.set()

    async def wait_for_notes(self) -> None:
        """Until a note was queued since the last wait."""
        await self._notes.wait()
        self._notes.clear()

    def pause(self) -> None:
        self._resume.clear()

    def resume(self) -> None:
        """Also wakes a paused loop to end the run (abort after the session)."""
        self._resume.set()

    def stop(self) -> None:
        self._stop.set()
        self._resume.set()

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

    async def next_answers(self, timeout: float | None = None) -> list[AnswerItem] | None:
        """Wait for answers; None when the run is stopped meanwhile; TimeoutError after `timeout` s."""
        getter = asyncio.ensure_future(self._answers.get())
        stopper = asyncio.ensure_future(self._stop.wait())
        self.waiting_for_answers = True
        try:
            done, _ = await asyncio.wait({getter, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.waiting_for_answers = False
            stopper.cancel()
        if getter in done:
            return getter.result()
        getter.cancel()
        if stopper in done or self._stop.is_set():
            return None
        raise TimeoutError
