"""`protect` under the serve transport with the real kilo CLI: the scripted model tries to edit a
protected test file and to add a new one; the loop's broker refuses both before they are
written (the server asks before every edit when the goal protects paths), the files on disk are
unchanged, the refusals are guard events, and the session goes on to finish the stage. A
reviewer's write outside `.kilocode-loop/` is refused the same way, and it still gives its verdict."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import Loop, LoopRun, iteration_marker, iteration_requests, write, write_progress
from .fake_provider import FakeProvider, call, say

pytestmark = pytest.mark.e2e

PLAN = "# Protected tests\n\n- [ ] Create app.txt :: protect: tests/**\n- [ ] Create beta.txt\n"
ORIGINAL = "def test_app():\n    assert True\n"


def script_a_cheating_implementer(fake_provider: FakeProvider, project: Path) -> Path:
    """Stage 1 protects tests/**: the model edits the existing test and adds a new one, then does the
    work; stage 2 is ordinary. Returns the protected test file."""
    (project / "plan.md").write_text(PLAN, encoding="utf-8")
    test_file = project / "tests" / "test_app.py"
    test_file.parent.mkdir()
    test_file.write_text(ORIGINAL, encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "tests"], cwd=project, check=True)
    fake_provider.add_turns(
        call("read", {"filePath": str(test_file)}),
        call("edit", {"filePath": str(test_file), "oldString": "assert True", "newString": "assert 1 or True"}),
        write(project / "tests" / "test_extra.py", "def test_extra():\n    pass\n"),
        write(project / "app.txt", "app\n"),
        write_progress(project, 1, "stage-1", "done", percent=50),
        say("Stage one is done without touching the tests."),
        marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        write(project / "beta.txt", "beta\n"),
        write_progress(project, 2, "stage-2", "done", percent=100),
        say("Stage two is done."),
        marker=iteration_marker(2),
    )
    return test_file


def assert_tests_untouched_and_goal_done(run: LoopRun, project: Path, test_file: Path) -> None:
    assert run.returncode == 0, run.describe()
    state = run.state()
    assert state["status"] == "done" and state["completedStages"] == ["stage-1", "stage-2"], run.describe()
    assert test_file.read_text(encoding="utf-8") == ORIGINAL
    assert not (project / "tests" / "test_extra.py").exists()
    assert (project / "app.txt").read_text() == "app\n" and (project / "beta.txt").read_text() == "beta\n"
    assert not run.events("protected")  # nothing protected changed, so the stage was not blocked


def test_serve_refuses_a_protected_edit_before_it_is_written(loop: Loop, fake_provider: FakeProvider,
                                                              git_project: Path) -> None:
    project = git_project
    test_file = script_a_cheating_implementer(fake_provider, project)

    run = loop.run("kilo", project, "--goal", "plan.md", "-n", "3", "--transport", "serve")

    assert_tests_untouched_and_goal_done(run, project, test_file)
    refused = [e["data"] for e in run.events("guard")]
    assert [(g.get("rule"), g.get("before_execution")) for g in refused] == [("protect tests/**", True)] * 2, \
        run.describe()
    assert {g["command"] for g in refused} == {"tests/test_app.py", "tests/test_extra.py"}
    assert run.report(1)["outcome"] == "ok" and run.report(1)["guardHits"] == 2
    # The agent read the refusal at once, and the next iteration's prompt carries it as feedback.
    first = iteration_requests(fake_provider, 1)
    assert any("is protected for this stage" in r.all_text for r in first), run.describe()
    second = run.prompt(2)
    assert "## Loop safety feedback" in second and "tests/test_app.py" in second


def test_run_transport_denies_protected_edits_through_the_inline_config(loop: Loop, fake_provider: FakeProvider,
                                                                       git_project: Path) -> None:
    """Under `kilo run` the stage's globs are edit deny rules in the inline config: kilo refuses the
    edits itself before writing (failed tool calls the agent reads)."""
    project = git_project
    test_file = script_a_cheating_implementer(fake_provider, project)

    run = loop.run("kilo", project, "--goal", "plan.md", "-n", "3", "--transport", "run")

    assert_tests_untouched_and_goal_done(run, project, test_file)
    failed = [e["data"] for e in run.events("tool") if e["data"]["status"] == "error"]
    assert [f["tool"] for f in failed] == ["edit", "write"], run.describe()
    assert run.report(1)["outcome"] == "ok"


def test_serve_refuses_a_reviewers_write_before_it_happens(loop: Loop, fake_provider: FakeProvider,
                                                           git_project: Path) -> None:
    project = git_project
    (project / "plan.md").write_text("# Feature\n\n- [ ] Add feature.txt :: verify: test -f feature.txt\n",
                                     encoding="utf-8")
    fake_provider.add_turns(
        write(project / "feature.txt", "ok\n"),
        write_progress(project, 1, "stage-1", "done", percent=100),
        say("done"),
        marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        write(project / "reviewer-notes.txt", "a reviewer must not write here\n"),
        write(project / ".kilocode-loop" / "review.json", '{"verdict": "pass", "findings": [], "questions": []}'),
        say("passes"),
        marker="# Reviewer — goal:",
    )

    run = loop.run("kilo", project, "--goal", "plan.md", "--review", "-n", "2", "--transport", "serve")

    assert run.returncode == 0, run.describe()
    assert run.state()["status"] == "done", run.describe()
    assert not (project / "reviewer-notes.txt").exists()
    refused = [e["data"] for e in run.events("guard")]
    assert [(g.get("rule"), g.get("before_execution")) for g in refused] == [("review-read-only", True)], \
        run.describe()
    assert refused[0]["command"].endswith("reviewer-notes.txt")
    assert run.report(1)["review"]["verdict"] == "pass"  # the reviewer went on and gave its verdict
