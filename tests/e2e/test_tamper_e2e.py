"""Test tampering with the real kilo CLI and the scripted model: the model makes the stage "pass" by
adding `@pytest.mark.skip` to the failing test; verify (pytest) passes, yet the stage is not done; the
next iteration's prompt — as the scripted server receives it — asks to restore the test; the model
restores it and fixes the code, and the stage is done. (The deleted-file and `addopts -k` variants
are integration tests: tests/integration/test_tamper_loop.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Loop, iteration_marker, iteration_requests, write, write_progress
from .fake_provider import FakeProvider, call, say

pytestmark = pytest.mark.e2e

TEST = "from calc import compute\n\n\ndef test_compute():\n    assert compute() == 42\n"
SKIPPED = "import pytest\n\nfrom calc import compute\n\n\n@pytest.mark.skip(reason='later')\n" \
          "def test_compute():\n    assert compute() == 42\n"


def test_a_stage_passed_by_skipping_its_test_is_not_done(loop: Loop, fake_provider: FakeProvider,
                                                         git_project: Path) -> None:
    project = git_project
    verify = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:randomly test_calc.py"
    (project / "plan.md").write_text(f"# Calc\n\n- [ ] Make compute() return 42 :: verify: {verify}\n",
                                     encoding="utf-8")
    (project / "calc.py").write_text("def compute():\n    return 41\n", encoding="utf-8")
    (project / "test_calc.py").write_text(TEST, encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "calc"], cwd=project, check=True)
    test_file = project / "test_calc.py"
    fake_provider.add_turns(
        call("read", {"filePath": str(test_file)}),
        write(test_file, SKIPPED),
        write_progress(project, 1, "stage-1", "done", percent=100),
        say("The test is skipped for now; done."),
        marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        call("read", {"filePath": str(test_file)}),
        write(test_file, TEST),
        call("read", {"filePath": str(project / "calc.py")}),
        write(project / "calc.py", "def compute():\n    return 42\n"),
        write_progress(project, 2, "stage-1", "done", percent=100),
        say("Restored the test and fixed compute()."),
        marker=iteration_marker(2),
    )

    run = loop.run("kilo", project, "--goal", "plan.md", "-n", "3")

    assert run.returncode == 0, run.describe()
    found = run.events("tamper")
    assert len(found) == 1 and found[0]["data"]["blocked"], run.describe()
    assert found[0]["data"]["findings"][0]["rule"] == "skip-marker"
    assert found[0]["data"]["findings"][0]["file"] == "test_calc.py"
    assert run.report(1)["verify"]["passed"] and run.report(1)["review"]["step"] == "tamper"
    second = iteration_requests(fake_provider, 2)
    assert second and "Restore the test" in second[0].user_texts[-1], run.describe()
    assert "skip-marker" in second[0].user_texts[-1]
    state = run.state()
    assert state["status"] == "done" and state["completedStages"] == ["stage-1"], run.describe()
    assert test_file.read_text(encoding="utf-8") == TEST
