"""Request bodies of the dashboard API (camelCase on the wire, as the seed documents them).

Strict: wrong JSON types are refused instead of coerced, unknown fields are an error, and
every string and list has a bound, so no request can make the loop do unbounded work.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

MAX_FILE_CHARS = 1024
MAX_COMMAND_CHARS = 4096
MAX_PROMPT_EXTRA_CHARS = 16_000
MAX_ITERATIONS = 100_000
MAX_ITERATION_NUMBER = 1_000_000


class Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


PlanFile = Annotated[
    str, Field(min_length=1, max_length=MAX_FILE_CHARS, description="plan path relative to the project")
]


class VerifyRequest(Body):
    file: PlanFile
    stage_index: int | None = Field(
        None, ge=0, le=MAX_ITERATIONS, description="0-based; omitted = plan-wide (JSON)"
    )
    verify: str = Field(max_length=MAX_COMMAND_CHARS, description="command; empty removes it")


class GlobalVerifyRequest(Body):
    verify: str = Field(max_length=MAX_COMMAND_CHARS)


class PlanRequest(Body):
    file: PlanFile


class DoneRequest(Body):
    file: PlanFile
    done: bool = True


class StartRequest(Body):
    file: PlanFile
    iterations: int | None = Field(None, ge=1, le=MAX_ITERATIONS)
    agent: str | None = Field(None, max_length=200, pattern=r"^[A-Za-z0-9._:/@+-]*$")
    hitl: Literal["always", "on-question", "off"] | None = None
    dry_run: bool | None = None
    prompt_extra: str | None = Field(None, max_length=MAX_PROMPT_EXTRA_CHARS)
    force: bool = Field(False, description="run even when every stage is marked done")


class ControlRequest(Body):
    action: Literal["pause", "resume", "abort-after-current", "stop", "set-shared-context"]
    value: bool | None = None


class RevertRequest(Body):
    iteration: int = Field(ge=1, le=MAX_ITERATION_NUMBER)
    run: str | None = Field(None, max_length=128, description="a saved run's id; default the active run")
    force: bool = Field(False, description="revert even if HEAD moved since the checkpoint")


class NoteRequest(Body):
    # the run's own check (8 KB) answers a long note in words; this bound only stops unbounded bodies
    text: str = Field(max_length=65_536, description="the note for the agent, at most 8 KB")


class AnswerEntry(Body):
    question: str = Field(max_length=4000)
    answer: str = Field(max_length=8000)


class AnswerRequest(Body):
    answers: list[AnswerEntry] = Field(min_length=1, max_length=50)
