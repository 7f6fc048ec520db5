"""An instant in-process agent for measuring the loop's own cost (`bench_loop.py`).

Load it with `KILO_LOOP_BACKEND=stub_agent:StubBackend` and `benchmarks/` on `PYTHONPATH`.
Each session: `SessionStarted`, one `ToolUse`, `StepFinished` — no sleeping, no subprocess.
Before the last event it marks the prompt's current stage `done` in `.kilocode-loop/progress.json`
and appends a line to one tracked file (`STUB_AGENT_FILE`, default `README.md`) so every
iteration changes the tree and the loop never stops as stale.

With `STUB_AGENT_METRICS=<file>` every session start appends one line to that file (outside the
run directory): the iteration, the loop process's clock, its CPU time and its reaped children's
(git), `wchar` from /proc/self/io (bytes the loop wrote) and VmRSS — what `bench_longrun.py` reads.
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path

import orjson

from kilo_loop.agent.protocol import (
    AgentEvent,
    AgentRequest,
    AgentResult,
    SessionStarted,
    StepFinished,
    TokenUsage,
    ToolUse,
)
from kilo_loop.loop.prompt import ITERATION_LINE, STAGE_LINE
from kilo_loop.run.layout import ProjectLayout

_TOKENS = TokenUsage(total=1_200, input=1_000, output=200)
_COST = 0.001


def current_stage(prompt: str) -> tuple[str, str]:
    """The `Current stage: <id> — <title>` line of the prompt (a placeholder when absent)."""
    match = STAGE_LINE.search(prompt)
    return (match["id"], match["title"]) if match else ("stage-1", "the goal")


def iteration_number(prompt: str) -> int:
    match = ITERATION_LINE.search(prompt)
    return int(match["n"]) if match else 1


def progress_report(iteration: int, stage_id: str, title: str, changed: str) -> dict[str, object]:
    return {
        "iteration": iteration,
        "topic": f"Stub work on {title}",
        "stageId": stage_id,
        "stageStatus": "done",
        "percent": 100,
        "nextStage": "",
        "summary": f"Stub agent marked {stage_id} done.",
        "filesChanged": [changed],
        "needsInput": False,
        "questions": [],
    }


def _proc_field(path: str, name: str) -> int:
    try:
        with open(path, encoding="ascii") as handle:
            for line in handle:
                if line.startswith(name):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def metrics_line(iteration: int) -> str:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (f"{iteration} {time.perf_counter():.6f} {time.process_time():.6f} "
            f"{children.ru_utime + children.ru_stime:.6f} {_proc_field('/proc/self/io', 'wchar:')} "
            f"{_proc_field('/proc/self/status', 'VmRSS:')}\n")


def record_metrics(iteration: int) -> None:
    target = os.environ.get("STUB_AGENT_METRICS")
    if target:
        with open(target, "a", encoding="ascii") as handle:
            handle.write(metrics_line(iteration))


class StubRun:
    def __init__(self, request: AgentRequest, tracked_file: str) -> None:
        self._request = request
        self._tracked_file = tracked_file
        self._result = AgentResult(exit_code=None)

    @property
    def result(self) -> AgentResult:
        return self._result

    async def kill(self, reason: str) -> None:
        self._result.mark_killed(reason)

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        prompt = self._request.prompt
        stage_id, title = current_stage(prompt)
        iteration = iteration_number(prompt)
        record_metrics(iteration)
        session = self._request.session_id or f"ses_stub{uuid.uuid4().hex[:20]}"
        self._result.session_id = session
        yield SessionStarted(session)
        await asyncio.sleep(0)
        yield ToolUse("edit", {"filePath": self._tracked_file}, "completed", output="appended one line")
        if self._result.killed:
            return
        self._work(iteration, stage_id, title)
        self._result.tokens = _TOKENS
        self._result.cost = _COST
        self._result.context_tokens = _TOKENS.total
        self._result.exit_code = 0
        yield StepFinished(tokens=_TOKENS, cost=_COST, reason="stop")

    def _work(self, iteration: int, stage_id: str, title: str) -> None:
        project = Path(self._request.cwd)
        with (project / self._tracked_file).open("a", encoding="utf-8") as handle:
            handle.write(f"iteration {iteration}: {stage_id}\n")
        layout = ProjectLayout(project)
        layout.root.mkdir(parents=True, exist_ok=True)
        report = progress_report(iteration, stage_id, title, self._tracked_file)
        layout.progress.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))


class StubBackend:
    name = "stub"

    def __init__(self) -> None:
        self._tracked_file = os.environ.get("STUB_AGENT_FILE", "README.md")

    def start(self, request: AgentRequest) -> StubRun:
        return StubRun(request, self._tracked_file)
