"""`--dry-run`: a simulated agent that exercises the loop, reports and HITL with no API call.

It reads the current stage from the prompt like a real agent would, narrates a few
tool actions, and writes only the loop's own files (progress.json, handoff.md).
The pace (seconds between events) comes from KILO_LOOP_DRY_RUN_DELAY (default 0.4).
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path

import orjson

from kilo_loop.agent.prompt_lines import ITERATION_LINE, REPORT_FILE, STAGE_LINE
from kilo_loop.agent.protocol import (
    AgentEvent,
    AgentRequest,
    AgentResult,
    SessionStarted,
    StepFinished,
    Text,
    TokenUsage,
    ToolUse,
)

_STAGES_TOTAL = re.compile(r"^\d+\. \[(?P<mark>.)\] ", re.MULTILINE)
# A reviewer prompt (kilo_loop.review.prompt) names the one file the reviewer may write.
_REVIEW_FILE = re.compile(r"^Write `(?P<path>\.kilocode-loop/review[\w-]*\.json)` as JSON:$", re.MULTILINE)
QUESTION_MARKER = "## Operator answers"
DEFAULT_PROGRESS = ".kilocode-loop/progress.json"
DEFAULT_HANDOFF = ".kilocode-loop/handoff.md"
DRY_RUN_QUESTION = "Which approach should the next stage take?"
DRY_RUN_OPTIONS = ["Keep the current structure", "Refactor into smaller modules"]


def _delay() -> float:
    try:
        return max(0.0, float(os.environ.get("KILO_LOOP_DRY_RUN_DELAY", "0.4")))
    except ValueError:
        return 0.4


class SimulatedRun:
    def __init__(self, request: AgentRequest, ask_questions: bool) -> None:
        self._request = request
        self._ask = ask_questions
        self._result = AgentResult(exit_code=None)
        self._killed = asyncio.Event()

    @property
    def result(self) -> AgentResult:
        return self._result

    async def kill(self, reason: str) -> None:
        self._result.mark_killed(reason)
        self._killed.set()

    async def _pause(self) -> bool:
        """Sleep one step; False when killed meanwhile."""
        try:
            await asyncio.wait_for(self._killed.wait(), _delay())
        except TimeoutError:
            return True
        return False

    def _plan(self) -> tuple[str, str, int, bool, int]:
        prompt = self._request.prompt
        stage = STAGE_LINE.search(prompt)
        stage_id, title = (stage["id"], stage["title"]) if stage else ("stage-1", "the goal")
        iteration_match = ITERATION_LINE.search(prompt)
        iteration = int(iteration_match["n"]) if iteration_match else 1
        marks = [m["mark"] for m in _STAGES_TOTAL.finditer(prompt)]
        done_after = sum(1 for m in marks if m == "x") + 1
        percent = round(100 * done_after / len(marks)) if marks else 100
        ask = self._ask and iteration == 2 and QUESTION_MARKER not in prompt
        return stage_id, title, iteration, ask, percent

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        session = self._request.session_id or f"ses_dry{uuid.uuid4().hex[:20]}"
        self._result.session_id = session
        review = _REVIEW_FILE.search(self._request.prompt)
        if review is not None:
            async for event in self._review(session, review["path"]):
                yield event
            return
        stage_id, title, iteration, ask, percent = self._plan()
        notes = _NOTE_IDS.findall(self._request.prompt)
        script: list[AgentEvent] = [
            SessionStarted(session),
            *([Text(f"noted {', '.join(notes)}: following the operator's notes.")] if notes else []),
            Text(f"Working on {stage_id}: {title} (simulated, no API call)."),
            ToolUse("read", {"filePath": "README.md"}, "completed", output="(simulated)"),
            ToolUse("grep", {"pattern": title.split()[0] if title.split() else "TODO"}, "completed"),
            ToolUse("bash", {"command": "git status --short", "description": "Inspect the tree"}, "completed"),
            ToolUse("edit", {"filePath": f"src/{stage_id}.py"}, "completed", output="(simulated; nothing written)"),
        ]
        for event in script:
            if not await self._pause():
                return
            yield event
        tokens = TokenUsage(total=12_000 + 1_500 * iteration, input=11_000 + 1_400 * iteration, output=900)
        self._write_reports(iteration, stage_id, title, ask, percent, notes)
        step = StepFinished(tokens=tokens, cost=round(0.004 + 0.001 * iteration, 4), reason="stop")
        self._result.tokens = tokens
        self._result.cost = step.cost
        self._result.context_tokens = tokens.total
        self._result.exit_code = 0
        yield step

    async def _review(self, session: str, path: str) -> AsyncGenerator[AgentEvent, None]:
        """Play a reviewer: read, then pass with one low finding (so the gate can be rehearsed)."""
        for event in (SessionStarted(session), Text("Reviewing the stage (simulated, no API call)."),
                      ToolUse("bash", {"command": "git diff --stat", "description": "Read the diff"}, "completed")):
            if not await self._pause():
                return
            yield event
        verdict = {"verdict": "pass", "questions": [],
                   "findings": [{"severity": "low", "file": "README.md", "line": 1, "title": "Simulated nit"}]}
        target = Path(self._request.cwd) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(orjson.dumps(verdict))
        tokens = TokenUsage(total=4_000, input=3_700, output=300)
        self._result.tokens, self._result.cost, self._result.exit_code = tokens, 0.002, 0
        yield StepFinished(tokens=tokens, cost=0.002, reason="stop")
    def _report_paths(self) -> tuple[Path, Path]:
        """Where the prompt's report contract says to write, read back as a real agent would."""
        named = [m["path"] for m in REPORT_FILE.finditer(self._request.prompt)]
        progress = next((p for p in named if p.endswith("progress.json")), DEFAULT_PROGRESS)
        handoff = next((p for p in named if p.endswith("handoff.md")), DEFAULT_HANDOFF)
        cwd = Path(self._request.cwd)
        return cwd / progress, cwd / handoff

    def _write_reports(self, iteration: int, stage_id: str, title: str, ask: bool, percent: int,
                       notes: list[str]) -> None:
        progress_path, handoff_path = self._report_paths()
        progress_path.parent.mkdir(parents=True, exist_ok=True)
        handoff_path.parent.mkdir(parents=True, exist_ok=True)
        questions = [{"question": DRY_RUN_QUESTION, "options": DRY_RUN_OPTIONS}] if ask else []
        progress = {
            "iteration": iteration,
            "topic": f"Simulated work on {title}",
            "stageId": stage_id,
            "stageStatus": "in_progress" if ask else "done",
            "percent": percent if not ask else max(0, percent - 10),
            "nextStage": "",
            "summary": f"Dry run: pretended to complete '{title}'.",
            "filesChanged": [],
            "needsInput": ask,
            "questions": questions,
            **({"notesSeen": notes} if notes else {}),
        }
        progress_path.write_bytes(orjson.dumps(progress, option=orjson.OPT_INDENT_2))
        handoff_path.write_text(
            f"# Handoff after iteration {iteration}\n\n- State: {stage_id} simulated.\n- Next: continue the goal.\n",
            encoding="utf-8",
        )


# The ids of the operator's notes a prompt carries (`[n1] text`): the simulated agent confirms them.
_NOTE_IDS = re.compile(r"^\[(n\d+)\] ", re.MULTILINE)


class DryRunBackend:
    name = "dry-run"

    def __init__(self, ask_questions: bool = True) -> None:
        self._ask = ask_questions

    def start(self, request: AgentRequest) -> SimulatedRun:
        return SimulatedRun(request, self._ask)
