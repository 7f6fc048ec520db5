"""Terminal input: one-letter controls and typed answers, read from stdin without threads.

Lines are read through the event loop (add_reader). A line that is a single control
key (x, p, s, q, ?) is a command; any other line answers the pending question
(a number picks an option). Piped stdin works too, so answers can be scripted.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable

from kilo_loop.loop.control import AnswerItem, RunControl
from kilo_loop.run.state import Question

KEY_HELP = (
    "keys (then Enter): X abort after this session · P pause/resume · S toggle shared context · "
    "Q stop now · ? help · any other text answers a pending question (a number picks an option)"
)


class TerminalInput:
    def __init__(
        self,
        control: RunControl,
        pending: Callable[[], list[Question]],
        say: Callable[[str], None],
        fd: int | None = None,
    ) -> None:
        self._control = control
        self._pending = pending
        self._say = say
        self._fd = sys.stdin.fileno() if fd is None else fd
        self._buffer = b""
        self._early_answers: list[str] = []
        self.open = False

    def start(self) -> bool:
        """Begin reading; False when stdin is not readable (closed, /dev/null)."""
        try:
            if os.isatty(self._fd) or not _at_eof_now(self._fd):
                asyncio.get_running_loop().add_reader(self._fd, self._on_readable)
                self.open = True
        except (OSError, ValueError, NotImplementedError):
            self.open = False
        return self.open

    def stop(self) -> None:
        if self.open:
            asyncio.get_running_loop().remove_reader(self._fd)
            self.open = False

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
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            self.handle_line(line.decode("utf-8", "replace"))

    def handle_line(self, line: str) -> None:
        text = line.strip()
        if not text and not self._control.waiting_for_answers:
            return
        if self.handle_key(text):
            return
        self.answer(text)

    def handle_key(self, text: str) -> bool:
        key = text.lower()
        actions: dict[str, Callable[[], None]] = {
            "x": self._abort,
            "p": self._pause,
            "s": self._shared,
            "q": self._stop,
            "?": lambda: self._say(KEY_HELP),
        }
        action = actions.get(key)
        if action is None:
            return False
        action()
        return True

    def answer(self, text: str) -> None:
        questions = self._pending()
        if not questions:
            self._early_answers.append(text)
            return
        self._control.submit_answers([AnswerItem(questions[0].question, text, "terminal")])

    def flush_early_answers(self) -> None:
        """Answers typed (or piped) before the question arrived."""
        questions = self._pending()
        if questions and self._early_answers:
            self._control.submit_answers([AnswerItem(questions[0].question, self._early_answers.pop(0), "terminal")])

    @property
    def has_early_answers(self) -> bool:
        return bool(self._early_answers)

    def _abort(self) -> None:
        self._control.request_abort_after_current()
        self._say("will abort after the current session (X)")

    def _pause(self) -> None:
        self._control.toggle_pause()
        self._say("paused: the next iteration waits (P to resume)" if self._control.paused else "resumed")

    def _shared(self) -> None:
        self._control.set_shared_context(not self._control.shared_context)
        mode = "one shared session" if self._control.shared_context else "fresh session + handoff"
        self._say(f"context from the next iteration: {mode}")

    def _stop(self) -> None:
        self._say("stopping now (Q): killing the agent session")
        self._control.stop()


def _at_eof_now(fd: int) -> bool:
    """True for /dev/null and other stdin that can never deliver a line."""
    try:
        return os.path.samefile(f"/proc/self/fd/{fd}", os.devnull)
    except OSError:
        return False
