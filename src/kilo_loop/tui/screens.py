"""The small dialogs of `kilo-loop watch`: a line of text (a note, a search, an iteration), a yes/no, and a
question with its options; each answers None when left with Escape."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList

DIALOG_CSS = """
ModalScreen { align: center middle; }
#dialog { width: 76; max-width: 100%; height: auto; border: round $accent; padding: 0 1; background: $surface; }
#dialog OptionList { height: auto; max-height: 8; }
"""


class LineScreen(ModalScreen[str | None]):
    DEFAULT_CSS = DIALOG_CSS
    AUTO_FOCUS = "Input"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, prompt: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self._prompt, self._value, self._placeholder = prompt, value, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self._prompt)
            yield Input(self._value, placeholder=self._placeholder, id="line")
            yield Label("Enter sends · Escape cancels", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "answer(True)", "yes"), Binding("n,escape", "answer(False)", "no")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self._question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self._question)
            yield Label("y: yes · n / Escape: no")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class QuestionScreen(ModalScreen[str | None]):
    """One pending question: pick an option (arrows, Enter) or type an answer (Tab to the line)."""

    DEFAULT_CSS = DIALOG_CSS
    AUTO_FOCUS = "OptionList, Input"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, question: dict[str, Any], index: int, count: int) -> None:
        super().__init__()
        self._question = question
        self._title = f"Question {index + 1} of {count}: " if count > 1 else "Question: "

    def compose(self) -> ComposeResult:
        options = [str(option) for option in self._question.get("options") or []]
        with Vertical(id="dialog"):
            yield Label(self._title + str(self._question.get("question", "")))
            if options:
                yield OptionList(*options, id="options")
            yield Input(placeholder="or type an answer, Enter sends", id="line")
            yield Label("↑↓ Enter picks · Tab to type · Escape leaves it unanswered")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(str(event.option.prompt))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
