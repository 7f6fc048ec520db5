"""Thrash streaks, oscillation (tree returns and file flips), doom loops and the ladder, as pure functions."""

from __future__ import annotations

from kilo_loop.loop.circles import ladder, oscillation, thrash
from kilo_loop.loop.circles.doom import DoomWatch, call_key, saving
from kilo_loop.run.circles import STEP_ASK, STEP_FRESH, STEP_STOP, CircleState


def test_a_streak_grows_only_while_files_change_and_the_failure_stays() -> None:
    s = thrash.next_streak("", 0, "sig-a", passed=False, files_changed=True)
    assert (s.signature, s.streak, s.progress) == ("sig-a", 1, False)
    s = thrash.next_streak(s.signature, s.streak, "sig-a", passed=False, files_changed=True)
    assert s.streak == 2
    assert thrash.next_streak("sig-a", 2, "sig-a", passed=False, files_changed=False).streak == 2  # stale, not thrash
    assert thrash.next_streak("sig-a", 2, None, passed=False, files_changed=True).streak == 2  # verify did not run
    new = thrash.next_streak("sig-a", 2, "sig-b", passed=False, files_changed=True)
    assert (new.streak, new.progress) == (1, True)
    done = thrash.next_streak("sig-a", 5, None, passed=True, files_changed=True)
    assert (done.signature, done.streak, done.progress) == ("", 0, True)
    assert thrash.is_thrash(3, 3) and not thrash.is_thrash(2, 3) and not thrash.is_thrash(9, 0)


def test_a_tree_seen_before_is_a_return_only_when_the_iteration_changed_files() -> None:
    trees = {"t0": 0, "t1": 1}
    assert oscillation.tree_return(trees, "t0", changed=True) == 0
    assert oscillation.tree_return(trees, "t0", changed=False) is None
    assert oscillation.tree_return(trees, "t2", changed=True) is None
    assert "checkpoint before iteration 1" in oscillation.describe(0, [])


def test_a_file_flips_when_it_makes_the_same_change_twice() -> None:
    assert not oscillation.flipped(["A", "B"], "A")  # one return: maybe a debug line taken out again
    assert oscillation.flipped(["A", "B", "A"], "B")  # A→B→A→B
    assert not oscillation.flipped(["A", "B", "C"], "D")
    assert not oscillation.flipped(["A", "B", "A"], "A")  # unchanged
    assert oscillation.file_flips({"x.py": ["A", "B", "A"], "y.py": ["A"]}, {"x.py": "B", "y.py": "B"}) == ["x.py"]


def test_the_same_call_with_other_whitespace_or_description_is_the_same_call() -> None:
    one = call_key("bash", {"command": "cat  README.md", "description": "Read it"})
    two = call_key("Bash", {"command": "cat README.md ", "description": "Look again"})
    assert one == two
    assert call_key("bash", {"command": "cat README.md"}) != call_key("bash", {"command": "cat NOTES.md"})


def test_a_doom_watch_ends_the_session_on_the_nth_repeat_or_the_mth_failure_in_a_row() -> None:
    watch = DoomWatch(max_repeat_calls=8, max_failed_calls=12)
    results = [watch.observe("bash", {"command": "cat README.md"}, failed=False) for _ in range(8)]
    assert results[:7] == [None] * 7 and results[7] is not None and results[7].calls == 8
    assert "8 times" in results[7].reason
    failing = DoomWatch(max_repeat_calls=8, max_failed_calls=3)
    out = [failing.observe("bash", {"command": f"make t{i}"}, failed=True) for i in range(3)]
    assert out[2] is not None and "3 failing tool calls in a row" in out[2].reason
    reset = DoomWatch(max_repeat_calls=0, max_failed_calls=3)
    calls = [reset.observe("bash", {"command": f"x{i}"}, failed=i % 2 == 0) for i in range(10)]
    assert calls == [None] * 10  # a success in between starts the count again; 0 turns repeats off


def test_the_saving_is_the_sessions_own_rate_until_the_time_limit() -> None:
    assert saving(1000, 0.01, 10.0, 40.0) == (3000, 0.03)
    assert saving(1000, 0.01, 10.0, None) == (0, 0.0)
    assert saving(1000, 0.01, 50.0, 40.0) == (0, 0.0)


def test_the_ladder_climbs_fresh_session_then_ask_then_stop_and_skips_asking_nobody() -> None:
    assert [ladder.next_step(r, True) for r in range(4)] == [STEP_FRESH, STEP_ASK, STEP_STOP, STEP_STOP]
    assert ladder.next_step(1, can_ask=False) == STEP_STOP
    assert ladder.wants_stop(" Stop ") and not ladder.wants_stop("try the other parser")


def test_the_diagnosis_names_the_signature_iterations_files_and_cost() -> None:
    circles = CircleState(signature="abc", signature_text="exit 1\ntest t.py::test_x", streak=3,
                          streak_iterations=[2, 3, 4], streak_files=["src/a.py", "src/b.py"])
    circle = ladder.Circle("thrash", ladder.what_repeated(circles, "thrash", ""))
    text = ladder.diagnosis(circles, circle, 0.1234)
    assert "`abc`" in text and "test t.py::test_x" in text and "Iterations: 2, 3, 4" in text
    assert "src/a.py, src/b.py" in text and "$0.1234" in text
    assert "Step back" in ladder.step_back_note(circle, circles)
