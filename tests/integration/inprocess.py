"""Run the loop in this process: a real RunHandle (bus, reducer, recorder, command handler,
orchestrator, checkpoints in a temp git repo) driven by a scripted fake backend, so tests
feed agent events and commands and assert on the state — no subprocess."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

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
from kilo_loop.loop.commands import Command, Reply
from kilo_loop.run.events import RunEvent, from_wire
from kilo_loop.run.reducer import replay
from kilo_loop.run.state import RunState
from kilo_loop.run.store import read_events
from kilo_loop.runner import RunHandle, prepare_run, resolve_goal
from kilo_loop.settings import load_settings

Action = tuple[Any, ...]


def text(value: str) -> Action:
    return ("text", value)


def tool(command: str, status: str = "completed") -> Action:
    return ("tool", command, status)


def step(tokens: int = 1000, cost: float = 0.01) -> Action:
    return ("step", tokens, cost)


def write(path: str, body: str = "x\n") -> Action:
    return ("write", path, body)


def progress(stage: str, status: str = "done", percent: int = 50, **extra: Any) -> Action:
    body = {"iteration": 1, "topic": f"work on {stage}", "stageId": stage, "stageStatus": status,
            "percent": percent, "nextStage": "", "summary": f"did {stage}", "filesChanged": [],
            "needsInput": False, "questions": []}
    body.update(extra)
    return ("progress", body)


def gate(event: asyncio.Event) -> Action:
    """The session waits here until the test sets the event (or the loop kills it)."""
    return ("gate", event)


def fail(message: str) -> Action:
    return ("fail", message)


def done_turn(stage: str, file: str | None = None, percent: int = 50) -> list[Action]:
    actions: list[Action] = [text(f"working on {stage}")]
    if file:
        actions.append(write(file, f"content for {stage}\n"))
    return [*actions, progress(stage, "done", percent), step()]


class FakeRun:
    def __init__(self, request: AgentRequest, actions: list[Action], number: int) -> None:
        self.request = request
        self._actions = actions
        self._number = number
        self._result = AgentResult(exit_code=None, session_id=request.session_id or f"ses_inproc{number:03d}")
        self._killed = asyncio.Event()

    @property
    def result(self) -> AgentResult:
        return self._result

    async def kill(self, reason: str) -> None:
        self._result.mark_killed(reason)
        self._killed.set()

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        yield SessionStarted(self._result.session_id or "")
        root = Path(self.request.cwd)
        for action in self._actions:
            if self._killed.is_set():
                return
            kind = action[0]
            if kind == "text":
                self._result.text += action[1]
                yield Text(action[1])
            elif kind == "tool":
                yield ToolUse("bash", {"command": action[1], "description": "run"}, action[2])
            elif kind == "step":
                tokens = TokenUsage(total=action[1], input=action[1] - 100, output=100)
                self._result.context_tokens = tokens.total
                yield StepFinished(tokens=tokens, cost=action[2], reason="stop")
            elif kind == "write":
                (root / action[1]).parent.mkdir(parents=True, exist_ok=True)
                (root / action[1]).write_text(action[2])
            elif kind == "progress":
                (root / ".kilocode-loop").mkdir(exist_ok=True)
                (root / ".kilocode-loop" / "progress.json").write_bytes(orjson.dumps(action[1]))
            elif kind == "handoff":
                (root / ".kilocode-loop" / "handoff.md").write_text(action[1])
            elif kind == "gate":
                waiter = asyncio.ensure_future(action[1].wait())
                killed = asyncio.ensure_future(self._killed.wait())
                await asyncio.wait({waiter, killed}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                killed.cancel()
            elif kind == "fail":
                self._result.error = action[1]
                self._result.exit_code = 1
                return
        if self._result.exit_code is None and not self._killed.is_set():
            self._result.exit_code = 0


@dataclass
class FakeBackend:
    turns: list[list[Action]]
    name: str = "fake"
    requests: list[AgentRequest] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    def start(self, request: AgentRequest) -> FakeRun:
        self.requests.append(request)
        self.started.set()
        number = len(self.requests) - 1
        return FakeRun(request, self.turns[min(number, len(self.turns) - 1)], number)

    def prompt(self, iteration: int) -> str:
        return self.requests[iteration - 1].prompt


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for args in (["init", "-q"], ["config", "user.email", "t@example.invalid"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    (path / "README.md").write_text("hello\n")
    subprocess.run(["git", "add", "."], cwd=path, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=path, check=True)
    return path


@dataclass
class LoopUnderTest:
    handle: RunHandle
    backend: FakeBackend
    task: asyncio.Task[RunState]
    seen: list[RunEvent]

    @property
    def state(self) -> RunState:
        return self.handle.state

    async def ask(self, command: Command) -> Reply:
        return await self.handle.ask(command)

    async def until(self, predicate: Callable[[RunState], bool], timeout: float = 20.0) -> RunState:
        """Wait (not a timing assertion) until the state matches."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not predicate(self.state):
            if self.task.done():
                self.task.result()
                if not predicate(self.state):
                    raise AssertionError(f"the run ended ({self.state.status}) before the state matched")
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"state never matched; status {self.state.status}")
            await asyncio.sleep(0.01)
        return self.state

    async def finish(self, timeout: float = 30.0) -> RunState:
        return await asyncio.wait_for(self.task, timeout)

    def types(self) -> list[str]:
        return [event.type for event in self.seen]

    def replayed(self) -> RunState | None:
        return replay([from_wire(wire) for wire in read_events(self.handle.layout.events)])


def start_loop(project: Path, turns: list[list[Action]], goal: str, answer_channel: bool = True,
               **settings: Any) -> LoopUnderTest:
    (project / "plan.md").write_text(goal)
    values = {"project": project, "goal": project / "plan.md", "dashboard": False, "confirm": False,
              "retry_delay": 1, "retry_max_delay": 2, **settings}
    loaded = load_settings(values, project)
    resolved = resolve_goal(loaded, project)
    prepared = prepare_run(loaded, resolved, project, "fake")
    backend = FakeBackend(turns)
    handle = RunHandle(loaded, project, resolved, backend, "fake", prepared)
    if answer_channel:
        handle.answer_channels.append(lambda: True)  # as if the dashboard were open
    seen: list[RunEvent] = []
    handle.bus.subscribe(seen.append)
    task = asyncio.create_task(handle.run())
    return LoopUnderTest(handle, backend, task, seen)
