"""One agent session: stream its events into the run log, scan every tool call with
the guard, and kill the session at once on a guard hit or a user Stop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kilo_loop.agent.protocol import (
    AgentBackend,
    AgentError,
    AgentEvent,
    AgentQuestion,
    AgentRequest,
    AgentResult,
    AnsweringRun,
    GarbageLine,
    GuardRejected,
    InjectingRun,
    PromptCarried,
    Reasoning,
    SessionStarted,
    StepFinished,
    Text,
    ToolUse,
)
from kilo_loop.run import notes
from kilo_loop.run.control import RunControl
from kilo_loop.run.events import (
    AgentErrored,
    GuardBlocked,
    GuardPreDenied,
    JailRefused,
    NoteAcknowledged,
    NoteDelivered,
    ReasoningOut,
    SessionOpened,
    TextOut,
    ToolUsed,
)
from kilo_loop.run.guard_decision import GuardDecision, GuardLike, checked
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.sandbox.refusals import refused_paths
from kilo_loop.session.notes import guard_note, rejections_note


@dataclass
class SessionOutcome:
    result: AgentResult
    tool_calls: int = 0
    guard: GuardDecision | None = None  # the deny that ended the session, if one did
    stopped: bool = False
    # Tool calls the loop refused before they ran (serve transport); the session went on.
    rejections: list[GuardRejected] = field(default_factory=list)
    ended_early: str | None = None  # why the loop ended a doom-looping session


_TOOL_VERBS = {
    "read": "Read", "edit": "Edit", "write": "Write", "bash": "Run", "grep": "Search", "glob": "Find",
    "list": "List", "webfetch": "Fetch", "websearch": "Search web", "todowrite": "Plan", "task": "Delegate",
    "apply_patch": "Patch", "patch": "Patch",
    # Gemini CLI's and Claude Code's own names for the same actions
    "run_shell_command": "Run", "write_file": "Write", "read_file": "Read", "replace": "Edit", "multiedit": "Edit",
    "list_directory": "List", "search_file_content": "Search", "web_fetch": "Fetch", "google_web_search": "Search web",
}
_TARGET_KEYS = ("command", "filePath", "file_path", "path", "pattern", "url", "query", "description")


def _clipped(value: Any, limit: int = 2000) -> Any:
    """Tool inputs go to the log: a whole file's `content` must not."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"…(+{len(value) - limit} chars)"
    if isinstance(value, dict):
        return {key: _clipped(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [_clipped(item, limit) for item in value[:50]]
    return value


def tool_heading(event: ToolUse) -> str:
    """`▸ Read src/foo.vue`, `▸ Run pnpm typecheck`: one short heading per tool action."""
    verb = _TOOL_VERBS.get(event.tool.lower(), event.tool)
    target = next((str(event.input[k]) for k in _TARGET_KEYS if event.input.get(k)), "")
    target = " ".join(target.split())
    if len(target) > 160:
        # cut at a blank where one is near: a secret cut in two would leave its head to the log,
        # where masking by value no longer knows it
        blank = target.rfind(" ", 96, 157)
        target = target[:blank if blank > 0 else 157] + "…"
    suffix = "" if event.status == "completed" else f" ({event.status})"
    return f"▸ {verb} {target}".rstrip() + suffix


class SessionRunner:
    def __init__(
        self,
        backend: AgentBackend,
        recorder: RunRecorder,
        control: RunControl,
        guard: GuardLike | None,
        on_tokens: Callable[[StepFinished], str | None],
        on_question: Callable[[AgentQuestion], Awaitable[list[str] | None]] | None = None,
        guard_stop: bool = False,
        takes_notes: bool = False,
        watch: Callable[[ToolUse], str | None] | None = None,
    ) -> None:
        self._backend = backend
        self._recorder = recorder
        self._control = control
        self._guard = guard
        self._on_tokens = on_tokens
        self._on_question = on_question
        self._guard_stop = guard_stop
        self._takes_notes = takes_notes  # the operator's notes go to this session (the loop's, not a reviewer's)
        self._prompt_notes: list[str] = []  # notes the session's prompt carries, until delivered
        self._injected: dict[str, list[str]] = {}  # token -> notes injected into the live session
        self._session_id: str | None = None
        self._watch = watch  # a doom-loop counter: a reason to end the session now, or None

    async def run(self, request: AgentRequest, prompt_notes: list[str] | None = None) -> SessionOutcome:
        """One session; `prompt_notes` are the operator's notes its prompt carries (delivered once it starts)."""
        if prompt_notes is not None:
            self._prompt_notes = list(prompt_notes)
        run = self._backend.start(request)
        outcome = SessionOutcome(result=run.result)
        stop_watch = asyncio.create_task(self._kill_on_stop(run, outcome))
        notes_in = None
        if self._takes_notes and isinstance(run, InjectingRun):
            notes_in = asyncio.create_task(self._deliver_live(run))
        try:
            # aclosing: on an early break the backend's cleanup (reaping, stderr, exit code) runs now.
            async with contextlib.aclosing(run.events()) as events:
                async for event in events:
                    if await self._handle(event, run, outcome, str(request.cwd)):
                        break
        finally:
            stop_watch.cancel()
            if notes_in is not None:
                notes_in.cancel()
        outcome.result = run.result
        return outcome

    async def _deliver_live(self, run: InjectingRun) -> None:
        """Every note queued while the session runs goes into it at once (it waits on the session for the
        next model request); a note the session cannot take stays queued for the next iteration's prompt."""
        while True:
            sent = {note_id for ids in self._injected.values() for note_id in ids} | set(self._prompt_notes)
            waiting = [n for n in notes.queued(self._recorder.state.notes) if n.id not in sent]
            if waiting:
                token = ",".join(n.id for n in waiting)
                if await run.inject(notes.message(waiting), token):
                    self._injected[token] = [n.id for n in waiting]
                else:
                    return  # the session is over: the next iteration's prompt carries them
            await self._control.wait_for_notes()

    def _delivered(self, ids: list[str], via: str) -> None:
        ids = [n.id for n in notes.queued(self._recorder.state.notes) if n.id in ids]
        if ids:
            self._recorder.emit(NoteDelivered(
                message=f"note {', '.join(ids)} delivered to the agent ({'live, into its session' if via == 'live' else 'in its prompt'})",
                note_ids=ids, via=via, session_id=self._session_id))

    def _acknowledged(self, text: str) -> None:
        ids = notes.acknowledged_in_reply(text, notes.awaiting_ack(self._recorder.state.notes))
        if ids:
            self._recorder.emit(NoteAcknowledged(message=f"note {', '.join(ids)} acknowledged by the agent",
                                                 note_ids=ids, how="reply"))

    async def _kill_on_stop(self, run: Any, outcome: SessionOutcome) -> None:
        await self._control.wait_for_stop()
        outcome.stopped = True
        self._recorder.warn("Stop requested: killing the agent session")
        await run.kill("stopped by the operator")

    async def _handle(self, event: AgentEvent, run: Any, outcome: SessionOutcome, cwd: str) -> bool:
        """Record one event; True when the session must end now."""
        rec = self._recorder
        if self._prompt_notes and isinstance(event, ToolUse | Text | Reasoning | StepFinished):
            self._delivered(self._prompt_notes, "prompt")  # the model answered the request that carried them
            self._prompt_notes = []
        if isinstance(event, ToolUse):
            outcome.tool_calls += 1
            rec.emit(ToolUsed(message=tool_heading(event), tool=event.tool, status=event.status,
                              input=_clipped(event.input), error=event.error[:2000]))
            if paths := refused_paths(f"{event.output}\n{event.error}"):
                rec.emit(JailRefused(message=f"the jail refused a write (read-only here): {', '.join(paths)}",
                                     tool=event.tool, paths=paths))
            if await self._check_guard(event, run, outcome, cwd):
                return True
            return await self._doom(event, run, outcome)
        if isinstance(event, Text) and event.text.strip():
            rec.emit(TextOut(message=event.text.strip()[:4000]))
            if self._takes_notes:
                self._acknowledged(event.text)
        elif isinstance(event, Reasoning) and event.text.strip():
            rec.emit(ReasoningOut(message=event.text.strip()[:4000]))
        elif isinstance(event, StepFinished):
            over_budget = self._on_tokens(event)
            # A final step ("stop") ends the session anyway: let its report count; the run stops after.
            if over_budget and event.reason != "stop":
                rec.warn(f"budget reached mid-session: {over_budget}; killing the agent session")
                await run.kill(f"budget: {over_budget}")
                return True
        elif isinstance(event, SessionStarted):
            self._session_id = event.session_id
            rec.emit(SessionOpened(message=f"session {event.session_id}", session_id=event.session_id))
        elif isinstance(event, PromptCarried):
            self._delivered(self._injected.pop(event.token, []), "live")
        elif isinstance(event, AgentError):
            rec.emit(AgentErrored(message=f"agent error: {event.name}: {event.message}"))
        elif isinstance(event, GarbageLine):
            rec.warn(f"skipped a garbage line from the agent ({event.problem}): {event.line[:120]}")
        elif isinstance(event, GuardRejected):
            return await self._rejected(event, run, outcome)
        elif isinstance(event, AgentQuestion):
            answers = await self._on_question(event) if self._on_question is not None else None
            if isinstance(run, AnsweringRun):
                await run.answer(event.request_id, answers)
        return False

    async def _doom(self, event: ToolUse, run: Any, outcome: SessionOutcome) -> bool:
        reason = self._watch(event) if self._watch is not None else None
        if reason is None:
            return False
        outcome.ended_early = reason
        await run.kill(f"doom loop: {reason}")  # serve: aborted through the server's API; run: the process group
        return True

    async def _rejected(self, event: GuardRejected, run: Any, outcome: SessionOutcome) -> bool:
        """The loop refused a call before it ran; the agent goes on (unless --guard-stop)."""
        outcome.rejections.append(event)
        self._recorder.emit(GuardBlocked.of(
            event.decision, f"guard rejected `{event.subject}` before it ran: {event.reason}",
            note=rejections_note(outcome.rejections), before_execution=True,
            extra={"tool": event.tool, "command": event.subject},
        ))
        if not self._guard_stop:
            return False
        outcome.guard = event.decision
        await run.kill(f"guard: {event.reason}")
        return True

    async def _check_guard(self, event: ToolUse, run: Any, outcome: SessionOutcome, cwd: str) -> bool:
        if self._guard is None:
            return False
        decision = checked(self._guard.check_tool_use(event.tool, event.input, cwd))
        if not decision.denied:
            return False
        command = event.input.get("command", event.tool)
        if event.call_id and any(r.call_id == event.call_id for r in outcome.rejections):
            return False  # the loop itself refused it before it ran, and said so
        if event.status == "error":
            # The CLI refused it (pre-execution deny rules): nothing ran, so no damage to control.
            self._recorder.emit(GuardPreDenied(message=f"denied before execution: `{command}`", rule=decision.rule))
            return False
        outcome.guard = decision
        self._recorder.emit(GuardBlocked.of(decision, f"guard blocked `{command}`: {decision.reason}",
                                            note=guard_note(decision.rule_name, decision.reason)))
        await run.kill(f"guard: {decision.reason}")
        return True
