"""The loop with the REAL Gemini CLI (pinned in scripts/install-agent-clis.sh) against a scripted
Gemini API server on 127.0.0.1 (GOOGLE_GEMINI_BASE_URL): stages complete, tool headings and
tokens show, shared context resumes the session, the guard's BeforeTool hook refuses
destructive commands before they run, provider failures are retried and a token budget
stops the run.

The Gemini CLI ignores a system settings file below a directory others can write, such as
/tmp, so these temporary repositories live in a private temporary directory under
<repo>/test-artifacts (git-ignored), removed after each test.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kilo_loop.agent.gemini.backend import insecure_parent

from .agent_loop import (
    CANARY_GUARD_ENV,
    COMMIT_ATTEMPT,
    AgentLoop,
    assert_nothing_destructive_ran,
    plant_canary,
    progress_report,
    write_two_file_plan,
)
from .conftest import LOOP_DIR, REPO_ROOT, find_cli, iteration_marker
from .fake_gemini import FakeGemini, all_text, gemini_env
from .fake_provider import Calls, Fail, call, fail, say

pytestmark = pytest.mark.e2e


@pytest.fixture
def private_tmp() -> Iterator[Path]:
    # Gemini ignores a settings file below a group/other-writable directory: a checkout under /tmp
    # (as a CI clone may be) puts the temporary repositories in a private folder of the real HOME.
    base = REPO_ROOT / "test-artifacts"
    if insecure_parent(REPO_ROOT) is not None:
        base = Path.home() / ".cache" / "kilo-loop-e2e"
    base.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="gemini-e2e-", dir=base))
    path.chmod(0o700)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def project(private_tmp: Path) -> Path:
    project = private_tmp / "project"
    project.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.name", "E2E"], ["config", "user.email", "e@x.invalid"],
                 ["config", "commit.gpgsign", "false"]):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    (project / "README.md").write_text("# e2e\n", encoding="utf-8")
    subprocess.run(["git", "add", "README.md"], cwd=project, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-q", "-m", "initial"], cwd=project, check=True, capture_output=True)
    return project


@pytest.fixture
def server() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


@pytest.fixture
def gemini(server: FakeGemini, private_tmp: Path) -> AgentLoop:
    home = private_tmp / "home"
    home.mkdir()
    return AgentLoop("gemini", find_cli("gemini"), gemini_env(server.port, home))


def shell(command: str) -> Calls:
    return call("run_shell_command", {"command": command, "description": "Scripted command"})


def progress(project: Path, iteration: int, stage_id: str, status: str = "done") -> Calls:
    return call("write_file", {"file_path": str(project / LOOP_DIR / "progress.json"), "content": progress_report(iteration, stage_id, status)})


def two_stages(server: FakeGemini, project: Path) -> None:
    write_two_file_plan(project)
    for i, (stage, name) in enumerate((("stage-1", "a.txt"), ("stage-2", "b.txt")), start=1):
        server.add_turns(shell(f"echo {name} > {name}"), progress(project, i, stage), say(f"{name} made"),
                         marker=iteration_marker(i))


def test_two_stage_goal_completes_with_tool_headings_and_tokens(
    gemini: AgentLoop, server: FakeGemini, project: Path
) -> None:
    two_stages(server, project)

    run = gemini.run(project, "--goal", "plan.md", "-n", "3")

    assert run.returncode == 0, run.describe()
    state = run.state()
    assert state["status"] == "done" and state["completedStages"] == ["stage-1", "stage-2"], run.describe()
    assert state["runtime"] == "gemini" and (project / "b.txt").is_file()
    assert "▸ Run echo a.txt > a.txt" in run.stdout and "▸ Write " in run.stdout, run.describe()
    assert run.report(1)["tokens"] > 0 and state["totals"]["tokens"] > 0


def test_shared_context_resumes_the_gemini_session(gemini: AgentLoop, server: FakeGemini, project: Path) -> None:
    two_stages(server, project)

    run = gemini.run(project, "--goal", "plan.md", "-n", "3", "--shared-context")

    assert run.returncode == 0, run.describe()
    sessions = [i["sessionId"] for i in run.state()["iterations"]]
    assert len(sessions) == 2 and sessions[0] == sessions[1], sessions
    second = server.requests_with(iteration_marker(2))
    assert second and all(iteration_marker(1) in all_text(r.body) for r in second)


def test_destructive_commands_are_refused_before_they_run(
    gemini: AgentLoop, server: FakeGemini, project: Path, private_tmp: Path
) -> None:
    canary = plant_canary(private_tmp, project)
    server.add_turns(
        shell(COMMIT_ATTEMPT),
        shell(canary.delete_command),
        shell("echo fine > fine.txt"),
        progress(project, 1, "stage-1"),
        say("done"),
        marker=iteration_marker(1),
    )

    run = gemini.run(project, "--goal-text", "Tidy up", "-n", "1",
                     extra_env=CANARY_GUARD_ENV)

    assert_nothing_destructive_ran(run, canary)
    assert len(run.events("guard-pre")) == 2, run.describe()
    assert any("denied by the loop's guard" in all_text(r.body) for r in server.turn_requests)


def test_a_provider_500_is_retried(server: FakeGemini, project: Path, private_tmp: Path) -> None:
    # The Gemini CLI retries a 500 itself (10 attempts by default); with one attempt it gives up,
    # so the loop's own retry is what continues the iteration.
    home = private_tmp / "home-one-attempt"
    home.mkdir()
    gemini = AgentLoop("gemini", find_cli("gemini"), gemini_env(server.port, home, max_attempts=1))
    server.add_turns(fail(500, "scripted outage"), shell("echo ok > ok.txt"), progress(project, 1, "stage-1"),
                     say("done"), marker=iteration_marker(1))

    run = gemini.run(project, "--goal-text", "Make ok.txt", "-n", "1", "--retry-delay", "100")

    assert run.returncode == 0, run.describe()
    report = run.report(1)
    assert report["retries"] == 1 and report["retryReason"], report
    assert len([r for r in server.requests_with(iteration_marker(1)) if isinstance(r.turn, Fail)]) == 1
    assert (project / "ok.txt").is_file()


def test_a_token_budget_stops_the_run(gemini: AgentLoop, server: FakeGemini, project: Path) -> None:
    server.add_turns(shell("echo one > one.txt"), say("done"), marker=iteration_marker(1))

    run = gemini.run(project, "--goal-text", "Make files", "-n", "3", "--max-tokens", "100")

    assert run.returncode == 3, run.describe()
    state = run.state()
    assert state["status"] == "stopped-budget" and "--max-tokens 100" in state["stopReason"], state
    assert server.requests_with(iteration_marker(2)) == []


def test_the_hook_refuses_a_write_to_a_protected_file(gemini: AgentLoop, server: FakeGemini, project: Path) -> None:
    """The stage's protect globs reach the BeforeTool hook: Gemini CLI never writes the file."""
    (project / "plan.md").write_text("# Protected\n\n- [ ] Create app.txt :: protect: tests/**\n", encoding="utf-8")
    server.add_turns(
        call("write_file", {"file_path": str(project / "tests" / "test_extra.py"), "content": "x = 1\n"}),
        call("write_file", {"file_path": str(project / "app.txt"), "content": "app\n"}),
        progress(project, 1, "stage-1"), say("done"), marker=iteration_marker(1))

    run = gemini.run(project, "--goal", "plan.md", "-n", "1")

    assert run.returncode == 0, run.describe()
    assert run.state()["status"] == "done", run.describe()
    assert not (project / "tests" / "test_extra.py").exists() and (project / "app.txt").is_file()
    assert any("is protected for this stage" in all_text(r.body) for r in server.turn_requests), run.describe()
