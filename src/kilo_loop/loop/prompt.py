"""The prompt for one iteration. Every token here is paid for on every iteration,
so the fixed scaffolding is short and each section appears only when it has content."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kilo_loop.goal.model import Goal, Stage
from kilo_loop.run import notes as operator_notes
from kilo_loop.run.state import Answer, Note
from kilo_loop.sandbox.policy import PROMPT_LINE as JAIL_PROMPT_LINE

HANDOFF_MAX_LINES = 120
HANDOFF_MAX_CHARS = 16_000
MAX_FILES_LISTED = 60
MAX_SECTION_CHARS = 6000

CONTRACT = """## Report contract (required)
Before you finish, write `.kilocode-loop/progress.json`:
{"iteration": ITER, "topic": "…", "stageId": "STAGE", "stageStatus": "in_progress|done|blocked",
 "percent": 0-100, "nextStage": "…", "summary": "…", "filesChanged": ["…"],
 "needsInput": false, "questions": [{"question": "…", "options": ["…"]}]}
Set needsInput and questions only when you need an operator decision; the run waits for the answer."""

HANDOFF_CONTRACT = """Also write `.kilocode-loop/handoff.md` (at most 120 lines) for the next, fresh session:
current state, decisions & constraints, next steps, prepared data, open questions."""


RULES = "Never commit, push or publish; the loop checkpoints and verifies your work itself."


@dataclass
class PromptInput:
    goal: Goal
    stage: Stage | None
    iteration: int
    max_iterations: int
    completed: set[str]
    blocked: set[str] = field(default_factory=set)
    previous: dict[str, str] = field(default_factory=dict)  # topic, summary, percent, nextStage
    answers: Sequence[Answer] = ()
    files_changed: Sequence[str] = ()
    handoff: str | None = None
    prompt_extra: str | None = None
    shared_context: bool = False
    safety_feedback: str | None = None
    verify_feedback: str | None = None
    review_feedback: str | None = None
    unanswered: Sequence[str] = ()
    jailed: bool = False  # the agent runs in the loop's jail: one line says what it allows
    notes: Sequence[Note] = ()  # the operator's queued notes: first thing in the prompt
    circle_feedback: str | None = None  # the loop saw it going in circles (loop/circles)


def _clip(text: str, limit: int = MAX_SECTION_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "\n…(truncated)"


def clip_handoff(text: str) -> str:
    """At most 120 lines and 16k characters (the prompt travels as one command-line argument)."""
    lines = text.strip().splitlines()
    if len(lines) > HANDOFF_MAX_LINES:
        lines = [*lines[:HANDOFF_MAX_LINES], f"…({len(lines) - HANDOFF_MAX_LINES} more lines dropped)"]
    return _clip("\n".join(lines), HANDOFF_MAX_CHARS)


def _stage_line(index: int, stage: Stage, data: PromptInput) -> str:
    if stage.done or stage.id in data.completed:
        mark = "x"
    elif stage.id in data.blocked:
        mark = "!"
    else:
        mark = " "
    current = "  ← current" if data.stage and stage.id == data.stage.id else ""
    return f"{index}. [{mark}] {stage.id}: {stage.title}{current}"


def _goal_section(data: PromptInput) -> str:
    goal = data.goal
    parts = [f"# Goal: {goal.title}"]
    if goal.description:
        parts.append(_clip(goal.description, 2000))
    parts.append("## Stages")
    parts += [_stage_line(i, stage, data) for i, stage in enumerate(goal.stages, 1)]
    return "\n".join(parts)


def _stage_section(stage: Stage) -> str:
    lines = ["## Current stage", f"Current stage: {stage.id} — {stage.title}"]
    if stage.details:
        lines.append(_clip(stage.details, 3000))
    if stage.acceptance:
        lines.append(f"Acceptance: {stage.acceptance}")
    if stage.verify:
        lines.append(f"The loop runs `{stage.verify}` itself; the stage is done only when it exits 0.")
    return "\n".join(lines)


def _previous_section(previous: dict[str, str]) -> str | None:
    fields = [(k, previous.get(k, "")) for k in ("topic", "summary", "percent", "nextStage")]
    shown = [f"- {key}: {value}" for key, value in fields if value]
    return "## Previous iteration\n" + "\n".join(shown) if shown else None


def _answers_section(answers: Sequence[Answer]) -> str | None:
    if not answers:
        return None
    kept: list[str] = []
    size = 0
    for answer in reversed(answers):  # the newest decisions matter most: keep them when clipping
        line = f"- Q: {answer.question}\n  A: {answer.answer}"
        size += len(line) + 1
        if size > MAX_SECTION_CHARS and kept:
            kept.append(f"- …{len(answers) - len(kept)} earlier answer(s) omitted")
            break
        kept.append(_clip(line, MAX_SECTION_CHARS))
    return "## Operator answers (binding decisions)\n" + "\n".join(reversed(kept))


def _files_section(files: Sequence[str]) -> str | None:
    if not files:
        return None
    shown = list(files[:MAX_FILES_LISTED])
    more = len(files) - len(shown)
    tail = [f"- …and {more} more"] if more > 0 else []
    return "## Files changed so far this run\n" + "\n".join([f"- {f}" for f in shown] + tail)


def build_prompt(data: PromptInput) -> str:
    sections: list[str | None] = []
    if data.notes:
        sections.append(operator_notes.message(data.notes))
    if data.prompt_extra:
        sections.append("## Operator instructions for this run\n" + _clip(data.prompt_extra))
    sections.append(_goal_section(data))
    if data.stage:
        sections.append(_stage_section(data.stage))
    sections.append(f"Iteration {data.iteration} of {data.max_iterations}.")
    if data.safety_feedback:
        sections.append("## Loop safety feedback\n" + _clip(data.safety_feedback))
    if data.circle_feedback:
        sections.append("## Going in circles\n" + _clip(data.circle_feedback))
    if data.verify_feedback:
        sections.append("## Verify failed last iteration\n" + _clip(data.verify_feedback))
    if data.review_feedback:
        sections.append("## Review findings to fix\n" + _clip(data.review_feedback))
    sections.append(_previous_section(data.previous))
    sections.append(_answers_section(data.answers))
    if data.unanswered:
        asked = "\n".join(f"- {_clip(q, 500)}" for q in data.unanswered)
        sections.append("## Unanswered questions\nNobody answered these in time; decide yourself, say what you "
                        "chose in the summary, and keep it easy to change:\n" + asked)
    sections.append(_files_section(data.files_changed))
    if data.handoff and not data.shared_context:
        sections.append("## Handoff from the previous session\n" + clip_handoff(data.handoff))
    stage_id = data.stage.id if data.stage else ""
    sections.append(CONTRACT.replace("ITER", str(data.iteration)).replace("STAGE", stage_id))
    if not data.shared_context:
        sections.append(HANDOFF_CONTRACT)
    sections.append(RULES)
    if data.jailed:
        sections.append(JAIL_PROMPT_LINE)
    return "\n\n".join(s for s in sections if s) + "\n"
