"""Terminal input: single-key controls and typed answers, read from stdin without threads.

On a terminal, stdin is put in cbreak mode (Ctrl+C still raises SIGINT): with no
question pending, X / P / S / Q / ? act at once; otherwise typed text is echoed and
Enter submits it as the answer (a number picks an option). Piped stdin is read line
by line (a line that is a single control key is that command), so answers can be
scripted. The terminal mode is always restored: on stop(), at exit, and on signals.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sys
import termios
import tty
from collections.abc import Callable
from typing import Any

from kilo_loop.loop.commands import (
    AbortAfterSession,
    Command,
    SendNote,
    SetSharedContext,
    StopNow,
    SubmitAnswers,
    TogglePause,
)
from kilo_loop.run import notes
from kilo_loop.run.control import AnswerItem
from kilo_loop.run.state import Question, RunState

KEY_HELP = (
    "keys: X abort after this session · P pause/resume · S toggle shared context · Q stop now · "
    "N a note to the agent (type it, Enter sends) · "
    "? help · Ctrl+C stop (twice: force exit) · when a question is pending, type the answer "
    "(a number picks an option) and press Enter"
)
_ERASE = ("\x7f", "\b")
_SHOW_CURSOR = "\x1b[?25h"


class TerminalMode:
    """cbreak on a TTY, with restoration guaranteed however the process ends."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._saved: list[Any] | None = None

    def enter(self) -> None:
        self._saved = termios.tcgetattr(self._fd)
        tty.setcbreak(self._fd)
        atexit.register(self.restore)

    def restore(self) -> None:
        if self._saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            self._saved = None
            sys.stdout.write(_SHOW_CURSOR)
            sys.stdout.flush()


class TerminalInput:
    """Reads keys and answers; sends commands to the run and reads its state, nothing more."""

    def __init__(
        self,
        send: Callable[[Command], None],
        state: Callable[[], RunState],
        say: Callable[[str], None],
        fd: int | None = None,
        echo: Callable[[str], None] | None = None,
    ) -> None:
        self._send = send
        self._state = state
        self._say = say
        self._fd = sys.stdin.fileno() if fd is None else fd
        self._echo = echo or _write_stdout
        self._is_tty = os.isatty(self._fd)
        self._mode = TerminalMode(self._fd) if self._is_tty else None
        self._buffer = b""
        self._typed = ""
        self._help_shown = False  # `?` was the line so far: its Enter closes the line, it answers nothing
        self._early_answers: list[str] = []
        self._round: list[str] = []
        self._noting = False  # after N: the next line is a note to the agent
        self.open = False

    def start(self) -> bool:
        """Begin reading; False when stdin cannot deliver input (closed, /dev/null)."""
        try:
            if not self._is_tty and _at_eof_now(self._fd):
                return False
            if self._mode is not None:
                self._mode.enter()
            asyncio.get_running_loop().add_reader(self._fd, self._on_readable)
            self.open = True
        except (OSError, ValueError, NotImplementedError, termios.error):
            self.open = False
        return self.open

    def stop(self) -> None:
        if self.open:
            asyncio.get_running_loop().remove_reader(self._fd)
            self.open = False
        if self._mode is not None:
            self._mode.restore()

    def _on_readable(self) -> None:
        try:
            chunk = os.read(self._fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            self.stop()
            if self._buffer:
                self.handle_line(self._buffer.decode("utf-8", "replace"))
            return
        if self._is_tty:
            for char in chunk.decode("utf-8", "replace"):
                self.handle_char(char)
            return
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            self.handle_line(line.decode("utf-8", "replace"))

    # ----------------------------------------------------------- tty input
    def handle_char(self, char: str) -> None:
        if char in ("\r", "\n"):
            line, self._typed = self._typed, ""
            after_help, self._help_shown = self._help_shown, False
            self._echo("\n")
            if self._noting:
                self._note(line)
            elif line.strip() or (self._pending() and not after_help):  # an empty Enter answers "nothing to add"
                self.answer(line.strip())
            return
        if char in _ERASE:
            if self._typed:
                self._typed = self._typed[:-1]
                self._echo("\b \b")
            return
        if not self._typed and not self._noting and (char == "?" or not self._pending()) and self.handle_key(char):
            self._help_shown = char == "?"
            return  # `?` shows the keys even at a question (no answer is a lone "?")
        self._help_shown = False
        if char.isprintable():
            self._typed += char
            self._echo(char)

    # ---------------------------------------------------------- line input
    def handle_line(self, line: str) -> None:
        text = line.strip()
        if self._noting:
            self._note(text)
            return
        if not text:
            return
        if (text == "?" or not self._pending()) and self.handle_key(text):
            return
        self.answer(text)

    def handle_key(self, text: str) -> bool:
        actions: dict[str, Callable[[], None]] = {
            "x": self._abort, "p": self._pause, "s": self._shared, "q": self._stop, "n": self._start_note,
            "?": lambda: self._say(KEY_HELP),
        }
        action = actions.get(text.lower())
        if action is None:
            return False
        action()
        return True

    def answer(self, text: str) -> None:
        """One line answers the next pending question; the round is submitted once all have one."""
        questions = self._pending()
        if not questions:
            self._early_answers.append(text)
            return
        self._round.append(text)
        if len(self._round) < len(questions):
            self._say(f"next question ({len(self._round) + 1}/{len(questions)}): "
                      f"{questions[len(self._round)].question}")
            return
        answers = [AnswerItem(q.question, a, "terminal") for q, a in zip(questions, self._round, strict=False)]
        self._round = []
        self._send(SubmitAnswers(tuple(answers)))

    def flush_early_answers(self) -> None:
        """Answers typed (or piped) before the questions arrived, one per pending question."""
        self._round = []
        count = len(self._pending())
        take, self._early_answers = self._early_answers[:count], self._early_answers[count:]
        for text in take:
            self.answer(text)

    @property
    def has_early_answers(self) -> bool:
        return bool(self._early_answers)

    # --------------------------------------------------------------- keys
    def _pending(self) -> list[Question]:
        return self._state().pending_questions

    def _abort(self) -> None:
        self._send(AbortAfterSession())
        self._say("X: will abort after the current session")

    def _pause(self) -> None:
        pausing = not self._state().paused
        self._send(TogglePause())
        self._say("P: paused — the next iteration waits (P again to resume)" if pausing else "P: resumed")

    def _shared(self) -> None:
        shared = not self._state().shared_context
        self._send(SetSharedContext(shared))
        mode = "one shared session" if shared else "fresh session + handoff"
        self._say(f"S: context from the next iteration: {mode}")

    def _start_note(self) -> None:
        self._noting = True
        self._say("N: type a note for the agent and press Enter (an empty line cancels)")

    def _note(self, text: str) -> None:
        self._noting = False
        if not text.strip():
            self._say("N: no note sent")
            return
        try:
            notes.check_text(text)
        except notes.NoteRefused as exc:
            self._say(f"N: not sent: {exc}")
            return
        self._send(SendNote(text, "terminal"))
        self._say("N: note queued: it goes with the agent's next model request (its life shows in the log)")

    def _stop(self) -> None:
        self._say("Q: stopping now — killing the agent session")
        self._send(StopNow())


def _write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _at_eof_now(fd: int) -> bool:
    """True for /dev/null and other stdin that can never deliver a line."""
    try:
        return os.path.samefile(f"/proc/self/fd/{fd}", os.devnull)
    except OSError:
        return False
