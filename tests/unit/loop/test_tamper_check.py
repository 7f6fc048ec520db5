"""The loop's tamper check in a real git repository: the stage's diff since its first checkpoint (or
HEAD), new untracked test files as additions, and a failing check as an error, never an exception."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from kilo_loop.checkpoint.store import capture_checkpoint
from kilo_loop.loop.tamper_check import check_stage, tamper_feedback, tamper_review_lines
from kilo_loop.tamper import TamperFinding


def _repo(tmp_path: Path) -> Path:
    project = tmp_path / "repo"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_a.py").write_text("def test_a():\n    assert 1\n")
    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"]):
        subprocess.run(["git", *args], cwd=project, check=True)
    return project


def test_the_stage_diff_against_head_without_a_checkpoint(tmp_path: Path) -> None:
    project = _repo(tmp_path)
    (project / "tests" / "test_a.py").unlink()
    (project / "conftest.py").write_text("collect_ignore = ['tests']\n")
    check = asyncio.run(check_stage(project, tmp_path / "none", 1, "pytest -q"))
    assert check.error is None
    assert sorted((f.file, f.rule) for f in check.findings) == [
        ("conftest.py", "skip-marker"), ("tests/test_a.py", "deleted-test-file")]


def test_the_stage_diff_starts_at_the_first_iterations_checkpoint(tmp_path: Path) -> None:
    project = _repo(tmp_path)
    (project / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")  # before the stage
    tree = subprocess.run(["git", "write-tree"], cwd=project, check=True, capture_output=True, text=True)
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=project, check=True, capture_output=True, text=True)
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    (checkpoints / "iter-03.json").write_text(json.dumps({"tree": tree.stdout.strip(), "untracked": []}))
    check = asyncio.run(check_stage(project, checkpoints, 3, None))
    assert check.findings == [] and check.error is None  # the earlier change is not this stage's


@pytest.mark.parametrize("sub", ["", "pkg"])
def test_a_test_file_untracked_before_the_stage_is_read_against_the_checkpoint(tmp_path: Path, sub: str) -> None:
    root = _repo(tmp_path)
    project = root / sub if sub else root
    (project / "tests").mkdir(parents=True, exist_ok=True)
    kept, gone, same = (project / "tests" / f"test_{n}.py" for n in ("kept", "gone", "same"))
    for file in (kept, gone, same):
        file.write_text("def test_b():\n    assert 2\n")  # untracked when the stage begins
    checkpoints = tmp_path / "run" / "checkpoints"
    checkpoints.mkdir(parents=True)
    capture_checkpoint(project, checkpoints, 1)
    kept.write_text("import pytest\n\n@pytest.mark.skip\ndef test_b():\n    assert 2\n")
    gone.unlink()
    check = asyncio.run(check_stage(project, checkpoints, 1, None))
    assert check.error is None
    assert sorted((f.file, f.rule) for f in check.findings) == [
        ("tests/test_gone.py", "deleted-test-file"), ("tests/test_kept.py", "skip-marker")]


def test_a_failing_check_is_an_error_not_an_exception(tmp_path: Path) -> None:
    check = asyncio.run(check_stage(tmp_path, tmp_path, 1, None))  # not a git repository
    assert check.findings == [] and check.error


def test_the_feedback_asks_to_restore_the_test() -> None:
    text = tamper_feedback([TamperFinding("tests/test_a.py", 4, "skip-marker", "skip added: @pytest.mark.skip")])
    assert "Restore the test" in text and "tests/test_a.py:4" in text and "skip-marker" in text


def test_the_review_hears_of_earlier_blocks_and_of_warnings_now() -> None:
    warned = TamperFinding("tests/test_a.py", None, "deleted-test-file", "test file deleted")
    lines = tamper_review_lines(["iteration 1 was blocked: x"], [warned])
    assert lines == ["iteration 1 was blocked: x",
                     "found now (--tamper warn, not blocked): tests/test_a.py [deleted-test-file] test file deleted"]


def test_the_loops_own_read_of_the_untracked_files_is_used_instead_of_listing_them(tmp_path: Path) -> None:
    project = _repo(tmp_path)
    (project / "tests" / "test_new.py").write_text("import pytest\n\n\ndef test_n():\n    pytest.skip('x')\n")
    (project / "conftest.py").write_text("collect_ignore = ['tests']\n")
    check = asyncio.run(check_stage(project, tmp_path / "none", 1, None, frozenset({"conftest.py"})))
    assert [(f.file, f.rule) for f in check.findings] == [("conftest.py", "skip-marker")]  # test_new.py not read
