"""The contract between the loop and an agent CLI backend.

A backend turns an `AgentRequest` into a stream of normalized `AgentEvent`s and
a final `AgentResult`. Backends are looked up by name (`kilo`, `opencode`,
`dry-run`) or by a `module:attr` reference (see `agent.registry`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class AgentRequest:
    prompt: str
    cwd: Path
    title: str
    agent: str | None = None
    model: str | None = None
    variant: str | None = None
    session_id: str | None = None
    thinking: bool = False
    auto_approve: bool = True
    timeout_s: float | None = None
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TokenUsage:
    total: int = 0
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            total=self.total + other.total,
            input=self.input + other.input,
            output=self.output + other.output,
            reasoning=self.reasoning + other.reasoning,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "total": self.total,
            "input": self.input,
            "output": self.output,
            "reasoning": self.reasoning,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
        }


@dataclass(frozen=True)
class SessionStarted:
    session_id: str


@dataclass(frozen=True)
class ToolUse:
    tool: str
    input: dict[str, Any]
    status: str
    output: str = ""
    error: str = ""
    call_id: str = ""


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Reasoning:
    text: str


@dataclass(frozen=True)
class StepFinished:
    tokens: TokenUsage
    cost: float
    reason: str = ""


@dataclass(frozen=True)
class AgentError:
    name: str
    message: str
    retryable: bool | None = None


@dataclass(frozen=True)
class GuardRejected:
    """The loop refused a tool call BEFORE it ran (serve transport: the loop answers the CLI's
    permission request). The session goes on; the loop counts it as a guard block."""

    tool: str
    subject: str  # the command, or the path, that was refused
    rule: str
    reason: str
    call_id: str = ""


@dataclass(frozen=True)
class QuestionOption:
    question: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgentQuestion:
    """The agent asked through its CLI's own question tool and waits. The consumer answers with
    `run.answer(request_id, answers)` (an `AnsweringRun`) before reading on; unanswered, it is
    rejected so the agent goes on without."""

    request_id: str
    questions: tuple[QuestionOption, ...]


@dataclass(frozen=True)
class GarbageLine:
    """A line of the stream that was not a JSON event; logged and skipped."""

    line: str
    problem: str


AgentEvent = (
    SessionStarted | ToolUse | Text | Reasoning | StepFinished | AgentError | GarbageLine | GuardRejected
    | AgentQuestion
)


@dataclass
class AgentResult:
    exit_code: int | None
    session_id: str | None = None
    tokens: TokenUsage = field(default_factory=TokenUsage)
    cost: float = 0.0
    context_tokens: int = 0
    error: str | None = None
    stderr_tail: str = ""
    timed_out: bool = False
    killed: bool = False
    text: str = ""

    def mark_killed(self, reason: str) -> None:
        """The loop ended the session (guard, Stop, budget); the first error stays the reported one."""
        self.killed = True
        self.error = self.error or reason

    @property
    def failed(self) -> bool:
        return self.error is not None or self.timed_out or self.killed or self.exit_code not in (0, None)


@runtime_checkable
class AgentRun(Protocol):
    """One running session: iterate its events, then read `result`."""

    def events(self) -> AsyncGenerator[AgentEvent, None]: ...

    async def kill(self, reason: str) -> None: ...

    @property
    def result(self) -> AgentResult: ...


@runtime_checkable
class AnsweringRun(Protocol):
    """A run whose agent can wait for an answer (an `AgentQuestion`); None rejects the question."""

    async def answer(self, request_id: str, answers: list[str] | None) -> None: ...


@runtime_checkable
class AgentBackend(Protocol):
    name: str

    def start(self, request: AgentRequest) -> AgentRun: ...
