"""The contract between the loop and an agent CLI backend.

A backend turns an `AgentRequest` into a stream of normalized `AgentEvent`s and
a final `AgentResult`. Before the first request the loop hands it an `AgentPolicy`
(what the loop decided: guard on/off, project, run directory, environment) and the
backend turns that into its own CLI's flags, environment and config files: the loop
knows no CLI. Backends are looked up by runtime name (`kilo`, `opencode`, `claude`,
`codex`, `gemini`, `cursor`, `dry-run`) or by a `module:attr` reference (see
`agent.registry`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from kilo_loop.sandbox.jail import Jail

from kilo_loop.run.guard_decision import GuardDecision


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
    # The runtime a goal stage asked for (None: the run's own); see agent.router.
    runtime: str | None = None
    # The stage's `protect` globs: file tools may not write these paths (refused before the write
    # where the CLI asks first: serve's permission broker, the pre-tool hooks).
    protect: tuple[str, ...] = ()
    # A reviewer's session: it only reads (file tools may write only the loop's own folder); the
    # serve transport refuses its writes before they happen.
    read_only: bool = False
    # A reviewer's verdict file: the one path its jail leaves writable.
    review_file: Path | None = None


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
    decision: GuardDecision
    call_id: str = ""

    @property
    def rule(self) -> str:
        return self.decision.rule_name

    @property
    def reason(self) -> str:
        return self.decision.reason


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


@dataclass(frozen=True)
class PromptCarried:
    """A model request of the running session carried the text given to `run.inject(text, token)`."""

    token: str


AgentEvent = (
    SessionStarted | ToolUse | Text | Reasoning | StepFinished | AgentError | GarbageLine | GuardRejected
    | AgentQuestion | PromptCarried
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
    # Warnings the CLI printed (e.g. kilo's `!` lines on stderr), already picked out by the backend.
    warnings: list[str] = field(default_factory=list)
    # The backend's own word on whether the failure is transient (None: the loop judges the text).
    retryable: bool | None = None

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
class InjectingRun(Protocol):
    """A run that takes more text into its live session while it works (the serve transport): the
    text waits on the session and goes with its next model request, announced by `PromptCarried(token)`.
    False when the session cannot take it now (not started, or over): the caller keeps it for later."""

    async def inject(self, text: str, token: str) -> bool: ...


@runtime_checkable
class AgentBackend(Protocol):
    name: str

    def start(self, request: AgentRequest) -> AgentRun: ...


@dataclass(frozen=True)
class AgentPolicy:
    """What the loop decided for a run; each backend turns it into its own CLI's terms."""

    project: Path
    guard: bool = True  # install the CLI's own pre-execution guard layer (deny rules, hooks)
    guard_deny: tuple[str, ...] = ()  # the run's extra guard patterns (guardDeny / guardAllow)
    guard_allow: tuple[str, ...] = ()
    guard_packs: Mapping[str, bool] = field(default_factory=dict)  # rule packs switched on/off (guardPacks)
    run_dir: Path | None = None  # where per-run files (generated settings, an isolated HOME) go
    isolate_home: bool = False  # HOME/XDG_* for the agent under the run directory
    environ: Mapping[str, str] = field(default_factory=dict)  # the environment the child inherits
    provider_config_mode: str = "auto"  # kilo/opencode provider injection: auto | legacy_env | none
    models: tuple[str, ...] = ()  # every --model the run may use (the run's and its stages')
    protect: tuple[str, ...] = ()  # every protect glob of the goal (its stages' own included)
    jail: Jail | None = None  # the run's jail (sandbox.jail): every child that runs agent code goes in it


@dataclass(frozen=True)
class Preparation:
    """Environment entries to set on every session's child, and notes for the operator."""

    env: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@runtime_checkable
class PreparableBackend(AgentBackend, Protocol):
    def prepare(self, policy: AgentPolicy) -> Preparation: ...


def prepare_backend(backend: AgentBackend, policy: AgentPolicy) -> Preparation:
    """`backend.prepare(policy)` when it has one (a third-party backend may not)."""
    if isinstance(backend, PreparableBackend):
        return backend.prepare(policy)
    return Preparation()
