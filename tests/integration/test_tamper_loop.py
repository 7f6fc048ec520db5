"""Test tampering through the real CLI with the scripted fake agent, in real temporary git repos: a stage
that passes verify by skipping its test, by deleting the test file, or by adding `-k "not slow_test"` to
pytest's addopts is not done; the next prompt asks to restore the test; `--tamper warn` lets it pass."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.integration.loop_harness import FakeKilo, done_iteration, run_loop, text

TEST = "def test_slow_test():\n    assert compute() == 42\n"
INI = "[pytest]\naddopts = -q\n"


def _project(project: Path) -> Path:
    (project / "tests").mkdir()
    (project / "tests" / "test_calc.py").write_text(TEST)
    (project / "pytest.ini").write_text(INI)
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "tests"], cwd=project, check=True)
    goal = project / "plan.md"
    goal.write_text("# P\n\n- [ ] Make compute() return 42 :: verify: true\n")
    return goal


def _iteration(*steps: dict[str, Any]) -> list[dict[str, Any]]:
    return [text("working"), *steps, *done_iteration("stage-1")[1:]]


HONEST = _iteration({"write": "tests/test_calc.py", "text": TEST}, {"write": "pytest.ini", "text": INI},
                    {"write": "calc.py", "text": "def compute():\n    return 42\n"})


def _tampered(project: Path, fake: FakeKilo, cheat: list[dict[str, Any]], rule: str) -> None:
    goal = _project(project)
    run = run_loop(fake, project, [cheat, HONEST], "--goal", str(goal), "-n", "2")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    found = [e for e in run.events() if e["type"] == "tamper"]
    assert len(found) == 1 and found[0]["data"]["blocked"], found
    assert [f["rule"] for f in found[0]["data"]["findings"]] == [rule]
    prompt = run.prompt(2)
    assert "Restore the test" in prompt and rule in prompt
    first = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert first["review"]["step"] == "tamper" and first["tamperFindings"][0]["rule"] == rule
    assert "[x] Make compute()" in goal.read_text()  # restored and fixed: the stage passes
    assert "| tamper | block | 1 |" in (run.run_dir / "report.md").read_text()


def test_a_skip_marker_blocks_the_stage(project: Path, fake: FakeKilo) -> None:
    skipped = "import pytest\n\n\n@pytest.mark.skip(reason='later')\n" + TEST
    _tampered(project, fake, _iteration({"write": "tests/test_calc.py", "text": skipped}), "skip-marker")


def test_a_deleted_test_file_blocks_the_stage(project: Path, fake: FakeKilo) -> None:
    _tampered(project, fake, _iteration({"delete": "tests/test_calc.py"}), "deleted-test-file")


def test_addopts_deselecting_the_test_blocks_the_stage(project: Path, fake: FakeKilo) -> None:
    ini = '[pytest]\naddopts = -q -k "not slow_test"\n'
    _tampered(project, fake, _iteration({"write": "pytest.ini", "text": ini}), "verify-input")


def test_warn_lets_the_stage_pass_and_says_so(project: Path, fake: FakeKilo) -> None:
    goal = _project(project)
    cheat = _iteration({"delete": "tests/test_calc.py"})
    run = run_loop(fake, project, [cheat], "--goal", str(goal), "-n", "1", "--tamper", "warn")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    found = [e for e in run.events() if e["type"] == "tamper"]
    assert len(found) == 1 and not found[0]["data"]["blocked"] and found[0]["level"] == "warn"
    assert "[x] Make compute()" in goal.read_text()


def test_a_resumed_run_still_judges_the_stage_from_its_first_iteration(project: Path, fake: FakeKilo) -> None:
    """The skip was added before the run stopped; after --resume the agent only claims the stage done:
    the check still reads the stage's diff from the checkpoint before its first iteration."""
    goal = _project(project)
    skipped = "import pytest\n\n\n@pytest.mark.skip(reason='later')\n" + TEST
    scenario = [_iteration({"write": "tests/test_calc.py", "text": skipped}), _iteration()]
    first = run_loop(fake, project, scenario, "--goal", str(goal), "-n", "1", "--run-id", "rt")
    assert [e["type"] for e in first.events() if e["type"] == "tamper"] == ["tamper"], first.proc.stdout
    resumed = run_loop(fake, project, scenario, "--goal", str(goal), "-n", "2", "--resume", "rt")
    found = [e for e in resumed.events() if e["type"] == "tamper"]
    assert len(found) >= 2 and all(e["data"]["blocked"] for e in found), resumed.proc.stdout
    assert found[-1]["data"]["findings"][0]["rule"] == "skip-marker"
    assert "[ ] Make compute()" in goal.read_text()


def _review_pass() -> list[dict[str, Any]]:
    return [text("reviewing"), {"review": {"verdict": "pass", "findings": [], "questions": []}}]


def test_the_review_is_told_what_the_check_warned_of(project: Path, fake: FakeKilo) -> None:
    goal = _project(project)
    cheat = _iteration({"delete": "tests/test_calc.py"})
    run = run_loop(fake, project, [cheat, _review_pass()], "--goal", str(goal), "-n", "1", "--tamper", "warn",
                   "--review")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    prompt = (run.run_dir / "iterations" / "01-review-prompt.md").read_text()
    assert "Test tampering the loop found" in prompt
    assert "found now (--tamper warn, not blocked): tests/test_calc.py [deleted-test-file]" in prompt


def test_the_review_is_told_an_earlier_iteration_was_blocked(project: Path, fake: FakeKilo) -> None:
    goal = _project(project)
    skipped = "import pytest\n\n\n@pytest.mark.skip(reason='later')\n" + TEST
    cheat = _iteration({"write": "tests/test_calc.py", "text": skipped})
    run = run_loop(fake, project, [cheat, HONEST, _review_pass()], "--goal", str(goal), "-n", "2", "--review")
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    assert not (run.run_dir / "iterations" / "01-review-prompt.md").exists()  # blocked before the review
    prompt = (run.run_dir / "iterations" / "02-review-prompt.md").read_text()
    assert "iteration 1 was blocked: tests/test_calc.py:4 [skip-marker]" in prompt
    assert "[x] Make compute()" in goal.read_text()
