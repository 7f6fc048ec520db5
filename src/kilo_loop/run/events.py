"""The run's events as data: one frozen dataclass per thing that happens.

Every event has the same envelope on the wire (one line of events.jsonl, one SSE `log`
frame): `{"seq", "ts", "type", "level", "iteration"?, "message", "data"?}`. A class's own
fields are its `data`, in declaration order; a field left `None` is not written. Keys a
class does not declare (a newer writer, an older reader) survive a round trip in `extra`.

Every event type of the run is declared here, the review's included, so a replay of events.jsonl
knows them all whatever else was imported. To add an event: subclass `RunEvent` with a `TYPE`,
declare its data fields, list it in `EVENT_TYPES`, and (if it changes the state) teach
`run/reducer.py` about it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from kilo_loop.run.controls import ControlAction
from kilo_loop.run.guard_decision import GuardDecision
from kilo_loop.run.status import Phase, RunStatus, StopReason

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


def _as_status(value: object) -> object:
    """A wire status as its enum; a name this version does not know (a newer writer) stays as it is."""
    if isinstance(value, Phase | StopReason) or not isinstance(value, str):
        return value
    return _STATUSES.get(value, value)


_STATUSES: dict[str, RunStatus] = {**{p.value: p for p in Phase}, **{r.value: r for r in StopReason}}


_ACTION_NAMES = frozenset(ControlAction)


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
    status: RunStatus = Phase.RUNNING
    reason: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", _as_status(self.status))


@dataclass(frozen=True, kw_only=True)
class RunFinished(RunEvent):
    TYPE = "run-finished"
    level: str = "heading"
    status: StopReason = StopReason.DONE
    resume: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", _as_status(self.status))


@dataclass(frozen=True, kw_only=True)
class SecretsMasked(RunEvent):
    """Known secrets masked by value: at the start, how many values each source registered (and
    what was skipped); at the end, how many occurrences were masked, by source.  Never the values."""

    TYPE = "secrets-masked"
    registered: Mapping[str, int] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


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
    action: ControlAction = ControlAction.PAUSE
    value: Any = None

    def __post_init__(self) -> None:
        # a newer writer's action stays as it is: replayed, it changes nothing
        if not isinstance(self.action, ControlAction) and self.action in _ACTION_NAMES:
            object.__setattr__(self, "action", ControlAction(self.action))


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
    review: bool | None = None  # a reviewer's session: counts toward the run, not the iteration's row


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

    @classmethod
    def of(cls, decision: GuardDecision, message: str, *, note: str | None = None,
           before_execution: bool | None = None, extra: Mapping[str, Any] | None = None) -> GuardBlocked:
        """The event of a guard's deny: its rule and reason as the decision names them."""
        return cls(message=message, rule=decision.rule_name, reason=decision.reason, note=note,
                   before_execution=before_execution, extra=dict(extra or {}))


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
class FinishPlanned(RunEvent):
    """How this run hands its work over (`--finish commit|branch`), said once at its start."""

    TYPE = "finish"
    mode: str = "commit"
    branch: str | None = None


@dataclass(frozen=True, kw_only=True)
class StageCommitted(RunEvent):
    """The loop committed a finished stage's changes (`--finish commit|branch`)."""

    TYPE = "stage-committed"
    stage_id: str = ""
    commit: str = ""
    branch: str | None = None
    files: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # changed, but dirty before the run: not committed


@dataclass(frozen=True, kw_only=True)
class PullRequestOpened(RunEvent):
    """`--finish pr`: the run's pull request was opened or updated (a draft while stages are left)."""

    TYPE = "pull-request"
    url: str = ""
    number: int = 0
    draft: bool = False


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
    stop: str | None = None  # the reset is beyond --max-quota-wait: why the run stops instead of waiting


# ------------------------------------------------------------------ notes to the agent
@dataclass(frozen=True, kw_only=True)
class NoteQueued(RunEvent):
    """The operator's note to the agent, waiting for the next model request that can carry it."""

    TYPE = "note-queued"
    note_id: str = ""
    text: str = ""
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class NoteWithdrawn(RunEvent):
    TYPE = "note-withdrawn"
    note_id: str = ""
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class NoteDelivered(RunEvent):
    """A model request carried the note: `live` into the running session (serve), or `prompt` (an iteration's)."""

    TYPE = "note-delivered"
    note_ids: list[str] = field(default_factory=list)
    via: str = ""
    session_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class NoteAcknowledged(RunEvent):
    """The agent confirmed the note: in its reply (`reply`) or progress.json `notesSeen` (`progress`)."""

    TYPE = "note-acknowledged"
    note_ids: list[str] = field(default_factory=list)
    how: str = ""


@dataclass(frozen=True, kw_only=True)
class McpCalled(RunEvent):
    """A chat agent steered the run through `kilo-loop mcp` (a start, an answer, a note, pause, stop)."""

    TYPE = "mcp-call"
    tool: str = ""


@dataclass(frozen=True, kw_only=True)
class McpRead(RunEvent):
    """A chat agent read the run through `kilo-loop mcp` (status, a wait for change, the report): recorded, not logged."""

    TYPE = "mcp-read"
    RECORD_ONLY = True
    tool: str = ""


# ------------------------------------------------------------------ the review wave
@dataclass(frozen=True, kw_only=True)
class ReviewStarted(RunEvent):
    TYPE = "review-started"
    level: str = "heading"
    role: str = ""
    started_at: str = ""


@dataclass(frozen=True, kw_only=True)
class ReviewBaseline(RunEvent):
    """At a stage's first reviewed iteration: the tree its review diffs against, and whether verify
    already passed before the stage's work (then it proves nothing about it)."""

    TYPE = "review-baseline"
    RECORD_ONLY = True
    stage_id: str = ""
    tree: str = ""
    verify_passed: bool = False


@dataclass(frozen=True, kw_only=True)
class ReviewFinished(RunEvent):
    TYPE = "review-finished"
    role: str = ""
    verdict: str = ""
    started_at: str = ""
    finished_at: str = ""
    tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True, kw_only=True)
class ReviewRound(RunEvent):
    TYPE = "review-round"
    stage_id: str = ""
    count: int = 0
    step: str = ""
    budget: int | None = None  # the stage's retry budget for the run (absent in runs recorded before it)


@dataclass(frozen=True, kw_only=True)
class ReviewFinal(RunEvent):
    TYPE = "review-final"


@dataclass(frozen=True, kw_only=True)
class ReviewRecheck(RunEvent):
    TYPE = "review-recheck"
    roles: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class ReviewDeferred(RunEvent):
    TYPE = "review-deferred"
    rows: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ReviewFixPass(RunEvent):
    TYPE = "review-fix-pass"
    level: str = "heading"


@dataclass(frozen=True, kw_only=True)
class ReviewResumed(RunEvent):
    TYPE = "review-resume"


@dataclass(frozen=True, kw_only=True)
class ReviewGateOpened(RunEvent):
    """The gate waits for the operator: the state carries it for the terminal and the dashboard."""

    TYPE = "review-gate"
    level: str = "warn"
    stage_id: str = ""
    exit: str = ""
    rows: int = 0
    gate: Mapping[str, Any] = field(default_factory=dict)
    costs: str | None = None  # what each reviewer of the round cost


@dataclass(frozen=True, kw_only=True)
class ReviewGateAnswered(RunEvent):
    TYPE = "review-gate-answer"
    reply: str = ""
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class ReviewGateClosed(RunEvent):
    TYPE = "review-gate-closed"
    RECORD_ONLY = True


@dataclass(frozen=True, kw_only=True)
class ReviewBlocked(RunEvent):
    """The review keeps the stage open (un-advanced; its markdown is not ticked)."""

    TYPE = "review-block"
    level: str = "warn"
    stage_id: str = ""
    count: int | None = None
    costs: str | None = None
    feedback: str | None = None  # what the implementer is told to fix next


@dataclass(frozen=True, kw_only=True)
class ReviewHeld(RunEvent):
    """The stage's review budget is spent and nobody can answer the gate (no terminal, no dashboard,
    or `--review-gate off`): the stage is blocked for the rest of the run, resumes included."""

    TYPE = "review-held"
    level: str = "error"
    stage_id: str = ""
    exit: str = ""
    findings: list[Mapping[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ProtectedChanged(RunEvent):
    """Protected files changed since the stage began: the stage is blocked."""

    TYPE = "protected"
    level: str = "error"
    stage_id: str = ""
    files: list[str] = field(default_factory=list)
    feedback: str | None = None  # what the implementer is told (put the files back)


@dataclass(frozen=True, kw_only=True)
class TamperFound(RunEvent):
    """The stage's diff weakens its tests: blocked (--tamper block) or only said (warn)."""

    TYPE = "tamper"
    level: str = "error"
    stage_id: str = ""
    blocked: bool = True
    findings: list[dict[str, Any]] = field(default_factory=list)
    feedback: str | None = None  # blocked: what the implementer is told to put back


# ------------------------------------------------------------------ going in circles (loop/circles)
@dataclass(frozen=True, kw_only=True)
class CirclesObserved(RunEvent):
    """What the circle detectors saw at the end of an iteration, as they decided it: the verify
    failure's signature and its streak, the work tree's fingerprint, the changed files' contents."""

    TYPE = "circles"
    RECORD_ONLY = True
    stage_id: str = ""
    signature: str = ""
    signature_text: str = ""
    streak: int = 0
    files_changed: list[str] = field(default_factory=list)
    cost: float = 0.0
    tree: str = ""  # the work tree after the iteration
    start_tree: str = ""  # the tree before it, on the stage's first observation
    contents: Mapping[str, list[str]] = field(default_factory=dict)  # changed path -> its new content id(s)
    oscillation: str = ""  # what returned, when something did
    progress: bool = False  # verify passed, or failed a new way: the ladder starts again


@dataclass(frozen=True, kw_only=True)
class CircleFound(RunEvent):
    """Thrash or oscillation, and the ladder's rung the loop takes: a fresh session with a step-back
    prompt, a question to the operator, or the stop (with its diagnosis)."""

    TYPE = "circle"
    level: str = "warn"
    kind: str = ""  # thrash | oscillation
    step: str = ""  # fresh-session | ask-operator | stop
    stage_id: str = ""
    diagnosis: str = ""
    note: str = ""  # what the next prompt tells the agent


@dataclass(frozen=True, kw_only=True)
class SessionEndedEarly(RunEvent):
    """A doom loop inside a session (the same tool call again and again, or failing calls in a row):
    the loop ended the session and estimates what that saved."""

    TYPE = "session-ended-early"
    level: str = "warn"
    reason: str = ""
    calls: int = 0
    tokens: int = 0  # what the session had spent
    cost: float = 0.0
    saved_tokens: int = 0
    saved_cost: float = 0.0
    note: str = ""


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
        StateOpened, RunStarted, StatusChanged, FinishPlanned, StageCommitted, PullRequestOpened, RunFinished, SecretsMasked, Crashed, Warned, ControlChanged, Reverted,
        IterationStarted, CheckpointTaken, IterationReported, IterationFinished, SessionOpened, AgentServerStarted, TextOut,
        ReasoningOut, ToolUsed, UsageCounted, AgentErrored, AgentFailed, GuardBlocked, GuardPreDenied, JailRefused,
        VerifyFinished, StageDone, StageBlocked, QuestionAsked, AnswerReceived, QuestionUnanswered, QuotaWait,
        ReviewStarted, ReviewBaseline, ReviewFinished, ReviewRound, ReviewFinal, ReviewRecheck, ReviewDeferred, ReviewFixPass,
        ReviewResumed, ReviewGateOpened, ReviewGateAnswered, ReviewGateClosed, ReviewBlocked, ReviewHeld,
        ProtectedChanged,
        TamperFound,
        NoteQueued, NoteWithdrawn, NoteDelivered, NoteAcknowledged, McpCalled, McpRead,
        CirclesObserved, CircleFound, SessionEndedEarly,
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
