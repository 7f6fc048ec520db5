"""The circles' state is folded by the reducer from the detectors' events, and a replay gives it again;
the watch turns a work tree, a verify and the files changed into those events."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kilo_loop.gitstatus import read_status, snapshot
from kilo_loop.loop.circles.watch import CircleWatch, Iteration
from kilo_loop.run.circles import STEP_FRESH
from kilo_loop.run.events import CircleFound, IterationReported, SessionEndedEarly, StateOpened
from kilo_loop.run.reducer import reduce, replay
from kilo_loop.run.state import RunState, VerifyResult


def _repo(tmp_path: Path) -> Path:
    project = tmp_path / "p"
    project.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@example.invalid"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=project, check=True)
    (project / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=project, check=True)
    return project


def _snap(project: Path) -> tuple[dict[str, tuple[str, int, int]], str | None]:
    status = read_status(project)
    return snapshot(project, status, ".kilocode-loop"), status.head


FAIL = VerifyResult(command="pytest", exit_code=1, passed=False,
                    output_tail="FAILED tests/test_a.py::test_x - AssertionError: assert 1 == 2\n")


def _state() -> RunState:
    return reduce(None, StateOpened(state=RunState(run_id="r", project="/p", goal_title="g").wire()))


def _iterate(project: Path, watch: CircleWatch, state: RunState, number: int, content: str,
             verify: VerifyResult | None = FAIL) -> tuple[RunState, object]:
    before, _ = _snap(project)
    (project / "a.py").write_text(content)
    after, head = _snap(project)
    seen = watch.observe(state.circles, Iteration(number, "s1", verify, ["a.py"], before, after, head, 0.01))
    return reduce(state, seen.event), seen


def test_the_same_failure_three_times_is_thrash(tmp_path: Path) -> None:
    project = _repo(tmp_path)
    watch, state = CircleWatch(project, max_same_failure=3), _state()
    circles = []
    for number, content in enumerate(["x = 2\n", "x = 3\n", "x = 4\n"], 1):
        state, seen = _iterate(project, watch, state, number, content)
        circles.append(seen.circle)  # type: ignore[attr-defined]
    assert circles[:2] == [None, None] and circles[2] is not None and circles[2].kind == "thrash"
    assert state.circles.streak == 3 and state.circles.streak_iterations == [1, 2, 3]
    assert state.circles.streak_cost == 0.03 and state.circles.streak_files == ["a.py"]


def test_coming_back_to_an_earlier_tree_is_caught_on_the_first_return(tmp_path: Path) -> None:
    project = _repo(tmp_path)
    watch, state = CircleWatch(project, max_same_failure=0), _state()
    state, one = _iterate(project, watch, state, 1, "x = 2\n", verify=None)
    state, two = _iterate(project, watch, state, 2, "x = 3\n", verify=None)
    state, three = _iterate(project, watch, state, 3, "x = 2\n", verify=None)
    assert one.circle is None and two.circle is None  # type: ignore[attr-defined]
    assert three.circle is not None and "after iteration 1" not in three.circle.what  # type: ignore[attr-defined]
    assert "checkpoint before iteration 2" in three.circle.what  # type: ignore[attr-defined]
    assert state.circles.oscillations == 1


def test_going_back_to_the_start_is_a_return_too(tmp_path: Path) -> None:
    project = _repo(tmp_path)
    watch, state = CircleWatch(project, max_same_failure=0), _state()
    state, _ = _iterate(project, watch, state, 1, "x = 2\n", verify=None)
    state, back = _iterate(project, watch, state, 2, "x = 1\n", verify=None)
    assert back.circle is not None and "checkpoint before iteration 1" in back.circle.what  # type: ignore[attr-defined]


def test_files_reported_changed_over_a_tree_that_never_moved_are_no_return(tmp_path: Path) -> None:
    """A dry run's simulated agent reports files it never writes: the tree stays where it started."""
    project = _repo(tmp_path)
    watch, state = CircleWatch(project, max_same_failure=0), _state()
    for number in (1, 2, 3):
        state, seen = _iterate(project, watch, state, number, "x = 1\n", verify=None)
        assert seen.circle is None  # type: ignore[attr-defined]
    assert state.circles.oscillations == 0


def test_a_replay_of_the_events_gives_the_same_circles(tmp_path: Path) -> None:
    project = _repo(tmp_path)
    watch, state = CircleWatch(project, max_same_failure=3), _state()
    events = []
    for number, content in enumerate(["x = 2\n", "x = 3\n", "x = 2\n"], 1):
        before, _ = _snap(project)
        (project / "a.py").write_text(content)
        after, head = _snap(project)
        event = watch.observe(state.circles, Iteration(number, "s1", FAIL, ["a.py"], before, after, head, 0.5)).event
        event = type(event)(**{**event.__dict__, "seq": number})
        events.append(event)
        state = reduce(state, event)
    found = CircleFound(kind="thrash", step=STEP_FRESH, diagnosis="d", note="step back", iteration=3, seq=10)
    ended = SessionEndedEarly(reason="r", saved_tokens=100, saved_cost=0.5, note="ended", iteration=3, seq=11)
    state = reduce(reduce(state, found), ended)
    again = replay([*events, found, ended], _state())
    assert again is not None and again.circles == state.circles
    assert state.circles.note == "step back\n\nended" and state.circles.ladder == 1
    assert state.circles.sessions_ended_early == 1 and state.session_id is None
    assert RunState.model_validate(state.snapshot()).circles == state.circles  # state.json round trip


def test_the_note_is_dropped_once_the_next_iteration_was_reported() -> None:
    state = reduce(_state(), CircleFound(kind="thrash", step=STEP_FRESH, note="step back", iteration=3, seq=1))
    same = reduce(state, IterationReported(summary={"iteration": 3, "outcome": "ok"}, seq=2))
    assert same.circles.note == "step back"
    later = reduce(same, IterationReported(summary={"iteration": 4, "outcome": "ok"}, seq=3))
    assert later.circles.note == ""


def test_an_untouched_state_keeps_its_old_shape() -> None:
    assert "circles" not in _state().snapshot()
