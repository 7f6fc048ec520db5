"""What the operator reads: `?` at a question shows the keys (it is never recorded as the answer), and a
control change is logged in words ("stopping after this session"), not as `control: stop = True`."""

from __future__ import annotations

import os

from kilo_loop.loop.commands import Command, SubmitAnswers, control_message
from kilo_loop.run.state import Question, RunState
from kilo_loop.ui.terminal import KEY_HELP, TerminalInput


def terminal_with_a_question() -> tuple[TerminalInput, list[Command], list[str]]:
    state = RunState(run_id="r", project="/p", goal_title="g",
                     pending_questions=[Question(id="q1", question="Which one?", options=["a", "b"])])
    sent: list[Command] = []
    said: list[str] = []
    read_end, write_end = os.pipe()  # keys are fed by hand below; the pipe only stands in for stdin
    os.close(write_end)
    terminal = TerminalInput(sent.append, lambda: state, said.append, fd=read_end, echo=lambda _text: None)
    os.close(read_end)
    return terminal, sent, said


def test_question_mark_at_a_question_shows_the_keys_on_a_terminal() -> None:
    terminal, sent, said = terminal_with_a_question()
    for char in "?\n":  # the Enter after a lone `?` closes the help line; it is not an empty answer
        terminal.handle_char(char)
    assert said == [KEY_HELP] and sent == []
    for char in "a\n":
        terminal.handle_char(char)
    assert isinstance(sent[0], SubmitAnswers) and sent[0].items[0].answer == "a"


def test_question_mark_at_a_question_shows_the_keys_from_a_pipe() -> None:
    terminal, sent, said = terminal_with_a_question()
    terminal.handle_line("?")
    assert said == [KEY_HELP] and sent == []
    terminal.handle_line("what? this")  # a question mark inside an answer is an answer
    assert isinstance(sent[0], SubmitAnswers) and sent[0].items[0].answer == "what? this"


def test_control_changes_read_as_words() -> None:
    assert control_message("stop", True) == "stopping now: the agent's session is ended"
    assert control_message("abort-after-current", True) == "stopping after this session"
    assert control_message("pause", True).startswith("paused") and control_message("pause", False) == "resumed"
    assert control_message("set-shared-context", True).endswith("one shared session")
    assert control_message("set-prompt-extra", None) == "extra instructions cleared"
    assert "control:" not in " ".join(control_message(a, True) for a in ("stop", "pause", "abort-after-current"))
