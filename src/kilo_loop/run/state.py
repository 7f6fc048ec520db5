"""The run's state as persisted in state.json and served to the dashboard.

Field names are camelCase on the wire (state.json, /api/state) to match the
original tool; Python code uses snake_case attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from kilo_loop.run.circles import CircleMark, CircleState
from kilo_loop.run.status import Phase, RunStatus, StageStatus
from kilo_loop.run.wire import WireModel as WireModel  # the state models' base, imported from here too

_NO_CIRCLES = CircleState()
LOG_TAIL_LINES = 200
# state.json keeps the newest iterations only (each one's whole report is iterations/NN-report.json),
# so its size, and the bytes written per iteration, do not grow with the run.
ITERATIONS_KEPT = 50


class StageState(WireModel):
    id: str
    title: str
    status: StageStatus = "pending"
    verify: str | None = None
    acceptance: str | None = None


class Totals(WireModel):
    tokens: int = 0
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0


class VerifyResult(WireModel):
    command: str
    exit_code: int | None
    passed: bool
    output_tail: str = ""
    duration_ms: int = 0
    timed_out: bool = False


class Question(WireModel):
    question: str
    options: list[str] = Field(default_factory=list)


class Note(WireModel):
    """The operator's note to the agent and its life: queued -> delivered -> acknowledged (or withdrawn)."""

    id: str
    text: str
    source: str = ""
    status: str = "queued"  # queued | delivered | acknowledged | withdrawn
    queued_at: str = ""
    delivered_at: str | None = None
    delivered_via: str | None = None  # live (into the running session) | prompt (an iteration's)
    iteration: int | None = None  # the iteration whose session carried it
    acknowledged_at: str | None = None
    acknowledged_how: str | None = None  # reply | progress


class Answer(WireModel):
    question: str
    answer: str
    iteration: int = 0
    source: str = "terminal"
    answered_at: str = ""


class ReviewRoleRun(WireModel):
    """One reviewer session of a review round: its verdict and what it cost."""

    role: str
    verdict: str = "block"
    findings: int = 0
    malformed: bool = False
    tokens: int = 0
    cost: float = 0.0
    session_id: str | None = None
    started_at: str = ""
    finished_at: str = ""
    final_pass: bool = False


class ReviewRoundSummary(WireModel):
    """The review that ran after this iteration's stage passed verify."""

    round: int = 1
    step: str = ""  # retry | clean | thrash | exhausted | recheck | blocked | protected
    count: int = 0
    budget: int = 0
    verdict: str = "block"  # pass when the stage advanced
    roles: list[ReviewRoleRun] = Field(default_factory=list)
    findings: list[dict[str, Any]] = Field(default_factory=list)
    gate: str = ""  # asked | fix | resolved | skipped | ""


class ReviewGateState(WireModel):
    """The open review gate the terminal and dashboard answer (one at a time)."""

    stage_id: str
    stage_title: str = ""
    exit: str = ""  # clean | thrash | exhausted: how the loop ended; recheck: the fix pass's recheck
    label: str = ""  # what brought the operator here, as the terminal says it
    counts: list[int] = Field(default_factory=list)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    reviewers: list[dict[str, Any]] = Field(default_factory=list)  # one summary per reviewer (review.gate_view)
    question: str = ""


class ReviewStageState(WireModel):
    """One stage's review loop for the whole run, resumes included: what its retry budget is, what it
    has used, and whether it is held. Written by the reducer from the review events only."""

    budget: int | None = None  # recorded by the first round (None: no round yet, or a run recorded before)
    retries: int = 0  # automatic retries used in this run: the budget is spent once, never reset
    counts: list[int] = Field(default_factory=list)  # blocking count per round of the loop under way
    rounds: int = 0  # review rounds judged in this run
    exit: str = ""  # the last loop's exit (clean | thrash | exhausted); "" while a loop runs
    held: bool = False  # the budget is spent and nobody could answer the gate: the stage is blocked for the run
    findings: list[dict[str, Any]] = Field(default_factory=list)  # what holds it, for the report
    base_tree: str | None = None  # the tree when the stage began: reviewers read the diff since
    verify_before: bool = False  # verify passed before the stage's work: it proves nothing about it


class IterationSummary(WireModel):
    """One iteration's report: NN-report.json holds it whole; state.json keeps it too."""

    iteration: int
    stage_id: str | None = None
    stage_title: str | None = None
    session_id: str | None = None
    outcome: str = "running"  # running | ok | failed | guard | timeout | stopped | retrying
    tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    context_tokens: int = 0
    # {tokens, cost, messages} from the CLI's own database; left out of the wire when not read
    usage_db: dict[str, float | int] | None = Field(default=None, exclude_if=lambda value: value is None)
    topic: str = ""
    percent: int = 0
    next_stage: str = ""
    summary: str = ""
    files_changed: list[str] = Field(default_factory=list)
    tool_calls: int = 0
    retries: int = 0
    retry_reason: str = ""
    guard_hits: int = 0
    guard_reason: str = ""
    verify: VerifyResult | None = None
    review: ReviewRoundSummary | None = None
    # Test tampering found in the stage's diff when verify passed (tamper/): {file, line, rule, reason}
    tamper_findings: list[dict[str, Any]] = Field(default_factory=list, exclude_if=lambda value: not value)
    progress_source: str = "agent"  # agent | fallback
    questions: list[Question] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    error: str = ""
    started_at: str = ""
    finished_at: str = ""
    duration_ms: int = 0
    # going in circles (loop/circles): left out of the wire while nothing was seen
    circles: CircleMark | None = Field(default=None, exclude_if=lambda value: value is None)


@dataclass(frozen=True)
class IterationFacts:
    """What the loop learned of an iteration that no earlier event counted: the session's report, the
    stage's verdict, the work tree's changes. The reducer settles the iteration's row from these and
    from what the events already built (its stage and start, tokens and cost, retries): see
    `run.reducer.settled_row`."""

    session_id: str | None = None
    outcome: str = "ok"
    tool_calls: int = 0
    usage_db: dict[str, float | int] | None = None
    topic: str = ""
    percent: int = 0
    next_stage: str = ""
    summary: str = ""
    files_changed: tuple[str, ...] = ()
    guard_hits: int = 0
    guard_reason: str = ""
    verify: VerifyResult | None = None
    review: ReviewRoundSummary | None = None
    progress_source: str = "agent"
    questions: tuple[Question, ...] = ()
    warnings: tuple[str, ...] = ()
    error: str = ""
    duration_ms: int = 0
    tamper_findings: tuple[dict[str, Any], ...] = ()
    circles: CircleMark | None = None


class RetryState(WireModel):
    attempt: int = 0
    max_retries: int = 0
    reason: str = ""


class RunState(WireModel):
    """Written only by `run.reducer.reduce`; state.json is a snapshot of it."""

    run_id: str
    status: RunStatus = Phase.STARTING
    project: str
    goal_title: str
    goal_source: str | None = None
    goal_kind: str = "text"
    stages: list[StageState] = Field(default_factory=list)
    current_stage_id: str | None = None
    completed_stages: list[str] = Field(default_factory=list)
    blocked_stages: list[str] = Field(default_factory=list)
    runtime: str = "kilo"
    sandbox: str = "off"  # what the jail is ("bwrap — project rw, .git ro, 3 protected, network full")
    agent: str | None = None
    model: str | None = None
    max_iterations: int = 5
    iteration: int = 0
    shared_context: bool = False
    hitl: str = "on-question"
    dry_run: bool = False
    prompt_extra: str | None = None
    session_id: str | None = None
    started_at: str = ""
    finished_at: str | None = None
    totals: Totals = Field(default_factory=Totals)
    last_percent: int = 0
    context_tokens: int = 0
    iterations: list[IterationSummary] = Field(default_factory=list)  # the newest ITERATIONS_KEPT
    iterations_total: int = 0  # how many iterations the run has had (the older ones are on disk)
    pending_questions: list[Question] = Field(default_factory=list)
    answers: int = 0
    retry: RetryState = Field(default_factory=RetryState)
    guard_blocks: int = 0
    masked: dict[str, int] = Field(default_factory=dict)  # known secrets masked, by source
    consecutive_guard_blocks: int = 0
    guard_note: str = ""
    verify_feedback: str = ""
    unanswered: list[Question] = Field(default_factory=list)
    quota_until: str | None = None
    stale_iterations: int = 0
    # what the implementer is told to fix from the review (or the protect check) until the stage is done
    review_feedback: str = Field(default="", exclude_if=lambda value: not value)
    # a usage limit that resets beyond --max-quota-wait: the run stops after this iteration's report
    quota_stop: str = Field(default="", exclude_if=lambda value: not value)
    paused: bool = False
    abort_requested: bool = False
    # A Stop ends this process's run: the reducer sets it from the `control` event, it is not written
    # to state.json (a resumed run starts unstopped), and a replay of events.jsonl sets it again.
    stop_requested: bool = Field(default=False, exclude=True)
    # Also this process's, set again by each state-init: the first iteration it runs (an abort after the
    # session ends only a session it ran), and every file the run changed (the prompt lists them).
    first_iteration: int = Field(default=1, exclude=True)
    run_files: list[str] = Field(default_factory=list, exclude=True)
    stop_reason: str = ""
    last_error: str = ""
    resume_command: str = ""
    review_gate: ReviewGateState | None = None
    # by stage id; left out of the wire while no review ran, so a run without a review keeps its shape
    review_stages: dict[str, ReviewStageState] = Field(default_factory=dict, exclude_if=lambda value: not value)
    notes: list[Note] = Field(default_factory=list)  # the operator's notes to the agent, oldest first
    # the circle detectors' memory (run/circles.py); left out of state.json until something is in it
    circles: CircleState = Field(default_factory=CircleState, exclude_if=lambda value: value == _NO_CIRCLES)
    seq: int = 0  # the last event folded into this state: resume replays events.jsonl past it
    log_tail: list[dict[str, Any]] = Field(default_factory=list)

    def empty_optional(self) -> set[str]:
        """Fields left out of state.json while empty, so a run that never used them keeps its old shape."""
        return {name for name in ("masked", "notes") if not getattr(self, name)}

    def snapshot(self, newest: int | None = None) -> dict[str, Any]:
        """state.json's content: the header, then the history (iterations, log tail) last. With
        `newest`, only that many iterations (the dashboard's view of a long run; a copy of the tail)."""
        # ``masked`` only once something was: a run without known secrets keeps its old shape
        wire = self.model_dump(mode="json", by_alias=True,
                               exclude={"iterations", "log_tail"} | self.empty_optional())
        if newest is None:
            wire["iterations"] = _ITERATION_WIRES.of(self.iterations)
            wire["logTail"] = self.log_tail
        else:
            wire["iterations"] = [item.wire() for item in self.iterations[-newest:]]
            wire["logTail"] = list(self.log_tail)
        return wire

    def current_iteration(self) -> IterationSummary | None:
        """The row of the iteration under way (or the last one), as the reducer built it."""
        items = self.iterations
        return items[-1] if items and items[-1].iteration == self.iteration else None

    def held_stages(self) -> list[str]:
        """Stages the review holds for the rest of the run (its budget spent, nobody to answer)."""
        return [stage_id for stage_id, review in self.review_stages.items() if review.held]

    def stage_state(self, stage_id: str) -> StageState | None:
        return next((stage for stage in self.stages if stage.id == stage_id), None)


class _WireCache:
    """The wire form of the iterations the last snapshot held, by identity. The reducer replaces an
    iteration it changes (model_copy) and never edits one in place, so an item seen before has the
    same wire form: a snapshot once per iteration dumps one or two items, not the 50 it keeps."""

    def __init__(self) -> None:
        self._wires: dict[int, tuple[IterationSummary, dict[str, Any]]] = {}

    def of(self, items: list[IterationSummary]) -> list[dict[str, Any]]:
        kept: dict[int, tuple[IterationSummary, dict[str, Any]]] = {}
        for item in items:
            hit = self._wires.get(id(item))
            kept[id(item)] = hit if hit is not None and hit[0] is item else (item, item.wire())
        self._wires = kept  # holding the items keeps their ids from being reused
        return [wire for _item, wire in kept.values()]


_ITERATION_WIRES = _WireCache()
