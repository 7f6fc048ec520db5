"""Commands in: what the terminal keys, Ctrl+C and the dashboard may ask of a run, as data
on ONE queue. The run's command handler drains it, one command at a time: "may I revert now?"
and "is a question waiting?" are decided here and nowhere else. Every accepted command becomes
a `control` event (the reducer turns it into the state's flags, which the loop decides on) and
pulls the wake-up it needs (`RunControl`); every command gets a reply (accepted, or refused
with the reason and its kind).

To add a command: a frozen dataclass here, a case in `CommandHandler._apply`, and (if the
dashboard sends it) a name in `run/controls.py` and `command_for`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kilo_loop.errors import KiloLoopError
from kilo_loop.run import notes
from kilo_loop.run.control import AnswerItem, ControlError, RunControl
from kilo_loop.run.controls import ControlAction
from kilo_loop.run.events import ControlChanged, NoteQueued, NoteWithdrawn, Reverted
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.status import Phase, is_final

# While the agent may be writing files (or verify is running), a revert would race it.
REVERT_SAFE_STATUSES = frozenset({Phase.PAUSED, Phase.WAITING_ANSWER})


@dataclass(frozen=True)
class Pause:
    pass


@dataclass(frozen=True)
class Resume:
    pass


@dataclass(frozen=True)
class TogglePause:
    pass


@dataclass(frozen=True)
class StopNow:
    """Kill the running session (its process group) and end the run."""


@dataclass(frozen=True)
class AbortAfterSession:
    """Let the running session finish, then end the run."""


@dataclass(frozen=True)
class SetSharedContext:
    value: bool


@dataclass(frozen=True)
class SetPromptExtra:
    text: str | None


@dataclass(frozen=True)
class SubmitAnswers:
    items: tuple[AnswerItem, ...]


@dataclass(frozen=True)
class SendNote:
    """A note to the agent: queued now, carried by the next model request that can take it."""

    text: str
    source: str = "terminal"


@dataclass(frozen=True)
class WithdrawNote:
    note_id: str
    source: str = "terminal"


@dataclass(frozen=True)
class Revert:
    """Restore the checkpoint taken before `iteration` of `run` (None: this run)."""

    iteration: int
    run: str | None = None
    force: bool = False


Command = Pause | Resume | TogglePause | StopNow | AbortAfterSession | SetSharedContext | SetPromptExtra | \
    SubmitAnswers | SendNote | WithdrawNote | Revert


class Refusal(StrEnum):
    """Why a command is refused: the run's state forbids it now, what it names is not there, or it
    is malformed. (The dashboard turns each into its HTTP status, in one place: web/errors.py.)"""

    CONFLICT = "conflict"
    NOT_FOUND = "not-found"
    INVALID = "invalid"


class CommandRefused(KiloLoopError):
    """A command the run will not carry out now, and why."""

    def __init__(self, refusal: Refusal, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal
        self.message = message


@dataclass
class Reply:
    ok: bool = True
    result: Any = None


@dataclass
class _Envelope:
    command: Command
    reply: asyncio.Future[Reply] | None = field(default=None)


_SIMPLE: dict[ControlAction, Command] = {
    ControlAction.PAUSE: Pause(), ControlAction.RESUME: Resume(), ControlAction.ABORT_AFTER_CURRENT: AbortAfterSession(),
    ControlAction.STOP: StopNow(),
}


def command_for(name: str, value: object = None) -> Command:
    """The command an action names (the dashboard's `POST /api/control`, an inbox line, the fleet)."""
    try:
        action = ControlAction.named(name)
    except ValueError as exc:
        raise ControlError(str(exc)) from None
    simple = _SIMPLE.get(action)
    if simple is not None:
        return simple
    if action is ControlAction.SET_SHARED_CONTEXT:
        if not isinstance(value, bool):
            raise ControlError(f"{name} needs a boolean 'value'")
        return SetSharedContext(value)
    if action is ControlAction.SET_PROMPT_EXTRA:
        if value is not None and not isinstance(value, str):
            raise ControlError("set-prompt-extra needs a string 'value' (or null to clear it)")
        return SetPromptExtra(value)
    if action is ControlAction.NOTE:
        if not isinstance(value, str):
            raise ControlError("note needs the note's text as a string 'value'")
        return SendNote(value, "inbox")
    if action is ControlAction.WITHDRAW_NOTE:
        if not isinstance(value, str):
            raise ControlError("withdraw-note needs the note's id (n1, n2, …) as a string 'value'")
        return WithdrawNote(value, "inbox")
    raise ControlError(f"{name} is not a control: answers go to their own endpoint")


RevertFn = Callable[[Path, int, bool], Awaitable[Any]]
CheckpointsOf = Callable[[str | None], Path]


class CommandQueue:
    """The one way into a run: `send` (fire and forget, e.g. from a key press or a signal) or
    `ask` (await the reply, e.g. from an HTTP handler)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[_Envelope] = asyncio.Queue()

    def send(self, command: Command) -> None:
        self._queue.put_nowait(_Envelope(command))

    async def ask(self, command: Command) -> Reply:
        reply: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Envelope(command, reply))
        return await reply

    async def next(self) -> _Envelope:
        return await self._queue.get()

    def pending(self) -> list[_Envelope]:
        items: list[_Envelope] = []
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        return items


class CommandHandler:
    """Drains the queue for as long as the run goes; applies each command to the control
    flags and records it as an event of the live run."""

    def __init__(self, control: RunControl, recorder: RunRecorder, revert: RevertFn,
                 checkpoints_of: CheckpointsOf) -> None:
        self._control = control
        self._recorder = recorder
        self._revert = revert
        self._checkpoints_of = checkpoints_of

    async def serve(self, queue: CommandQueue) -> None:
        while True:
            envelope = await queue.next()
            await self.handle(envelope)

    def refuse_pending(self, queue: CommandQueue, why: str) -> None:
        """The run ended: commands still queued get a refusal instead of waiting forever."""
        for envelope in queue.pending():
            _settle(envelope, CommandRefused(Refusal.CONFLICT, why))

    async def handle(self, envelope: _Envelope) -> None:
        try:
            result = await self._apply(envelope.command)
        except CommandRefused as refused:
            if envelope.reply is None and isinstance(envelope.command, SendNote | WithdrawNote):
                self._recorder.warn(f"note refused: {refused.message}")  # nobody waits for the reply: say it here
            _settle(envelope, refused)
        except ControlError as exc:
            _settle(envelope, CommandRefused(Refusal.INVALID, str(exc)))
        else:
            _settle(envelope, Reply(True, result))

    async def _apply(self, command: Command) -> Any:
        control = self._control
        if isinstance(command, TogglePause):
            command = Resume() if self._recorder.state.paused else Pause()
        if isinstance(command, Pause):
            control.pause()
            return self._changed(ControlAction.PAUSE, True)
        if isinstance(command, Resume):
            control.resume()
            return self._changed(ControlAction.PAUSE, False)  # recorded as "pause = False", as it always was
        if isinstance(command, StopNow):
            control.stop()
            return self._changed(ControlAction.STOP, True)
        if isinstance(command, AbortAfterSession):
            control.resume()  # a paused loop wakes up to end the run instead of running one more session
            return self._changed(ControlAction.ABORT_AFTER_CURRENT, True)
        if isinstance(command, SetSharedContext):
            return self._changed(ControlAction.SET_SHARED_CONTEXT, command.value)
        if isinstance(command, SetPromptExtra):
            text = command.text.strip() if command.text and command.text.strip() else None
            return self._changed(ControlAction.SET_PROMPT_EXTRA, text)
        if isinstance(command, SubmitAnswers):
            return self._answers(command)
        if isinstance(command, SendNote):
            return self._note(command)
        if isinstance(command, WithdrawNote):
            return self._withdraw(command)
        return await self._revert_now(command)

    def _note(self, command: SendNote) -> dict[str, Any]:
        state = self._recorder.state
        if is_final(state.status) or state.stop_requested:
            raise CommandRefused(Refusal.CONFLICT, f"the run is {state.status}: a note would reach no agent; "
                                 "start or --resume a run to send one")
        try:
            text = notes.check_text(command.text)
            note_id = notes.next_id(state.notes)
        except notes.NoteRefused as exc:
            raise CommandRefused(Refusal.INVALID, str(exc)) from None
        self._recorder.emit(NoteQueued(message=f"note {note_id} for the agent (from the {command.source}): queued",
                                       note_id=note_id, text=text, source=command.source))
        recorded = next(n for n in self._recorder.state.notes if n.id == note_id)
        self._control.note_queued()
        return {"id": note_id, "status": recorded.status, "masked": recorded.text != text}

    def _withdraw(self, command: WithdrawNote) -> dict[str, Any]:
        try:
            notes.withdrawable(self._recorder.state.notes, command.note_id)
        except notes.NoteRefused as exc:
            kind = Refusal.NOT_FOUND if "no note" in str(exc) else Refusal.CONFLICT
            raise CommandRefused(kind, str(exc)) from None
        self._recorder.emit(NoteWithdrawn(message=f"note {command.note_id} withdrawn (from the {command.source})",
                                          note_id=command.note_id, source=command.source))
        return {"id": command.note_id, "status": notes.WITHDRAWN}

    def _changed(self, action: ControlAction, value: object) -> None:
        self._recorder.emit(ControlChanged(message=control_message(action, value), action=action, value=value))

    def _answers(self, command: SubmitAnswers) -> None:
        if not self._control.waiting_for_answers and not self._recorder.state.pending_questions:
            raise CommandRefused(Refusal.CONFLICT, "no question is waiting for an answer")
        self._control.submit_answers(list(command.items))

    async def _revert_now(self, command: Revert) -> Any:
        status = self._recorder.state.status
        if status not in REVERT_SAFE_STATUSES:
            raise CommandRefused(
                Refusal.CONFLICT, f"the run is {status}: the agent may be writing files — pause the run "
                "(and wait for 'paused') before reverting any checkpoint")
        result = await self._revert(self._checkpoints_of(command.run), command.iteration, command.force)
        own = command.run in (None, self._recorder.state.run_id)
        source = "" if own else f" of run {command.run}"
        restored, deleted = len(getattr(result, "restored", ())), len(getattr(result, "deleted", ()))
        self._recorder.emit(Reverted(
            message=f"reverted to the checkpoint before iteration {command.iteration}{source}: "
            f"{restored} restored, {deleted} deleted",
            iteration_reverted=command.iteration, run=None if own else command.run))
        return result


def control_message(action: str, value: object) -> str:
    """The log line of a control change as the operator reads it (the event's data keeps action and value)."""
    if action == "pause":
        return "paused: the next iteration waits until you resume" if value else "resumed"
    if action == "stop":
        return "stopping now: the agent's session is ended"
    if action == "abort-after-current":
        return "stopping after this session"
    if action == "set-shared-context":
        return "from the next iteration: " + ("one shared session" if value else "a fresh session with a handoff")
    if action == "set-prompt-extra":
        return "extra instructions changed" if value else "extra instructions cleared"
    return f"control: {action} = {value}"


def _settle(envelope: _Envelope, outcome: Reply | CommandRefused) -> None:
    reply = envelope.reply
    if reply is None or reply.done():
        return
    if isinstance(outcome, CommandRefused):
        reply.set_exception(outcome)
    else:
        reply.set_result(outcome)


async def stop_serving(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
