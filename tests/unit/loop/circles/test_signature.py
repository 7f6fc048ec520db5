"""The failure signature: the same failure through different paths, line numbers, timings, addresses
and temp names is one signature; different failures are different ones; bad input is bounded."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from kilo_loop.loop.circles.signature import TAIL_BYTES, failure_signature

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=3, max_size=10)
_DIRS = st.lists(_WORD, min_size=1, max_size=4).map("/".join)


@st.composite
def noise(draw: st.DrawFn) -> dict[str, str]:
    """What changes between two runs of one failure."""
    return {
        "root": "/" + draw(_DIRS),
        "tmp": "/tmp/pytest-of-" + draw(_WORD) + f"/pytest-{draw(st.integers(0, 999))}/" + draw(_WORD) + "0",
        "tmpname": "tmp" + draw(st.text(alphabet="abcdefghijklmnop0123456789_", min_size=6, max_size=10)),
        "line": str(draw(st.integers(1, 99_999))),
        "col": str(draw(st.integers(1, 200))),
        "secs": f"{draw(st.floats(0.001, 999, allow_nan=False)):.2f}",
        "ms": str(draw(st.integers(0, 99_999))),
        "addr": hex(draw(st.integers(0x1000, 2**48))),
        "pid": str(draw(st.integers(2, 4_000_000))),
        "when": f"2026-{draw(st.integers(1, 12)):02d}-{draw(st.integers(1, 28)):02d}T"
                f"{draw(st.integers(0, 23)):02d}:{draw(st.integers(0, 59)):02d}:{draw(st.integers(0, 59)):02d}Z",
    }


# One failure per entry: test id + the message that tells it apart (FAILURES[i] differ from each other).
FAILURES = [
    ("tests/test_math.py::test_add", "AssertionError: assert 3 == 4"),
    ("tests/test_math.py::test_add", "AssertionError: assert 3 == 5"),
    ("tests/test_math.py::test_sub", "AssertionError: assert 3 == 4"),
    ("tests/test_io.py::test_read", "FileNotFoundError: [Errno 2] No such file or directory: 'data.json'"),
    ("tests/test_io.py::test_read", "KeyError: 'name'"),
    ("tests/test_api.py::test_get", "TypeError: unsupported operand type(s) for +: 'int' and 'str'"),
]


def pytest_output(test_id: str, message: str, n: dict[str, str]) -> str:
    file = test_id.split("::")[0]
    return "\n".join([
        f"============ test session starts ============ {n['when']}",
        f"rootdir: {n['root']}",
        f"cachedir: {n['tmp']}/.cache pid {n['pid']}",
        "collected 12 items",
        "",
        f"{file} ..F.                                [100%]",
        "================= FAILURES =================",
        f"_________ {test_id.split('::')[1]} _________",
        f'  File "{n["root"]}/{file}", line {n["line"]}, in {test_id.split("::")[1]}',
        f"E   {message}",
        f"E   where obj = <Thing object at {n['addr']}>",
        f"{n['root']}/{file}:{n['line']}: {message.split(':')[0]}",
        f"wrote {n['tmp']}/{n['tmpname']}.log in {n['ms']}ms",
        "========= short test summary info =========",
        f"FAILED {test_id} - {message}",
        f"========= 1 failed, 11 passed in {n['secs']}s =========",
    ])


@settings(max_examples=60, deadline=None)
@given(index=st.integers(0, len(FAILURES) - 1), a=noise(), b=noise())
def test_the_same_failure_with_different_noise_has_one_signature(index: int, a: dict[str, str],
                                                                  b: dict[str, str]) -> None:
    test_id, message = FAILURES[index]
    first = failure_signature(pytest_output(test_id, message, a), 1)
    second = failure_signature(pytest_output(test_id, message, b), 1)
    assert first.digest == second.digest, (first.text, second.text)


@settings(max_examples=60, deadline=None)
@given(pair=st.lists(st.integers(0, len(FAILURES) - 1), min_size=2, max_size=2, unique=True), a=noise(),
       b=noise())
def test_different_failures_never_share_a_signature(pair: list[int], a: dict[str, str], b: dict[str, str]) -> None:
    first = failure_signature(pytest_output(*FAILURES[pair[0]], a), 1)
    second = failure_signature(pytest_output(*FAILURES[pair[1]], b), 1)
    assert first.digest != second.digest, (first.text, second.text)


def test_other_runners_name_their_failing_tests() -> None:
    go = failure_signature("--- FAIL: TestParse (0.00s)\n    parse_test.go:41: got 3, want 4\nFAIL\n", 1)
    cargo = failure_signature("test parser::tests::nested ... FAILED\nthread 'x' panicked at src/lib.rs:9:5\n", 101)
    jest = failure_signature("  \u2715 adds numbers (5 ms)\n  \u25cf math \u203a adds numbers\n    expect(received)"
                             ".toBe(expected)\n", 1)
    assert "test TestParse" in go.text and "parse_test.go:<n>: got 3, want 4" in go.text
    assert "test parser::tests::nested" in cargo.text
    assert "test adds numbers" in jest.text
    assert len({go.digest, cargo.digest, jest.digest}) == 3


def test_exit_code_and_timeout_are_part_of_it() -> None:
    assert failure_signature("boom", 1).digest != failure_signature("boom", 2).digest
    assert failure_signature("boom", None, timed_out=True).text.startswith("timed out")


def test_binary_output_is_signed_from_a_bounded_tail() -> None:
    blob = bytes(range(256)) * 4096  # 1 MiB of every byte value
    sig = failure_signature(blob, 1)
    assert sig.digest and "\x00" not in sig.text
    assert failure_signature(blob, 1).digest == sig.digest


def test_non_utf8_output_is_read_with_replacements() -> None:
    output = b"FAILED tests/test_x.py::test_y - AssertionError: caf\xe9 \xff\xfe\n"
    sig = failure_signature(output, 1)
    assert "test tests/test_x.py::test_y" in sig.text.replace("test test_x.py", "test tests/test_x.py")


def test_a_100_mb_output_costs_what_its_tail_costs() -> None:
    line = b"some progress line that is not an error 0123456789\n"
    huge = line * (100 * 1024 * 1024 // len(line)) + b"FAILED tests/t.py::test_z - AssertionError: nope\n"
    started = time.perf_counter()
    sig = failure_signature(huge, 1)
    took = time.perf_counter() - started
    assert "test t.py::test_z" in sig.text
    assert took < 1.0, f"signing 100 MB took {took:.2f} s: it must read only the last {TAIL_BYTES} bytes"
