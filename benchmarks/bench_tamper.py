"""The tamper detector, each cost against a floor measured in the same run.

(a) a large diff: every diff of the labelled corpus (tests/corpora/tamper/, 402 real commits) joined
    into one, detected N times, against parsing it alone; and one typical stage diff.
(b) the loop's check on a 5,000-file repository (bench_loop's): a stage that edited 20 files (one of them
    a test, skipped), read from git and detected, against one bare `git diff HEAD` on the same tree.
The check runs once per stage whose verify passed, not every iteration; the issue's 2 ms per iteration
is shared with the circle detectors.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_tamper.py [repeats]
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_loop import make_repo

from kilo_loop.gitstatus import read_status
from kilo_loop.loop.tamper_check import check_stage
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
    with tempfile.TemporaryDirectory(prefix="bench-tamper-") as tmp:
        repo, _ = make_repo(Path(tmp), 5000, 1)
        for path in sorted(repo.rglob("file_*.py"))[:19]:
            path.write_text(path.read_text() + "\nEXTRA = 1\n")
        test = repo / "tests" / "test_widget.py"
        test.parent.mkdir()
        test.write_text("def test_widget():\n    assert True\n")
        subprocess.run(["git", "add", "tests"], cwd=repo, check=True)
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "t"], cwd=repo, check=True)
        test.write_text("import pytest\n\n\n@pytest.mark.skip\ndef test_widget():\n    assert True\n")
        none = Path(tmp) / "no-checkpoints"
        git_floor = _time(lambda: subprocess.run(["git", "diff", "HEAD"], cwd=repo, capture_output=True, check=True),
                          repeats)
        check = _time(lambda: asyncio.run(check_stage(repo, none, 1, "pytest -q")), repeats)
        # In the loop: the untracked files come from the status it read after the session.
        untracked = read_status(repo).untracked
        loop = _time(lambda: asyncio.run(check_stage(repo, none, 1, "pytest -q", untracked)), repeats)
        found = asyncio.run(check_stage(repo, none, 1, "pytest -q", untracked)).findings
        print(f"5,000-file repository, 20 files changed: check {check:.1f} ms standalone, {loop:.1f} ms with the "
              f"loop's status ({loop / git_floor:.1f}x) against git diff HEAD {git_floor:.1f} ms; "
              f"findings: {[f.rule for f in found]}")


if __name__ == "__main__":
    main()
