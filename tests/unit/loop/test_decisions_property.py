"""The loop decides from the state alone: random mixes of operator commands (through the real command
handler), loop and review events and iteration reports (through the recorder, as the loop makes them)
give the same decisions whether read from the live state or from the state rebuilt by replaying
events.jsonl — so no flag, no iteration row and no review loop the loop decides on lives outside the
reducer."""

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
from kilo_loop.review.budget import running_loop
from kilo_loop.run.bus import EventBus
from kilo_loop.run.control import RunControl
from kilo_loop.run.events import (
    GuardBlocked,
    IterationReported,
    IterationStarted,
    ProtectedChanged,
    QuotaWait,
    ReviewBlocked,
    ReviewHeld,
    ReviewRound,
    RunEvent,
    StageDone,
    StateOpened,
    StatusChanged,
    UsageCounted,
    VerifyFinished,
    Warned,
    from_wire,
)
from kilo_loop.run.layout import RunLayout
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.reducer import header_wire, reduce, replay
from kilo_loop.run.state import IterationFacts, IterationSummary, Question, RunState, StageState, VerifyResult
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
        UsageCounted(tokens=n * 13, input=n, output=n, cost=n / 300, review=True),
        Warned(message="w", about="retry", reason=f"overloaded {n}", attempt=n % 3 + 1, max_retries=3),
        ReviewRound(message="r", stage_id=stage, count=n % 4, step=["retry", "clean", "thrash", "exhausted"][n % 4],
                    budget=None if flag else n % 3),
        ReviewHeld(message="h", stage_id=stage, exit="exhausted", findings=[{"role": "code", "title": f"bug {n}"}]),
        ReviewBlocked(message="b", stage_id=stage, count=n % 3, feedback=None if flag else f"fix {n}"),
        ProtectedChanged(message="p", stage_id=stage, files=[f"t{n}.py"], feedback=f"put t{n}.py back"),
        VerifyFinished(message="v", passed=flag, exit_code=0 if flag else 1, stage_id=stage, feedback=f"failed {n}"),
        QuotaWait(message="q", until="2030-01-01T00:00:00Z", reason="limit", stop=f"beyond {n}" if flag else None),
    ]
    return options[n % len(options)]


REPORT = 99  # a step that reports the iteration as the loop does: the recorder settles the row


def _facts(n: int, flag: bool) -> IterationFacts:
    verify = VerifyResult(command="make", exit_code=n % 2, passed=flag) if n % 3 else None
    return IterationFacts(session_id=f"ses{n}", outcome=["ok", "failed", "guard", "stopped"][n % 4],
                          topic=f"topic {n}", percent=n % 101, summary=f"did {n}", files_changed=(f"f{n % 9}.py",),
                          guard_hits=n % 2, guard_reason="why" if n % 2 else "", verify=verify,
                          questions=(Question(question=f"q{n}"),) if flag else (), warnings=(f"w{n}",))


def decisions(state: RunState, first_iteration: int) -> dict[str, Any]:
    """Everything the orchestrator decides between and around iterations, from the state: the stop
    policy, the next stage, what the next prompt carries, the row of the iteration under way (what the
    operator is asked, whether the guard stops the run) and each stage's review loop."""
    book = StageBook(GOAL)
    stage = book.next_stage(state)
    row = state.current_iteration()
    return {
        "first_iteration": state.first_iteration,
        "no_stage_left": stop_policy.no_stage_left(state) if stage is None else None,
        "row": None if row is None else row.wire(),
        "review_loops": {s: running_loop(s, state.review_stages.get(s), 1) for s in STAGES},
        "held": state.held_stages(),
        "prompt": (state.run_files, state.review_feedback, state.verify_feedback, state.guard_note,
                   [q.question for q in state.unanswered], state.blocked_stages),
        "quota_stop": state.quota_stop,
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
        elif n % 5 == 4:
            recorder.record_iteration(_facts(n, flag), session_id=None if flag else f"ses{n}",
                                      stale_iterations=n % 3)
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
        # A resumed process starts from state.json plus the tail, then its state-init: a Stop belongs
        # to the process that took it; what a resume resets is the reducer's; everything else carries over.
        recorder.save(durable=False)
        resumed = load_for_resume(layout)
        assert not resumed.stop_requested
        carried = decisions(recorder.state.model_copy(update={"stop_requested": False}), first)
        assert _carried(decisions(resumed, first)) == _carried(carried)
        reopened = StateOpened(state=header_wire(resumed), resumed=True, seq=recorder.state.seq + 1)
        live_reopened = StateOpened(state=header_wire(recorder.state), resumed=True, seq=recorder.state.seq + 1)
        assert decisions(reduce(resumed, reopened), first) == decisions(reduce(recorder.state, live_reopened), first)


def _carried(decided: dict[str, Any]) -> dict[str, Any]:
    """What state.json and the tail of events.jsonl carry: all but this process's own (its first
    iteration and the files it saw changed, which the next state-init sets again)."""
    return {**decided, "first_iteration": None, "prompt": decided["prompt"][1:]}


def test_the_iteration_row_is_built_from_events_alone() -> None:
    """The row the loop reports is what the events built (stage, start, the implementer's tokens,
    retries) settled with the loop's facts; a reviewer's tokens count toward the run only."""
    with tempfile.TemporaryDirectory() as tmp:
        layout = RunLayout(Path(tmp) / "run")
        layout.ensure()
        bus = EventBus(layout.events, lambda value: value)
        recorder = RunRecorder(layout, _initial(), bus, lambda value: value)
        recorder.open(_initial(), resumed=False)
        recorder.emit(IterationStarted(message="i", iteration=1, stage_id="s1", stage_title="s1"))
        recorder.emit(UsageCounted(tokens=100, input=90, output=10, cost=0.01))
        recorder.emit(Warned(message="w", about="retry", reason="overloaded", attempt=1, max_retries=3))
        recorder.emit(UsageCounted(tokens=50, input=45, output=5, cost=0.005))
        recorder.emit(UsageCounted(tokens=500, input=450, output=50, cost=0.05, review=True))
        row = recorder.record_iteration(IterationFacts(session_id="ses1", topic="t", files_changed=("a.py",)))
        assert (row.tokens, row.cost, row.context_tokens, row.retries, row.retry_reason) == \
            (150, 0.015, 50, 1, "overloaded")
        assert row.stage_id == "s1" and row.topic == "t" and row.finished_at
        assert recorder.state.totals.tokens == 650 and recorder.state.run_files == ["a.py"]
        rebuilt = replay([from_wire(wire) for wire in read_events(layout.events)])
        assert rebuilt is not None and rebuilt.iterations == recorder.state.iterations


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
