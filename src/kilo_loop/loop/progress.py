"""Reading the agent's progress.json, and what the loop derives when it is missing."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kilo_loop.goal.model import Goal
from kilo_loop.run.state import Question

_STAGE_STATUSES = {"pending", "in_progress", "done", "blocked"}
_QUESTION_LINE = re.compile(r"^\s*(?:[-*]|\d+[.)])?\s*(?P<q>[A-Z][^\n?]{8,300}\?)\s*$")
_MAX_SCRAPED_QUESTIONS = 5


@dataclass
class Progress:
    topic: str = ""
    stage_id: str | None = None
    stage_status: str | None = None
    percent: int | None = None
    next_stage: str = ""
    summary: str = ""
    files_changed: list[str] = field(default_factory=list)
    needs_input: bool = False
    questions: list[Question] = field(default_factory=list)
    notes_seen: list[str] = field(default_factory=list)  # the operator's notes the agent confirms
    source: str = "agent"  # agent | fallback
    warnings: list[str] = field(default_factory=list)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _percent(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return max(0, min(100, round(value)))


def _questions(value: Any) -> list[Question]:
    if not isinstance(value, list):
        return []
    questions: list[Question] = []
    for item in value[:20]:
        if isinstance(item, str) and item.strip():
            questions.append(Question(question=item.strip()))
        elif isinstance(item, dict) and _text(item.get("question")):
            options = item.get("options")
            opts = [str(o) for o in options if isinstance(o, (str, int, float))] if isinstance(options, list) else []
            questions.append(Question(question=_text(item.get("question")), options=opts[:10]))
    return questions


def progress_from_object(raw: dict[str, Any]) -> Progress:
    files = raw.get("filesChanged")
    status = _text(raw.get("stageStatus"))
    questions = _questions(raw.get("questions"))
    return Progress(
        topic=_text(raw.get("topic")),
        stage_id=_text(raw.get("stageId")) or None,
        stage_status=status if status in _STAGE_STATUSES else None,
        percent=_percent(raw.get("percent")),
        next_stage=_text(raw.get("nextStage")),
        summary=_text(raw.get("summary")),
        files_changed=[f for f in files if isinstance(f, str) and f][:500] if isinstance(files, list) else [],
        needs_input=raw.get("needsInput") is True or bool(questions),
        questions=questions,
        notes_seen=[n.strip() for n in seen if isinstance(n, str)][:100] if isinstance(seen := raw.get("notesSeen"),
                                                                                        list) else [],
    )


def scrape_questions(text: str) -> list[Question]:
    """Question-looking lines of the agent's own text (used only when progress.json is missing)."""
    found: list[Question] = []
    for line in text.splitlines():
        match = _QUESTION_LINE.match(line)
        if match and all(q.question != match["q"] for q in found):
            found.append(Question(question=match["q"]))
        if len(found) >= _MAX_SCRAPED_QUESTIONS:
            break
    return found


def read_progress(path: Path, agent_text: str) -> Progress:
    """The agent's report, or a fallback built from its text, with a warning — never an exception."""
    problem: str
    try:
        raw = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        problem = f"the agent did not write {path.name}"
    except (OSError, orjson.JSONDecodeError) as exc:
        problem = f"{path.name} is not valid JSON ({exc})"
    else:
        if isinstance(raw, dict):
            return progress_from_object(raw)
        problem = f"{path.name} is not a JSON object"
    questions = scrape_questions(agent_text)
    return Progress(
        source="fallback",
        questions=questions,
        needs_input=bool(questions),
        warnings=[f"{problem}; falling back to the goal stages"],
    )


def completion_percent(goal: Goal, completed: set[str]) -> int:
    if not goal.stages:
        return 0
    done = sum(1 for stage in goal.stages if stage.done or stage.id in completed)
    return round(100 * done / len(goal.stages))


def first_open_stage_title(goal: Goal, completed: set[str]) -> str:
    stage = next((s for s in goal.stages if not s.done and s.id not in completed), None)
    return stage.title if stage else ""
