"""A steered run's inbox: every command appended after the run attached is taken, whenever the run's
follower task first gets to run; what a run took is not replayed by its next process, and what was
sent while no process followed is not dropped."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kilo_loop.fleet.attach import attach_inbox
from kilo_loop.fleet.inbox import (
    INBOX_FILE,
    TAKEN_FILE,
    InboxCommand,
    append_command,
    follow_inbox,
    start_offset,
)
from kilo_loop.loop.commands import SendNote, SubmitAnswers, WithdrawNote
from kilo_loop.run.control import AnswerItem
from kilo_loop.run.state import Question


@dataclass
class _Handle:
    """What attach_inbox uses of a RunHandle: its run directory, state, command queue and warnings."""

    run_dir: Path
    resumed: bool = False
    sent: list[Any] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    answer_channels: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.layout = SimpleNamespace(dir=self.run_dir)
        self.recorder = SimpleNamespace(warn=self.warnings.append)

    @property
    def state(self) -> SimpleNamespace:
        return SimpleNamespace(pending_questions=self.questions)

    def send(self, command: Any) -> None:
        self.sent.append(command)


async def _until(condition: Any, what: str, within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.01)


def test_an_answer_appended_before_the_follower_first_runs_is_taken(tmp_path: Path) -> None:
    """The race the steered-run test hit one time in three, made to happen every time: the run attaches
    its inbox, publishes its question and only then first yields; the answer lands in between."""
    handle = _Handle(tmp_path)

    async def scenario() -> None:
        detach = attach_inbox(handle)  # type: ignore[arg-type]
        handle.questions.append(Question(question="Loop policy?", options=["manual", "auto 1"]))
        append_command(tmp_path, InboxCommand("answer", answers=("auto 1",)))  # before any await
        try:
            await _until(lambda: handle.sent, "the answer delivered")
        finally:
            detach()

    asyncio.run(scenario())
    assert handle.sent == [SubmitAnswers((AnswerItem("Loop policy?", "auto 1", "dashboard"),))]
    assert handle.warnings == []


def test_notes_and_withdrawals_take_the_same_path(tmp_path: Path) -> None:
    handle = _Handle(tmp_path)

    async def scenario() -> None:
        detach = attach_inbox(handle)  # type: ignore[arg-type]
        append_command(tmp_path, InboxCommand("note", text="use the v2 API"))
        append_command(tmp_path, InboxCommand("withdraw-note", text="n1"))
        try:
            await _until(lambda: len(handle.sent) == 2, "the note and the withdrawal delivered")
        finally:
            detach()

    asyncio.run(scenario())
    assert handle.sent == [SendNote("use the v2 API", "fleet"), WithdrawNote("n1", "fleet")]


def test_a_fresh_run_takes_what_was_sent_while_its_process_started(tmp_path: Path) -> None:
    """A fleet worker appends what Redis holds for the run while the plan's process is starting."""
    append_command(tmp_path, InboxCommand("note", text="sent early"))
    assert start_offset(tmp_path, resumed=False) == 0
    assert _followed(tmp_path, 0) == [InboxCommand("note", text="sent early")]


def test_what_a_run_took_is_recorded_and_not_replayed_by_its_next_process(tmp_path: Path) -> None:
    append_command(tmp_path, InboxCommand("pause"))
    assert _followed(tmp_path, start_offset(tmp_path, resumed=False)) == [InboxCommand("pause")]
    taken = (tmp_path / INBOX_FILE).stat().st_size
    assert (tmp_path / TAKEN_FILE).read_text() == str(taken)
    append_command(tmp_path, InboxCommand("resume"))  # sent while no process followed the run
    assert start_offset(tmp_path, resumed=True) == taken
    assert _followed(tmp_path, taken) == [InboxCommand("resume")]


def test_a_run_resumed_without_a_record_starts_at_the_end(tmp_path: Path) -> None:
    append_command(tmp_path, InboxCommand("stop"))
    assert start_offset(tmp_path, resumed=True) == (tmp_path / INBOX_FILE).stat().st_size
    assert start_offset(tmp_path / "none", resumed=True) == 0


def test_a_record_past_the_inbox_end_starts_at_the_end(tmp_path: Path) -> None:
    """A run directory archived while followed: the record may be newer than the inbox copied with it."""
    append_command(tmp_path, InboxCommand("pause"))
    (tmp_path / TAKEN_FILE).write_text("999")
    assert start_offset(tmp_path, resumed=True) == (tmp_path / INBOX_FILE).stat().st_size


def test_a_torn_line_waits_and_garbage_is_reported(tmp_path: Path) -> None:
    inbox = tmp_path / INBOX_FILE
    inbox.write_bytes(b'not json\n[1]\n\n{"command": "pause"}\n{"command": "res')
    warnings: list[str] = []
    assert _followed(tmp_path, 0, warnings) == [InboxCommand("pause")]
    assert len(warnings) == 2 and all("not a JSON object" in w for w in warnings)
    assert int((tmp_path / TAKEN_FILE).read_text()) == inbox.stat().st_size - len(b'{"command": "res')
    with inbox.open("ab") as handle:
        handle.write(b'ume"}\n')
    assert _followed(tmp_path, start_offset(tmp_path, resumed=True)) == [InboxCommand("resume")]


def _followed(run_dir: Path, offset: int, warnings: list[str] | None = None) -> list[InboxCommand]:
    """What one pass of the follower delivers from `offset` (stop is already true: it drains and ends)."""
    taken: list[InboxCommand] = []
    asyncio.run(follow_inbox(run_dir, offset, taken.append, (warnings if warnings is not None else []).append,
                             lambda: True))
    return taken

