"""The run's events as data: one frozen dataclass per thing that happens.

Every event has the same envelope on the wire (one line of events.jsonl, one SSE `log`
frame): `{"seq", "ts", "type", "level", "iteration"?, "message", "data"?}`. A class's own
fields are its `data`, in declaration order; a field left `None` is not written. Keys a
class does not declare (a newer writer, an older reader) survive a round trip in `extra`.

To add an event: subclass `RunEvent` with a `TYPE`, declare its data fields, and (if it
changes the state) teach `run/reducer.py` about it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

_ENVELOPE = ("message", "level", "iteration", "seq", "ts", "extra")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, kw_only=True)
class RunEvent:
    """`message` is the human log line; the subclass's fields are the details."""

    TYPE: ClassVar[str] = ""
    # State-only events (usage, iteration reports, the state's header) are written to
    # events.jsonl so the state can be rebuilt from it, but they are not log lines.
    RECORD_ONLY: ClassVar[bool] = False

    message: str = ""
    level: str = "info"  # info | warn | error | tool | heading
    iteration: int | None = None
    seq: int = 0
    ts: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        return self.TYPE

    @property
    def data(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in _data_fields(type(self))}
        data = {key: value for key, value in data.items() if value is not None}
        data.update(self.extra)
        return data

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"seq": self.seq, "ts": self.ts, "type": self.type, "level": self.level}
        if self.iteration is not None:
            wire["iteration"] = self.iteration
        wire["message"] = self.message
        data = self.data
        if data:
            wire["data"] = data
        return wire


_FIELDS_CACHE: dict[type[RunEvent], tuple[dataclasses.Field[Any], ...]] = {}


def _data_fields(cls: type[RunEvent]) -> tuple[dataclasses.Field[Any], ...]:
    cached = _FIELDS_CACHE.get(cls)
    if cached is None:
        cached = tuple(f for f in dataclasses.fields(cls) if f.name not in _ENVELOPE)
        _FIELDS_CACHE[cls] = cached
    return cached


# ------------------------------------------------------------------ run lifecycle
@dataclass(frozen=True, kw_only=True)
class StateOpened(RunEvent):
    """The state's header when a run starts or resumes: what the reducer starts from."""

    TYPE = "state-init"
    RECORD_ONLY = True
    state: Mapping[str, Any] = field(default_factory=dict)
    resumed: bool = False


@dataclass(frozen=True, kw_only=True)
class RunStarted(RunEvent):
    TYPE = "run-started"
    level: str = "heading"


@dataclass(frozen=True, kw_only=True)
class StatusChanged(RunEvent):
    TYPE = "status"
    status: str = ""
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class RunFinished(RunEvent):
    TYPE = "run-finished"
    level: str = "heading"
    status: str = ""
    resume: str = ""


@dataclass(frozen=True, kw_only=True)
class Crashed(RunEvent):
    TYPE = "crash"
    level: str = "error"
    traceback: str = ""


@dataclass(frozen=True, kw_only=True)
class Warned(RunEvent):
    """A warning line; a scheduled retry carries its reason and attempt."""

    TYPE = "warning"
    level: str = "warn"
    about: str | None = None  # "retry" | "unasked" for the warnings a notification follows
    reason: str | None = None
    attempt: int | None = None
    max_retries: int | None = None


@dataclass(frozen=True, kw_only=True)
class ControlChanged(RunEvent):
    TYPE = "control"
    action: str = ""
    value: Any = None


@dataclass(frozen=True, kw_only=True)
class Reverted(RunEvent):
    TYPE = "revert"
    level: str = "warn"
    iteration_reverted: int = 0
    run: str | None = None


# ------------------------------------------------------------------ iterations
@dataclass(frozen=True, kw_only=True)
class IterationStarted(RunEvent):
    TYPE = "iteration-started"
    level: str = "heading"
    stage_id: str | None = None
    stage_title: str | None = None


@dataclass(frozen=True, kw_only=True)
class CheckpointTaken(RunEvent):
    TYPE = "checkpoint"


@dataclass(frozen=True, kw_only=True)
class IterationReported(RunEvent):
    """The iteration's report (as in NN-report.json) and the run facts it settles."""

    TYPE = "iteration-report"
    RECORD_ONLY = True
    summary: Mapping[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    stale_iterations: int | None = None


@dataclass(frozen=True, kw_only=True)
class IterationFinished(RunEvent):
    TYPE = "iteration-finished"
    outcome: str = ""
    percent: int | None = None


# ------------------------------------------------------------------ the agent's session
@dataclass(frozen=True, kw_only=True)
class SessionOpened(RunEvent):
    TYPE = "session"
    session_id: str = ""


@dataclass(frozen=True, kw_only=True)
class AgentServerStarted(RunEvent):
    """The serve transport's warm agent server is up (one per run)."""

    TYPE = "agent-server"
    runtime: str = ""


@dataclass(frozen=True, kw_only=True)
class TextOut(RunEvent):
    TYPE = "text"


@dataclass(frozen=True, kw_only=True)
class ReasoningOut(RunEvent):
    TYPE = "reasoning"


@dataclass(frozen=True, kw_only=True)
class ToolUsed(RunEvent):
    TYPE = "tool"
    level: str = "tool"
    tool: str = ""
    status: str = ""
    input: Any = None
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class UsageCounted(RunEvent):
    """One finished model step's tokens and cost."""

    TYPE = "usage"
    RECORD_ONLY = True
    tokens: int = 0
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0


@dataclass(frozen=True, kw_only=True)
class AgentErrored(RunEvent):
    TYPE = "agent-error"
    level: str = "error"


@dataclass(frozen=True, kw_only=True)
class AgentFailed(RunEvent):
    TYPE = "agent-failed"
    level: str = "error"
    stderr: str = ""


# ------------------------------------------------------------------ guard, verify, stages
@dataclass(frozen=True, kw_only=True)
class GuardBlocked(RunEvent):
    TYPE = "guard"
    level: str = "error"
    rule: str = ""
    reason: str = ""
    note: str | None = None
    # True: the loop refused the call before it ran (serve transport) and the session went on;
    # such hits count once per iteration toward --max-guard-blocks (at the iteration's report).
    before_execution: bool | None = None


@dataclass(frozen=True, kw_only=True)
class JailRefused(RunEvent):
    """A tool call's write the jail refused (read-only there): shown with its paths."""

    TYPE = "jail"
    level: str = "warn"
    tool: str = ""
    paths: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class GuardPreDenied(RunEvent):
    TYPE = "guard-pre"
    level: str = "warn"
    rule: str | None = None


@dataclass(frozen=True, kw_only=True)
class VerifyFinished(RunEvent):
    TYPE = "verify"
    passed: bool = False
    exit_code: int | None = None
    stage_id: str | None = None
    command: str | None = None
    feedback: str | None = None


@dataclass(frozen=True, kw_only=True)
class StageDone(RunEvent):
    TYPE = "stage-done"
    stage_id: str = ""


@dataclass(frozen=True, kw_only=True)
class StageBlocked(RunEvent):
    """The agent itself reported the stage blocked (a failed verify is a VerifyFinished)."""

    TYPE = "stage-blocked"
    level: str = "warn"
    stage_id: str = ""


# ------------------------------------------------------------------ the human in the loop
@dataclass(frozen=True, kw_only=True)
class QuestionAsked(RunEvent):
    TYPE = "question"
    level: str = "warn"
    question: str = ""
    options: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class AnswerReceived(RunEvent):
    TYPE = "answer"
    source: str = ""
    question: str | None = None
    answer: str | None = None


@dataclass(frozen=True, kw_only=True)
class QuestionUnanswered(RunEvent):
    TYPE = "unanswered"
    level: str = "warn"
    question: str = ""


@dataclass(frozen=True, kw_only=True)
class QuotaWait(RunEvent):
    """A usage limit: the run waits until `until` (ISO time) before it goes on."""

    TYPE = "quota-wait"
    level: str = "warn"
    until: str = ""
    seconds: float = 0.0
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class UnknownEvent(RunEvent):
    """A type this version does not know (a newer writer): kept as it is."""

    kind: str = ""

    @property
    def type(self) -> str:
        return self.kind

    @property
    def data(self) -> dict[str, Any]:
        return dict(self.extra)


EVENT_TYPES: dict[str, type[RunEvent]] = {
    cls.TYPE: cls
    for cls in (
        StateOpened, RunStarted, StatusChanged, RunFinished, Crashed, Warned, ControlChanged, Reverted,
        IterationStarted, CheckpointTaken, IterationReported, IterationFinished, SessionOpened, AgentServerStarted, TextOut,
        ReasoningOut, ToolUsed, UsageCounted, AgentErrored, AgentFailed, GuardBlocked, GuardPreDenied, JailRefused,
        VerifyFinished, StageDone, StageBlocked, QuestionAsked, AnswerReceived, QuestionUnanswered, QuotaWait,
    )
}


def from_wire(wire: Mapping[str, Any]) -> RunEvent:
    """The typed event of one wire dict (as read from events.jsonl); never raises on a known shape."""
    kind = str(wire.get("type", ""))
    cls = EVENT_TYPES.get(kind)
    raw_data = wire.get("data")
    data: dict[str, Any] = dict(raw_data) if isinstance(raw_data, Mapping) else {}
    iteration = wire.get("iteration")
    envelope: dict[str, Any] = {
        "message": str(wire.get("message", "")),
        "level": str(wire.get("level", "info")),
        "iteration": iteration if isinstance(iteration, int) else None,
        "seq": int(wire.get("seq", 0) or 0),
        "ts": str(wire.get("ts", "")),
    }
    if cls is None:
        return UnknownEvent(kind=kind, extra=data, **envelope)
    known = {f.name for f in _data_fields(cls)}
    fields = {key: value for key, value in data.items() if key in known}
    extra = {key: value for key, value in data.items() if key not in known}
    return cls(**envelope, **fields, extra=extra)


# Types that are state-only records, not log lines: the console, the dashboard's log and the
# history pages skip them.
RECORD_ONLY_TYPES: frozenset[str] = frozenset(name for name, cls in EVENT_TYPES.items() if cls.RECORD_ONLY)


def is_log_line(wire: Mapping[str, Any]) -> bool:
    return wire.get("type") not in RECORD_ONLY_TYPES
