"""The loop's control flags (paused, stop, abort after the session, shared context, the
operator's instructions) and the answer hand-over. Only the command handler
(`loop/commands.py`) changes them; the orchestrator reads them between (and, for stop,
during) iterations. Terminal keys and the dashboard send commands, never call these."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


@dataclass(frozen=True)
class AnswerItem:
    question: str
    answer: str
    source: str = "terminal"


class ControlError(ValueError):
    pass


class RunControl:
    def __init__(self, shared_context: bool = False) -> None:
        self._resume = asyncio.Event()
        self._resume.set()
        self._stop = asyncio.Event()
        self._answers: asyncio.Queue[list[AnswerItem]] = asyncio.Queue()
        self.abort_after_current = False
        self.shared_context = shared_context
        self.waiting_for_answers = False
        self.prompt_extra: str | None = None

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def pause(self) -> None:
        self._resume.clear()

    def resume(self) -> None:
        self._resume.set()

    def request_abort_after_current(self) -> None:
        self.abort_after_current = True
        self._resume.set()  # a paused loop wakes up to end the run instead of running one more session

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
