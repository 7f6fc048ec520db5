"""Notes to the agent: what a note may be, its life as events (queued -> delivered -> acknowledged, or
withdrawn), replayed into the same state, redacted, and carried first thing by the next prompt."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kilo_loop.agent.protocol import PromptCarried
from kilo_loop.agent.serve.mapping import TurnMapper
from kilo_loop.goal.model import Goal, Stage
from kilo_loop.loop.commands import (
    CommandHandler,
    CommandRefused,
    Refusal,
    SendNote,
    WithdrawNote,
    command_for,
)
from kilo_loop.loop.progress import progress_from_object
from kilo_loop.loop.prompt import PromptInput, build_prompt
from kilo_loop.redact import Redactor
from kilo_loop.run import notes
from kilo_loop.run.bus import EventBus
from kilo_loop.run.control import RunControl
from kilo_loop.run.events import NoteAcknowledged, NoteDelivered, RunFinished, from_wire
from kilo_loop.run.layout import RunLayout
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.reducer import replay
from kilo_loop.run.state import Note, RunState
from kilo_loop.run.status import StopReason
from kilo_loop.run.store import read_events

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _recorder(tmp_path: Path) -> tuple[RunRecorder, CommandHandler, RunControl]:
    layout = RunLayout(tmp_path / "run")
    layout.dir.mkdir(parents=True)
    redactor = Redactor()
    bus = EventBus(layout.events, redactor.redact_value)
    state = RunState(run_id="r1", project="/p", goal_title="g")
    recorder = RunRecorder(layout, state, bus, redactor.redact_value)
    recorder.open(state, resumed=False)

    async def no_revert(path: Path, iteration: int, force: bool) -> None:
        raise AssertionError("not sent")

    control = RunControl()
    return recorder, CommandHandler(control, recorder, no_revert, lambda run: layout.checkpoints), control


async def _ask(handler: CommandHandler, command: Any) -> Any:
    from kilo_loop.loop.commands import _Envelope

    reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    await handler.handle(_Envelope(command, reply))
    return (await reply).result


def test_a_note_must_have_text_and_fit_in_8_kb() -> None:
    with pytest.raises(notes.NoteRefused, match="empty"):
        notes.check_text("   \n")
    with pytest.raises(notes.NoteRefused, match="8 KB"):
        notes.check_text("x" * (8 * 1024 + 1))
    assert notes.check_text("  use utils/  ") == "use utils/"
    assert len(notes.check_text("é" * 4096)) == 4096  # 8 KB of UTF-8 exactly


async def test_a_note_lives_queued_delivered_acknowledged_and_replays_the_same(tmp_path: Path) -> None:
    recorder, handler, control = _recorder(tmp_path)
    first = await _ask(handler, SendNote("use the helper in utils/, not a new one", "api"))
    assert first == {"id": "n1", "status": "queued", "masked": False}
    second = await _ask(handler, SendNote("and keep the tests", "terminal"))
    assert second["id"] == "n2"
    await asyncio.wait_for(control.wait_for_notes(), 1)  # a live session's deliverer is woken
    await _ask(handler, WithdrawNote("n2", "api"))
    recorder.emit(NoteDelivered(message="d", note_ids=["n1", "n2"], via="live", session_id="ses_1"))
    recorder.emit(NoteAcknowledged(message="a", note_ids=["n1"], how="reply"))
    by_id = {n.id: n for n in recorder.state.notes}
    assert by_id["n1"].status == "acknowledged" and by_id["n1"].delivered_via == "live"
    assert by_id["n2"].status == "withdrawn"  # a withdrawn note is never delivered
    rebuilt = replay([from_wire(w) for w in read_events(recorder.layout.events)])
    assert rebuilt is not None and rebuilt.notes == recorder.state.notes


async def test_bad_notes_get_a_clear_refusal_and_nothing_is_recorded(tmp_path: Path) -> None:
    recorder, handler, _control = _recorder(tmp_path)
    with pytest.raises(CommandRefused, match="empty") as empty:
        await _ask(handler, SendNote(""))
    assert empty.value.refusal is Refusal.INVALID
    with pytest.raises(CommandRefused, match="8 KB"):
        await _ask(handler, SendNote("y" * 9000))
    with pytest.raises(CommandRefused, match="no note 'n9'") as missing:
        await _ask(handler, WithdrawNote("n9"))
    assert missing.value.refusal is Refusal.NOT_FOUND
    await _ask(handler, SendNote("one"))
    recorder.emit(NoteDelivered(message="d", note_ids=["n1"], via="prompt"))
    with pytest.raises(CommandRefused, match="only a queued note"):
        await _ask(handler, WithdrawNote("n1"))
    recorder.emit(RunFinished(message="end", status=StopReason.DONE))
    recorder.set_status(StopReason.DONE)
    with pytest.raises(CommandRefused, match="a note would reach no agent") as finished:
        await _ask(handler, SendNote("too late"))
    assert finished.value.refusal is Refusal.CONFLICT
    assert [n.id for n in recorder.state.notes] == ["n1"]


async def test_a_note_holding_a_secret_is_redacted_in_every_record(tmp_path: Path) -> None:
    recorder, handler, _control = _recorder(tmp_path)
    reply = await _ask(handler, SendNote(f"the deploy token is {SECRET}, use it"))
    assert reply["masked"] is True
    assert SECRET not in recorder.state.notes[0].text and "use it" in recorder.state.notes[0].text
    assert SECRET not in recorder.layout.events.read_text(encoding="utf-8")


def test_the_inbox_and_fleet_name_notes_with_the_one_vocabulary() -> None:
    assert command_for("note", "hello") == SendNote("hello", "inbox")
    assert command_for("withdraw-note", "n3") == WithdrawNote("n3", "inbox")


def test_queued_notes_come_first_in_the_prompt_with_how_to_confirm_them() -> None:
    goal = Goal(title="g", kind="markdown", stages=[Stage(id="s1", title="one")])
    prompt = build_prompt(PromptInput(goal=goal, stage=goal.stages[0], iteration=2, max_iterations=5,
                                      completed=set(), prompt_extra="extra", notes=[Note(id="n1", text="use utils/")]))
    assert prompt.startswith("## Notes from the operator")
    assert "[n1] use utils/" in prompt and "noted n1" in prompt and '"n1"' in prompt
    assert prompt.index("use utils/") < prompt.index("extra")


def test_the_agent_acknowledges_in_its_reply_or_in_progress_json() -> None:
    waiting = [Note(id="n1", text="a", status="delivered"), Note(id="n2", text="b", status="delivered")]
    assert notes.acknowledged_in_reply("Noted n1 and n2. Now on to it", waiting) == ["n1", "n2"]
    assert notes.acknowledged_in_reply("I read n1 somewhere", waiting) == []
    seen = progress_from_object({"notesSeen": ["n2", 7]}).notes_seen
    assert notes.acknowledged_in_progress(seen, waiting) == ["n2"]


def test_the_serve_stream_shows_which_request_carried_an_injected_note() -> None:
    mapper = TurnMapper("ses_1")
    mapper.injected["## Notes n1"] = "n1"
    part = {"id": "prt_1", "type": "text", "text": "## Notes n1", "messageID": "msg_u", "sessionID": "ses_1"}
    assert mapper.feed({"type": "message.updated", "properties": {"info": {
        "id": "msg_u", "role": "user", "sessionID": "ses_1"}}}) == []
    assert mapper.feed({"type": "message.part.updated", "properties": {"part": part}}) == []  # the user's, not output
    assert mapper.awaiting_injection
    carried = mapper.feed({"type": "message.updated", "properties": {"info": {
        "id": "msg_a", "role": "assistant", "parentID": "msg_u", "sessionID": "ses_1"}}})
    assert carried == [PromptCarried("n1")] and not mapper.awaiting_injection


def test_note_events_survive_the_wire() -> None:
    event = NoteDelivered(message="d", note_ids=["n1"], via="live", session_id="s", seq=3, ts="t")
    assert from_wire(event.to_wire()) == event


def _terminal(sent: list[Any], said: list[str]) -> Any:
    import os

    from kilo_loop.ui.terminal import TerminalInput

    state = RunState(run_id="r", project="/p", goal_title="g")
    read_end, write_end = os.pipe()  # keys are fed by hand; the pipe only stands in for stdin
    os.close(write_end)
    terminal = TerminalInput(sent.append, lambda: state, said.append, fd=read_end, echo=lambda _text: None)
    os.close(read_end)
    return terminal


def test_the_terminal_sends_a_note_after_n_and_refuses_a_bad_one_in_words() -> None:
    sent: list[Any] = []
    said: list[str] = []
    terminal = _terminal(sent, said)
    for char in "nuse utils/ quietly\n":  # the typed `q` and `p` are the note's, not Stop and Pause
        terminal.handle_char(char)
    assert sent == [SendNote("use utils/ quietly", "terminal")]
    terminal.handle_line("n")
    terminal.handle_line("")  # an empty line cancels
    assert "no note sent" in said[-1] and len(sent) == 1
    terminal.handle_line("n")
    terminal.handle_line("z" * 9000)
    assert "8 KB" in said[-1] and len(sent) == 1


def test_the_fleet_inbox_carries_notes_and_withdrawals() -> None:
    from kilo_loop.fleet.inbox import InboxCommand, parse_command

    note = parse_command({"command": "note", "text": "keep utils/"})
    assert note == InboxCommand("note", text="keep utils/")
    assert parse_command(note.to_wire()) == note
    assert parse_command({"command": "withdraw-note", "text": "n2"}).text == "n2"
    with pytest.raises(ValueError, match="'text'"):
        parse_command({"command": "note", "value": True})


class _LiveRun:
    """A serve-like run: it works until told, takes injected text, and answers it as kilo's server does."""

    def __init__(self) -> None:
        from kilo_loop.agent.protocol import AgentResult

        self.result = AgentResult(exit_code=None)
        self.injected: list[tuple[str, str]] = []
        self._events: asyncio.Queue[Any] = asyncio.Queue()

    async def inject(self, text: str, token: str) -> bool:
        from kilo_loop.agent.protocol import Text

        self.injected.append((text, token))
        self._events.put_nowait(PromptCarried(token))
        self._events.put_nowait(Text(f"noted {token}: on it"))
        self._events.put_nowait(None)
        return True

    async def kill(self, reason: str) -> None:
        self._events.put_nowait(None)

    async def events(self) -> Any:
        from kilo_loop.agent.protocol import SessionStarted

        yield SessionStarted("ses_live")
        while (event := await self._events.get()) is not None:
            yield event
        self.result.exit_code = 0


class _Backend:
    name = "live"

    def __init__(self) -> None:
        self.run = _LiveRun()

    def start(self, request: Any) -> _LiveRun:
        return self.run


async def test_a_note_queued_mid_session_goes_into_the_live_session_and_its_reply_acknowledges_it(
        tmp_path: Path) -> None:
    from kilo_loop.agent.protocol import AgentRequest
    from kilo_loop.session.runner import SessionRunner

    recorder, handler, control = _recorder(tmp_path)
    backend = _Backend()
    runner = SessionRunner(backend, recorder, control, None, lambda step: None, takes_notes=True)  # type: ignore[arg-type]
    session = asyncio.create_task(runner.run(AgentRequest(prompt="work", cwd=tmp_path, title="t"), []))
    await _ask(handler, SendNote("use utils/", "api"))
    await asyncio.wait_for(session, 5)
    assert [token for _text, token in backend.run.injected] == ["n1"]
    assert backend.run.injected[0][0].startswith("## Notes from the operator") and "[n1] use utils/" in (
        backend.run.injected[0][0])
    [note] = recorder.state.notes
    assert (note.status, note.delivered_via, note.acknowledged_how) == ("acknowledged", "live", "reply")


async def test_a_reviewers_session_takes_no_notes(tmp_path: Path) -> None:
    from kilo_loop.agent.protocol import AgentRequest
    from kilo_loop.session.runner import SessionRunner

    recorder, handler, control = _recorder(tmp_path)
    backend = _Backend()
    runner = SessionRunner(backend, recorder, control, None, lambda step: None)  # type: ignore[arg-type]
    session = asyncio.create_task(runner.run(AgentRequest(prompt="review", cwd=tmp_path, title="t")))
    await _ask(handler, SendNote("use utils/", "api"))
    await asyncio.sleep(0)
    await backend.run.kill("done")
    await asyncio.wait_for(session, 5)
    assert backend.run.injected == [] and recorder.state.notes[0].status == "queued"
