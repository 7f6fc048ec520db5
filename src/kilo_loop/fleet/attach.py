"""A run steered from outside its process: the parent of parallel plans or a fleet worker writes
commands into the run's inbox, and this turns them into the run's own controls and answers."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from kilo_loop.fleet.child import INBOX_ENV
from kilo_loop.fleet.inbox import InboxCommand, follow_inbox, start_offset
from kilo_loop.loop.commands import SendNote, SubmitAnswers, WithdrawNote, command_for
from kilo_loop.run.control import AnswerItem, ControlError

if TYPE_CHECKING:
    from kilo_loop.runner import RunHandle


def inbox_requested() -> bool:
    return bool(os.environ.get(INBOX_ENV))


def deliver(handle: RunHandle, command: InboxCommand) -> None:
    """Onto the run's one command queue, like a key in the terminal or a button in the dashboard."""
    if command.command == "note":
        handle.send(SendNote(command.text or "", "fleet"))
        return
    if command.command == "withdraw-note":
        handle.send(WithdrawNote(command.text or "", "fleet"))
        return
    if command.command != "answer":
        handle.send(command_for(command.command, command.value))
        return
    questions = handle.state.pending_questions
    if not questions:
        raise ControlError("no question is waiting for an answer")
    items = [AnswerItem(q.question, a.strip(), "dashboard") for q, a in zip(questions, command.answers, strict=False)
             if a.strip()]
    if not items:
        raise ControlError("every answer is empty")
    handle.send(SubmitAnswers(tuple(items)))


def attach_inbox(handle: RunHandle) -> Callable[[], None]:
    """Follow `<run dir>/inbox.jsonl` while the run lives; questions wait for answers from it."""
    stopped = {"flag": False}

    def safe_deliver(command: InboxCommand) -> None:
        try:
            deliver(handle, command)
        except ControlError as exc:
            handle.recorder.warn(f"inbox command {command.command} ignored: {exc}")

    # Where to start is decided now, not when the task first runs: that is only when the run first
    # yields, which can be after it published its first question (and after an answer to it arrived).
    offset = start_offset(handle.layout.dir, handle.resumed)
    task = asyncio.get_running_loop().create_task(
        follow_inbox(handle.layout.dir, offset, safe_deliver, handle.recorder.warn, lambda: stopped["flag"]))
    handle.answer_channels.append(lambda: not task.done())

    def detach() -> None:
        stopped["flag"] = True

    return detach
