"""The run's state as persisted in state.json and served to the dashboard.

Field names are camelCase on the wire (state.json, /api/state) to match the
original tool; Python code uses snake_case attributes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kilo_loop.run.status import RunStatus, StageStatus

LOG_TAIL_LINES = 200


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


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


class Answer(WireModel):
    question: str
    answer: str
    iteration: int = 0
    source: str = "terminal"
    answered_at: str = ""


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
    progress_source: str = "agent"  # agent | fallback
    questions: list[Question] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    error: str = ""
    started_at: str = ""
    finished_at: str = ""
    duration_ms: int = 0


class RetryState(WireModel):
    attempt: int = 0
    max_retries: int = 0
    reason: str = ""


class RunState(WireModel):
    """Written only by `run.reducer.reduce`; state.json is a snapshot of it."""

    run_id: str
    status: RunStatus = "starting"
    project: str
    goal_title: str
    goal_source: str | None = None
    goal_kind: str = "text"
    stages: list[StageState] = Field(default_factory=list)
    current_stage_id: str | None = None
    completed_stages: list[str] = Field(default_factory=list)
    blocked_stages: list[str] = Field(default_factory=list)
    runtime: str = "kilo"
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
    iterations: list[IterationSummary] = Field(default_factory=list)
    pending_questions: list[Question] = Field(default_factory=list)
    answers: int = 0
    retry: RetryState = Field(default_factory=RetryState)
    guard_blocks: int = 0
    consecutive_guard_blocks: int = 0
    guard_note: str = ""
    verify_feedback: str = ""
    unanswered: list[Question] = Field(default_factory=list)
    quota_until: str | None = None
    stale_iterations: int = 0
    paused: bool = False
    abort_requested: bool = False
    stop_reason: str = ""
    last_error: str = ""
    resume_command: str = ""
    seq: int = 0  # the last event folded into this state: resume replays events.jsonl past it
    log_tail: list[dict[str, Any]] = Field(default_factory=list)

    def snapshot(self) -> dict[str, Any]:
        """state.json's content: the header, then the history (iterations, log tail) last."""
        wire = self.model_dump(mode="json", by_alias=True, exclude={"iterations", "log_tail"})
        wire["iterations"] = [item.wire() for item in self.iterations]
        wire["logTail"] = self.log_tail
        return wire

    def stage_state(self, stage_id: str) -> StageState | None:
        return next((stage for stage in self.stages if stage.id == stage_id), None)
