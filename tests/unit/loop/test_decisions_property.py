"""The loop decides from the state alone: random mixes of operator commands (through the real command
handler) and loop events give the same decisions whether read from the live state or from the state
rebuilt by replaying events.jsonl — so no flag the loop decides on lives outside the reducer."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kilo_loop.goal.model import Goal, Stage
from kilo_loop.loop import stop_policy
from kilo_loop.loop.commands import (
    AbortAfterSession,
    Command,
    CommandHandler,
    Pause,
    Resume,
    SetPromptExtra,
    SetSharedContext,
    StopNow,
    TogglePause,
    _Envelope,
)
from kilo_loop.loop.stages import StageBook
from kilo_loop.run.bus import EventBus
from kilo_loop.run.control import RunControl
from kilo_loop.run.events import (
    GuardBlocked,
    IterationReported,
    IterationStarted,
    RunEvent,
    StageDone,
    StatusChanged,
    UsageCounted,
    from_wire,
)
from kilo_loop.run.layout import RunLayout
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.reducer import header_wire, replay
from kilo_loop.run.state import IterationSummary, RunState, StageState
from kilo_loop.run.status import Phase
from kilo_loop.run.store import load_for_resume, read_events

STAGES = ("s1", "s2", "s3")
GOAL = Goal(title="g", kind="markdown", stages=[Stage(id=s, title=s) for s in STAGES])
LIMITS = stop_policy.Limits(max_cost=0.5, max_tokens=4000, max_stale_iterations=2, max_guard_blocks=2)


def _initial() -> RunState:
    return RunState(run_id="r1", project="/p", goal_title="g", max_iterations=6,
                    stages=[StageState(id=s, title=s) for s in STAGES])


def _command(n: int, flag: bool) -> Command:
    options: list[Command] = [Pause(), Resume(), TogglePause(), AbortAfterSession(), SetSharedContext(flag),
                              SetPromptExtra(f"extra {n}" if flag else None), StopNow()]
    return options[n % len(options)]


def _event(n: int, flag: bool) -> RunEvent:
    stage = STAGES[n % len(STAGES)]
    options: list[RunEvent] = [
        IterationStarted(message="i", iteration=n % 7 + 1, stage_id=stage, stage_title=stage),
        UsageCounted(tokens=n * 97, input=n, output=n, cost=n / 90),
        IterationReported(summary=IterationSummary(iteration=n % 7 + 1, stage_id=stage,
                                                   outcome="guard" if flag else "ok", guard_hits=n % 2).wire(),
                          session_id="" if flag else f"ses{n}", stale_iterations=n % 4),
        StageDone(message="d", stage_id=stage),
        GuardBlocked(message="g", rule="r", reason=f"why {n}", note=f"note {n}", before_execution=flag or None),
        StatusChanged(message="s", status=[Phase.RUNNING, Phase.PAUSED, Phase.WAITING_ANSWER][n % 3]),
    ]
    return options[n % len(options)]


def decisions(state: RunState, first_iteration: int) -> dict[str, Any]:
    """Everything the orchestrator decides between and around iterations, from the state."""
    book = StageBook(GOAL)
    stage = book.next_stage(state)
    return {
        "before_iteration": stop_policy.before_iteration(LIMITS, state, first_iteration),
        "waits_for_resume": stop_policy.waits_for_resume(state),
        "no_iteration_follows": stop_policy.no_iteration_follows(state, state.max_iterations, stage is not None),
        "guard": stop_policy.guard_reason(LIMITS, state.consecutive_guard_blocks, "why"),
        "stale": stop_policy.stale_reason(LIMITS, state.stale_iterations, stage is not None),
        "next_stage": None if stage is None else stage.id,
        "continues_session": state.session_id if state.shared_context else None,
        "prompt_extra": state.prompt_extra,
        "abort_after_session": state.abort_requested,
    }


async def _drive(layout: RunLayout, steps: list[tuple[bool, int, bool]]) -> RunRecorder:
    bus = EventBus(layout.events, lambda value: value)
    recorder = RunRecorder(layout, _initial(), bus, lambda value: value)
    recorder.open(_initial(), resumed=False)

    async def no_revert(path: Path, iteration: int, force: bool) -> None:
        raise AssertionError("not sent")

    handler = CommandHandler(RunControl(), recorder, no_revert, lambda run: layout.checkpoints)
    for is_command, n, flag in steps:
        if is_command:
            await handler.handle(_Envelope(_command(n, flag)))
        else:
            recorder.emit(_event(n, flag))
    return recorder


def expected_flags(steps: list[tuple[bool, int, bool]]) -> dict[str, Any]:
    """What the operator's commands alone say the flags are (an oracle independent of the reducer)."""
    flags: dict[str, Any] = {"paused": False, "stop_requested": False, "abort_requested": False,
                             "shared_context": False, "prompt_extra": None}
    for is_command, n, flag in steps:
        if not is_command:
            continue
        command = _command(n, flag)
        if isinstance(command, TogglePause):
            command = Resume() if flags["paused"] else Pause()
        if isinstance(command, Pause | Resume):
            flags["paused"] = isinstance(command, Pause)
        elif isinstance(command, StopNow):
            flags.update(stop_requested=True, paused=False)
        elif isinstance(command, AbortAfterSession):
            flags.update(abort_requested=True, paused=False)
        elif isinstance(command, SetSharedContext):
            flags["shared_context"] = command.value
        elif isinstance(command, SetPromptExtra):
            flags["prompt_extra"] = command.text
    return flags


steps = st.lists(st.tuples(st.booleans(), st.integers(0, 60), st.booleans()), max_size=40)


@settings(max_examples=80, deadline=None)
@given(steps=steps, first=st.integers(1, 4))
def test_decisions_depend_only_on_the_state(steps: list[tuple[bool, int, bool]], first: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        layout = RunLayout(Path(tmp) / "run")
        layout.ensure()
        recorder = asyncio.run(_drive(layout, steps))
        live = decisions(recorder.state, first)
        assert {key: getattr(recorder.state, key) for key in expected_flags(steps)} == expected_flags(steps)
        # The same events, folded from events.jsonl by a process that never saw the commands.
        rebuilt = replay([from_wire(wire) for wire in read_events(layout.events)])
        assert rebuilt is not None
        assert decisions(rebuilt, first) == live
        # A resumed process starts from state.json plus the tail; a Stop belongs to the process
        # that took it, everything else carries over.
        recorder.save(durable=False)
        resumed = load_for_resume(layout)
        assert not resumed.stop_requested
        assert decisions(resumed, first) == decisions(recorder.state.model_copy(update={"stop_requested": False}),
                                                      first)


def test_a_stop_is_in_the_state_not_beside_it() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        layout = RunLayout(Path(tmp) / "run")
        layout.ensure()
        recorder = asyncio.run(_drive(layout, [(True, 0, False), (True, 6, False)]))  # Pause, then Stop
        state = recorder.state
        assert state.stop_requested and not state.paused
        assert stop_policy.before_iteration(LIMITS, state, 1) == stop_policy.STOPPED
        assert "stopRequested" not in state.snapshot()  # state.json's format is unchanged
        assert header_wire(state).get("stopRequested") is None
