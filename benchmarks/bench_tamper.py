"""The tamper detector on a large diff: every diff of the labelled corpus (tests/corpora/tamper/, 386
real commits) joined into one, detected N times. Prints ms per detection against a floor measured in
the same run (parsing alone), and the issue's budget (2 ms per iteration is shared with the circle
detectors; the tamper check runs once per stage that passed verify, not every iteration).

    .venv/bin/python benchmarks/bench_tamper.py [repeats]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kilo_loop.tamper import detect
from kilo_loop.tamper.diff import parse_diff

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpora" / "tamper" / "diffs"


def _time(fn: object, repeats: int) -> float:
    assert callable(fn)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats * 1000


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    big = "".join(p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.diff")))
    one = (CORPUS.parent / "diffs").glob("tamper-python-*.diff").__next__().read_text(encoding="utf-8")
    lines = big.count("\n")
    floor = _time(lambda: parse_diff(big), repeats)
    full = _time(lambda: detect(big, "pytest -q"), repeats)
    small = _time(lambda: detect(one, "pytest -q"), repeats * 50)
    print(f"large diff: {lines} lines, {len(big) // 1024} KiB")
    print(f"parse only (floor): {floor:.1f} ms; detect: {full:.1f} ms ({full / floor:.1f}x the floor)")
    print(f"one typical stage diff ({one.count(chr(10))} lines): {small:.3f} ms")


if __name__ == "__main__":
    main()
