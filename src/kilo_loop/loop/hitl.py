"""Human in the loop: pending questions wait for answers from any channel
(terminal, dashboard); answers persist in answers.json and go into every later prompt."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kilo_loop.run.control import AnswerItem, RunControl
from kilo_loop.run.events import now_iso
from kilo_loop.run.files import read_json, write_json_atomic
from kilo_loop.run.state import Answer, Question


def resolve_option(reply: str, question: Question) -> str:
    """A bare number picks that option (1-based); anything else is the answer itself."""
    text = reply.strip()
    if text.isdigit() and question.options and 1 <= int(text) <= len(question.options):
        return question.options[int(text) - 1]
    return text


def match_answers(questions: list[Question], items: list[AnswerItem], iteration: int) -> list[Answer]:
    """Pair submitted answers with the pending questions (by text, else by position)."""
    by_text = {item.question: item for item in items if item.question}
    answers: list[Answer] = []
    for index, question in enumerate(questions):
        item = by_text.get(question.question) or (items[index] if index < len(items) else None)
        if item is None or not item.answer.strip():
            continue
        answers.append(
            Answer(
                question=question.question,
                answer=resolve_option(item.answer, question),
                iteration=iteration,
                source=item.source,
                answered_at=now_iso(),
            )
        )
    return answers


class AnswerBook:
    """All operator answers of a run, kept in <project>/.kilocode-loop/answers.json."""

    def __init__(self, path: Path, run_id: str, redact: Callable[[object], object]) -> None:
        self.path = path
        self.run_id = run_id
        self._redact = redact
        self.answers: list[Answer] = []

    def load_for_resume(self) -> list[str]:
        """Reload answers saved by the same run; returns warnings."""
        if not self.path.is_file():
            return []
        try:
            raw = read_json(self.path)
        except (OSError, ValueError) as exc:
            return [f"ignoring unreadable {self.path.name}: {exc}"]
        if not isinstance(raw, dict) or raw.get("runId") != self.run_id:
            return []
        items = raw.get("answers")
        warnings: list[str] = []
        for item in items if isinstance(items, list) else []:
            try:
                self.answers.append(Answer.model_validate(item))
            except ValueError as exc:
                warnings.append(f"skipping a malformed answer in {self.path.name}: {exc}")
        return warnings

    def add(self, answers: list[Answer]) -> None:
        self.answers.extend(answers)
        self.save()

    def save(self) -> None:
        payload = {"runId": self.run_id, "answers": [a.wire() for a in self.answers]}
        write_json_atomic(self.path, self._redact(payload))


# A dry run on a non-terminal (a pipe, CI) must finish by itself even with the dashboard up.
DRY_RUN_ANSWER_TIMEOUT_S = 20.0


def effective_answer_timeout(configured: float | None, dry_run: bool, stdin_is_tty: bool) -> float | None:
    """How long a question waits (None: until answered)."""
    if configured is not None:
        return configured
    return DRY_RUN_ANSWER_TIMEOUT_S if dry_run and not stdin_is_tty else None


def hitl_refusal(hitl: str, stdin_can_answer: bool, dashboard: bool) -> str | None:
    """Why the run cannot start as configured (pre-flight), or None. Piped answers count as a channel."""
    if hitl == "always" and not stdin_can_answer and not dashboard:
        return ("--hitl always needs someone to answer, but stdin is not a terminal (nor a pipe of answers) "
                "and the dashboard is off: run it in a terminal, pipe the answers in, drop --no-dashboard, "
                "or use --hitl on-question / off")
    return None


async def collect_answers(
    control: RunControl, questions: list[Question], iteration: int, timeout: float | None = None
) -> list[Answer] | None:
    """Wait until some channel answers; None if the run was stopped meanwhile; TimeoutError after `timeout`."""
    items = await control.next_answers(timeout)
    if items is None:
        return None
    return match_answers(questions, items, iteration)
