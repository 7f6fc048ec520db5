"""The reducer is the only writer of RunState: pure, and replaying events.jsonl from nothing
gives exactly the state the run saved (property-tested over random event sequences)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kilo_loop.run.bus import EventBus
from kilo_loop.run.events import (
    AnswerReceived,
    ControlChanged,
    GuardBlocked,
    IterationFinished,
    IterationReported,
    IterationStarted,
    QuestionAsked,
    QuestionUnanswered,
    RunEvent,
    RunFinished,
    StageBlocked,
    StageDone,
    StateOpened,
    StatusChanged,
    TextOut,
    UsageCounted,
    VerifyFinished,
    Warned,
    from_wire,
)
from kilo_loop.run.layout import RunLayout
from kilo_loop.run.recorder import RunRecorder
from kilo_loop.run.reducer import header_wire, reduce, replay
from kilo_loop.run.state import IterationSummary, RunState, StageState
from kilo_loop.run.store import load_for_resume, read_events
from tests.support.paths import FIXTURES

GOLDEN = FIXTURES / "golden"
STAGES = ("s1", "s2", "s3")


def initial() -> RunState:
    return RunState(run_id="r1", project="/p", goal_title="Goal",
                    stages=[StageState(id=s, title=f"Stage {s}") for s in STAGES], max_iterations=9)


def events_of(path: Path) -> list[RunEvent]:
    return [from_wire(orjson.loads(line)) for line in path.read_bytes().splitlines() if line]


def test_replaying_the_golden_events_gives_the_golden_state() -> None:
    state = replay(events_of(GOLDEN / "events.jsonl"))
    assert state is not None
    assert state.snapshot() == json.loads((GOLDEN / "state.json").read_text())


def test_reduce_never_changes_its_input() -> None:
    state = reduce(None, StateOpened(state=header_wire(initial()), seq=1))
    before = state.model_dump()
    for event in (IterationStarted(iteration=1, stage_id="s1", seq=2), UsageCounted(tokens=5, cost=0.1, seq=3),
                  GuardBlocked(rule="r", reason="x", note="n", seq=4), StageDone(stage_id="s1", seq=5)):
        after = reduce(state, event)
        assert state.model_dump() == before
        state, before = after, after.model_dump()


def test_events_before_the_state_are_refused() -> None:
    with pytest.raises(ValueError, match="state-init"):
        reduce(None, TextOut(message="hi"))


def test_blocked_feedback_guard_note_and_answers_live_in_the_state() -> None:
    events: list[RunEvent] = [
        StateOpened(state=header_wire(initial())),
        IterationStarted(iteration=1, stage_id="s1"),
        VerifyFinished(passed=False, exit_code=1, stage_id="s1", feedback="`make` exited 1"),
        GuardBlocked(rule="git-push-force", reason="force push", note="do not force push"),
        AnswerReceived(source="terminal"),
        StageBlocked(stage_id="s2"),
    ]
    state = replay(events)
    assert state is not None
    assert state.blocked_stages == ["s1", "s2"] and state.verify_feedback == "`make` exited 1"
    assert state.guard_note == "do not force push" and state.consecutive_guard_blocks == 1
    assert state.answers == 1 and [s.status for s in state.stages] == ["blocked", "blocked", "pending"]
    done = reduce(state, StageDone(stage_id="s1"))
    assert done.blocked_stages == ["s2"] and done.verify_feedback == "" and done.completed_stages == ["s1"]


def test_a_settled_iteration_clears_the_guard_streak_but_a_guard_report_does_not() -> None:
    state = replay([StateOpened(state=header_wire(initial())), IterationStarted(iteration=1, stage_id="s1"),
                    GuardBlocked(rule="r", reason="x", note="n")])
    assert state is not None
    guard = reduce(state, IterationReported(summary=IterationSummary(iteration=1, outcome="guard").wire()))
    assert guard.guard_note == "n" and guard.consecutive_guard_blocks == 1
    ok = reduce(guard, IterationReported(summary=IterationSummary(iteration=1, outcome="ok").wire()))
    assert ok.guard_note == "" and ok.consecutive_guard_blocks == 0 and len(ok.iterations) == 1


def test_resume_marks_cut_short_iterations_and_keeps_history() -> None:
    state = replay([StateOpened(state=header_wire(initial())), IterationStarted(iteration=1, stage_id="s1")])
    assert state is not None and state.iterations[0].outcome == "running"
    resumed = reduce(state, StateOpened(state=header_wire(state), resumed=True))
    assert resumed.iterations[0].outcome == "interrupted" and resumed.iteration == 1


# ------------------------------------------------------------------ property: replay == saved
def _event(kind: str, n: int, flag: bool) -> RunEvent:
    stage = STAGES[n % len(STAGES)]
    factories: dict[str, Any] = {
        "iteration": lambda: IterationStarted(message=f"Iteration {n}", iteration=n, stage_id=stage,
                                              stage_title=stage),
        "usage": lambda: UsageCounted(tokens=n * 10, input=n, output=n, cost=n / 100),
        "report": lambda: IterationReported(summary=IterationSummary(
            iteration=n, stage_id=stage, outcome="guard" if flag else "ok", tokens=n).wire(),
            session_id=("" if flag else f"ses{n}"), stale_iterations=n % 3),
        "finished": lambda: IterationFinished(message="line", outcome="ok", percent=n % 101),
        "done": lambda: StageDone(message="done", stage_id=stage),
        "blocked": lambda: StageBlocked(message="blocked", stage_id=stage),
        "verify": lambda: VerifyFinished(message="v", passed=flag, exit_code=None if flag else 1, stage_id=stage,
                                         feedback=None if flag else f"fb {n}"),
        "guard": lambda: GuardBlocked(message="g", rule="r", reason=f"why {n}", note=f"note {n}"),
        "question": lambda: QuestionAsked(message="?", question=f"q{n}", options=["a", "b"] if flag else []),
        "answer": lambda: AnswerReceived(message="a", source="dashboard"),
        "unanswered": lambda: QuestionUnanswered(message="u", question=f"q{n}"),
        "status": lambda: StatusChanged(message="s", status="waiting-answer" if flag else "running",
                                        reason=f"r{n}" if flag else None),
        "control": lambda: ControlChanged(message="c", action=["pause", "set-shared-context",
                                                               "abort-after-current", "set-prompt-extra"][n % 4],
                                          value=flag if n % 4 != 3 else f"extra {n}"),
        "retry": lambda: Warned(message="w", about="retry", reason="ECONNRESET", attempt=n % 4 + 1, max_retries=3),
        "text": lambda: TextOut(message=f"text {n} sk-live-{'x' * 24}"),
        "resume": lambda: None,
        "finish": lambda: RunFinished(message="end", status="aborted", resume="kilo-loop --resume r1"),
    }
    return factories[kind]()


KINDS = ["iteration", "usage", "report", "finished", "done", "blocked", "verify", "guard", "question", "answer",
         "unanswered", "status", "control", "retry", "text", "resume", "finish"]
steps = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(1, 50), st.booleans(), st.booleans()),
                 max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
def test_replay_from_scratch_equals_the_saved_state(tmp_path_factory: pytest.TempPathFactory,
                                                    steps: list[tuple[str, int, bool, bool]]) -> None:
    layout = RunLayout(tmp_path_factory.mktemp("run"))
    layout.ensure()
    redact = _redact
    bus = EventBus(layout.events, redact)
    recorder = RunRecorder(layout, initial(), bus, redact)
    recorder.open(initial(), resumed=False)
    for kind, n, flag, save in steps:
        event = _event(kind, n, flag)
        if event is None:
            recorder.open(recorder.state, resumed=True)
        else:
            recorder.emit(event)
        if save:
            recorder.save(durable=False)
    # A crash may come at any moment: the last snapshot plus the events after it is the state.
    assert load_for_resume(layout).snapshot() == recorder.state.snapshot()
    recorder.save(durable=False)
    saved = json.loads(layout.state.read_text())
    rebuilt = replay([from_wire(wire) for wire in read_events(layout.events)])
    assert rebuilt is not None and rebuilt.snapshot() == saved
    assert "sk-live-" not in layout.state.read_text() and "sk-live-" not in layout.events.read_text()


def _redact(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("sk-live-" + "x" * 24, "[REDACTED]")
    if isinstance(value, dict):
        return {k: _redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def test_a_resume_is_a_fresh_start_for_the_live_flags_and_stop_conditions_in_the_reducer() -> None:
    """The runner only brings the goal's stages; what a resume resets is the fold of its state-init."""
    from kilo_loop.run.controls import ControlAction
    from kilo_loop.run.state import RetryState
    from kilo_loop.run.status import Phase, StopReason

    state = replay([StateOpened(state=header_wire(initial())), IterationStarted(iteration=1, stage_id="s1"),
                    GuardBlocked(rule="r", reason="x", note="keep me"),
                    ControlChanged(action=ControlAction.PAUSE, value=True),
                    ControlChanged(action=ControlAction.ABORT_AFTER_CURRENT, value=True)])
    assert state is not None
    ended = state.model_copy(update={"status": StopReason.STOPPED_GUARD, "stop_reason": "guard", "finished_at": "t",
                                     "stale_iterations": 2, "retry": RetryState(attempt=2), "quota_stop": "later",
                                     "blocked_stages": ["s2"], "verify_feedback": "failed"})
    resumed = reduce(ended, StateOpened(state=header_wire(ended), resumed=True))
    assert resumed.status == Phase.STARTING and resumed.stop_reason == "" and resumed.finished_at is None
    assert not resumed.paused and not resumed.abort_requested and resumed.consecutive_guard_blocks == 0
    assert resumed.stale_iterations == 0 and resumed.retry == RetryState() and resumed.quota_stop == ""
    assert resumed.guard_note == "keep me" and resumed.blocked_stages == ["s2"] and resumed.verify_feedback == "failed"
    assert resumed.first_iteration == 2 and resumed.iterations[0].outcome == "interrupted"


def test_a_run_recorded_before_the_reducer_built_the_rows_resumes(tmp_path: Path) -> None:
    """The golden run's files (events.jsonl, state.json from before this version) load, replay and
    reopen: rows, files and the resumed flags come out as a new run's would."""
    from kilo_loop.run.layout import RunLayout as Layout

    layout = Layout(tmp_path / "run")
    layout.ensure()
    layout.events.write_bytes((GOLDEN / "events.jsonl").read_bytes())
    layout.state.write_bytes((GOLDEN / "state.json").read_bytes())
    loaded = load_for_resume(layout)
    resumed = reduce(loaded, StateOpened(state=header_wire(loaded), resumed=True, seq=loaded.seq + 1))
    assert [item.tokens for item in resumed.iterations] == [1000, 0, 800, 900, 700]
    assert resumed.run_files == ["a.txt", "b.txt", "c.txt"] and resumed.first_iteration == 6
    assert resumed.status == "starting" and not resumed.review_stages and not resumed.review_feedback
