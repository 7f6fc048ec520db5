"""What `kilo-loop mcp` can do, without MCP: list plans, start a run the way the dashboard's launcher does
(same plan checks, settings, guard and jail, through `RunController`), read and wait on it, and steer it
with the run's own commands. Every call that touches a run is an event of that run. Nothing here returns
the dashboard's token (there is no dashboard: the runs live in this process).

Errors a caller can act on are `DeskRefused`; the server turns them into MCP tool errors.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from kilo_loop.errors import KiloLoopError
from kilo_loop.goal.model import GoalError
from kilo_loop.goal.registry import resolve_plan_file
from kilo_loop.loop.commands import Command, CommandRefused, Pause, Resume, SendNote, StopNow, SubmitAnswers
from kilo_loop.run.control import AnswerItem
from kilo_loop.run.events import McpCalled, McpRead, RunEvent, is_log_line
from kilo_loop.run.layout import ProjectLayout, RunLayout
from kilo_loop.run.receipts import stage_receipts
from kilo_loop.run.report import run_report_md
from kilo_loop.run.state import RunState
from kilo_loop.run.store import RunNotFound, load_state, resolve_run
from kilo_loop.settings import RuntimeMode, Settings, load_settings
from kilo_loop.web.controller import LiveRun, RunBusy, RunController, StartRefused
from kilo_loop.web.launcher import list_goals
from kilo_loop.web.schemas import StartRequest
from kilo_loop.web.sse import EventHub

MAX_WAIT_S = 300.0
NEW_LINES_SHOWN = 40
RUNTIMES: tuple[str, ...] = get_args(RuntimeMode)


class DeskRefused(KiloLoopError):
    """A tool call the desk will not carry out, with what to do instead."""


@dataclass(frozen=True)
class Budget:
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    iterations: int | None = None

    def check(self) -> None:
        if not (self.max_cost_usd and self.max_cost_usd > 0) and not (self.max_tokens and self.max_tokens > 0):
            raise DeskRefused("start_run needs a budget: give max_cost_usd (> 0) or max_tokens (> 0), so a run "
                              "started by a chat agent cannot spend without bound")


@dataclass
class Desk:
    project: Path
    cli_values: dict[str, Any] = field(default_factory=dict)  # the flags `kilo-loop mcp` was given
    _controller: RunController | None = None

    @property
    def controller(self) -> RunController:
        if self._controller is None:
            base = load_settings(self.cli_values, self.project, warn=lambda _line: None)
            self._controller = RunController(self.project, base, EventHub(), answer_channel=lambda: True)
        return self._controller

    # ------------------------------------------------------------------ plans and runs
    def list_plans(self) -> list[dict[str, Any]]:
        return list_goals(self.project)

    def start_run(self, plan: str, budget: Budget, runtime: str | None = None, dry_run: bool = False) -> LiveRun:
        budget.check()
        if runtime is not None and runtime not in RUNTIMES:
            raise DeskRefused(f"unknown runtime {runtime!r}: one of {', '.join(RUNTIMES)}")
        try:
            resolve_plan_file(self.project, plan)
        except GoalError as exc:
            raise DeskRefused(f"{exc}; list_plans names the plans of this project") from None
        controller = self.controller
        controller.base = self._settings(budget, runtime)
        request = StartRequest(file=plan, iterations=budget.iterations, dry_run=dry_run, agent=None, prompt_extra=None,
                               force=False)
        try:
            live = controller.start(request)
        except (RunBusy, StartRefused) as exc:
            raise DeskRefused(str(exc)) from None
        self._touched(live, McpCalled(message=f"run started by a chat agent (mcp start_run {plan})", tool="start_run"))
        return live

    def _settings(self, budget: Budget, runtime: str | None) -> Settings:
        values = dict(self.cli_values)
        for key, value in (("max_cost", budget.max_cost_usd), ("max_tokens", budget.max_tokens),
                           ("runtime", runtime)):
            if value is not None:
                values[key] = value
        try:
            return load_settings(values, self.project, warn=lambda _line: None)
        except KiloLoopError as exc:
            raise DeskRefused(str(exc)) from None

    def live(self, run_id: str | None) -> LiveRun:
        """The run this server started (the latest when no id is given)."""
        live = self.controller.live
        if live is None or run_id not in (None, "", "last", live.run_id):
            named = f" {run_id}" if run_id else ""
            raise DeskRefused(f"no run{named} started here is active: start_run starts one; report reads a saved run")
        return live

    def saved(self, run_id: str | None) -> tuple[RunLayout, RunState]:
        live = self.controller.live
        if live is not None and run_id in (None, "", "last", live.run_id):
            return live.handle.layout, live.state
        try:
            layout = resolve_run(ProjectLayout(self.project), run_id or "last")
            return layout, load_state(layout)
        except (RunNotFound, OSError, ValueError) as exc:
            raise DeskRefused(f"no saved run {run_id or 'last'}: {exc}") from None

    # ------------------------------------------------------------------ reading
    def status(self, run_id: str | None) -> dict[str, Any]:
        live = self.controller.live
        if live is not None and run_id in (None, "", "last", live.run_id):
            self._touched(live, McpRead(tool="run_status"))
            return status_of(live.state, running=not live.finished, seq=live.seq)
        _layout, state = self.saved(run_id)
        return status_of(state, running=False, seq=state.seq)

    async def wait_for_change(self, run_id: str | None, since_seq: int, timeout_s: float) -> dict[str, Any]:
        """Until the run has an event past `since_seq` (the chat agent's own calls aside), it ends, or the
        timeout (at most 300 s) passes."""
        live = self.live(run_id)
        self._touched(live, McpRead(tool="wait_for_change"))
        changed = asyncio.Event()

        def on_event(event: RunEvent) -> None:
            if event.seq > since_seq and not isinstance(event, McpCalled | McpRead):
                changed.set()

        unsubscribe = live.subscribe(on_event, lambda: None)
        try:
            if not _changed_since(live.state, since_seq) and not live.finished:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._until(changed, live), max(0.0, min(timeout_s, MAX_WAIT_S)))
        finally:
            unsubscribe()
        lines = [line for line in live.state.log_tail if int(line.get("seq", 0)) > since_seq
                 and is_log_line(line) and line.get("type") != McpCalled.TYPE][-NEW_LINES_SHOWN:]
        return {"changed": bool(lines) or live.finished, **status_of(live.state, running=not live.finished,
                                                                       seq=live.seq), "newLines": lines}

    @staticmethod
    async def _until(changed: asyncio.Event, live: LiveRun) -> None:
        waits = [asyncio.ensure_future(changed.wait())]
        if live.task is not None:
            waits.append(asyncio.ensure_future(asyncio.shield(live.task)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def report(self, run_id: str | None) -> str:
        layout, state = self.saved(run_id)
        live = self.controller.live
        if live is not None and live.run_id == state.run_id:
            self._touched(live, McpRead(tool="report"))
            return run_report_md(state)
        return layout.report.read_text(encoding="utf-8") if layout.report.is_file() else run_report_md(state)

    def receipts(self, run_id: str | None) -> list[dict[str, Any]]:
        _layout, state = self.saved(run_id)
        return [receipt.wire() for receipt in stage_receipts(state)]

    # ------------------------------------------------------------------ steering
    async def answer(self, run_id: str | None, answers: list[str]) -> dict[str, Any]:
        live = self.live(run_id)
        questions = live.state.pending_questions
        if not questions:
            raise DeskRefused("no question is waiting for an answer: wait_for_change until status is waiting-answer")
        items = tuple(AnswerItem(q.question, a.strip(), "mcp") for q, a in zip(questions, answers, strict=False)
                      if isinstance(a, str) and a.strip())
        if not items:
            raise DeskRefused(f"every answer is empty: give one answer per question ({len(questions)} waiting)")
        self._touched(live, McpCalled(message=f"mcp: {len(items)} answer(s) from a chat agent", tool="answer_question"))
        await self._ask(live, SubmitAnswers(items))
        return {"answered": len(items)}

    async def note(self, run_id: str | None, text: str) -> dict[str, Any]:
        live = self.live(run_id)
        if live.finished:
            raise DeskRefused(f"run {live.run_id} has finished ({live.state.status}): a note would reach no agent")
        self._touched(live, McpCalled(message="mcp: a note from a chat agent", tool="send_note"))
        result = (await self._ask(live, SendNote(text, "mcp"))).result
        return dict(result) if isinstance(result, dict) else {}

    async def control(self, run_id: str | None, tool: str, command: Command) -> dict[str, Any]:
        live = self.live(run_id)
        if live.finished:
            raise DeskRefused(f"run {live.run_id} has already finished ({live.state.status})")
        self._touched(live, McpCalled(message=f"mcp: {tool} from a chat agent", tool=tool))
        await self._ask(live, command)
        return {"status": str(live.state.status), "paused": live.state.paused}

    @staticmethod
    async def _ask(live: LiveRun, command: Command) -> Any:
        try:
            return await live.ask(command)
        except CommandRefused as exc:
            raise DeskRefused(exc.message) from None

    @staticmethod
    def _touched(live: LiveRun, event: RunEvent) -> None:
        if not live.finished:
            live.handle.recorder.emit(event)

    async def aclose(self) -> None:
        if self._controller is not None:
            await self._controller.stop_active()


CONTROLS: dict[str, Command] = {"pause": Pause(), "resume": Resume(), "stop": StopNow()}


def _changed_since(state: RunState, since_seq: int) -> bool:
    return any(int(line.get("seq", 0)) > since_seq and line.get("type") not in (McpCalled.TYPE, McpRead.TYPE)
               for line in state.log_tail)


def status_of(state: RunState, *, running: bool, seq: int) -> dict[str, Any]:
    """What a chat agent needs to decide its next call (no token, no paths outside the run's own)."""
    return {
        "runId": state.run_id, "status": str(state.status), "running": running, "seq": seq,
        "goal": state.goal_title, "iteration": state.iteration, "maxIterations": state.max_iterations,
        "stages": [{"id": s.id, "title": s.title, "status": s.status} for s in state.stages],
        "pendingQuestions": [q.wire() for q in state.pending_questions],
        "notes": [n.wire() for n in state.notes],
        "totals": {"tokens": state.totals.tokens, "costUsd": state.totals.cost},
        "paused": state.paused, "stopReason": state.stop_reason,
    }
