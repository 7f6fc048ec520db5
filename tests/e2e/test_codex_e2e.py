"""The loop with the REAL Codex CLI (pinned in scripts/install-agent-clis.sh) against a scripted
OpenAI Responses API server on 127.0.0.1 (a model provider with wire_api "responses" in a
temporary CODEX_HOME): stages complete, tool headings and tokens show, shared context resumes
the thread, the guard's PreToolUse hook refuses destructive commands before they run,
provider failures are retried and a token budget stops the run."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from .agent_loop import (
    CANARY_GUARD_ENV,
    COMMIT_ATTEMPT,
    AgentLoop,
    assert_nothing_destructive_ran,
    plant_canary,
    progress_report,
    write_two_file_plan,
)
from .conftest import LOOP_DIR, find_cli, iteration_marker
from .fake_provider import Calls, call, fail, say
from .fake_responses import FakeResponses, all_text, codex_env

pytestmark = pytest.mark.e2e


@pytest.fixture
def responses() -> Iterator[FakeResponses]:
    with FakeResponses() as server:
        yield server


@pytest.fixture
def codex(responses: FakeResponses, agent_home: Path) -> AgentLoop:
    return AgentLoop("codex", find_cli("codex"), codex_env(responses.port, agent_home))


def shell(command: str) -> Calls:
    return call("exec_command", {"cmd": command})


def progress(project: Path, iteration: int, stage_id: str, status: str = "done") -> Calls:
    target = project / LOOP_DIR / "progress.json"
    return shell(f"printf '%s' {shlex.quote(progress_report(iteration, stage_id, status))} > {shlex.quote(str(target))}")


def script_two_stages(responses: FakeResponses, project: Path) -> None:
    for i, (stage, name) in enumerate((("stage-1", "a.txt"), ("stage-2", "b.txt")), start=1):
        responses.add_turns(shell(f"echo {name} > {name}"), progress(project, i, stage), say(f"{name} made"),
                            marker=iteration_marker(i))


def test_two_stage_goal_completes_with_tool_headings_and_tokens(
    codex: AgentLoop, responses: FakeResponses, git_project: Path
) -> None:
    project = git_project
    write_two_file_plan(project)
    script_two_stages(responses, project)

    run = codex.run(project, "--goal", "plan.md", "-n", "3")

    assert run.returncode == 0, run.describe()
    state = run.state()
    assert state["status"] == "done" and state["completedStages"] == ["stage-1", "stage-2"], run.describe()
    assert state["runtime"] == "codex"
    assert (project / "a.txt").is_file() and (project / "b.txt").is_file()
    assert "▸ Run /bin/bash -lc 'echo a.txt > a.txt'" in run.stdout, run.describe()
    assert run.report(1)["tokens"] > 0 and state["totals"]["tokens"] > 0
    assert not any(iteration_marker(1) in all_text(r.body) for r in responses.requests_with(iteration_marker(2)))


def test_shared_context_resumes_the_codex_thread(
    codex: AgentLoop, responses: FakeResponses, git_project: Path
) -> None:
    project = git_project
    write_two_file_plan(project)
    script_two_stages(responses, project)

    run = codex.run(project, "--goal", "plan.md", "-n", "3", "--shared-context")

    assert run.returncode == 0, run.describe()
    sessions = [i["sessionId"] for i in run.state()["iterations"]]
    assert len(sessions) == 2 and sessions[0] == sessions[1], sessions
    second = responses.requests_with(iteration_marker(2))
    assert second and all(iteration_marker(1) in all_text(r.body) and "a.txt made" in all_text(r.body)
                          for r in second)


def test_destructive_commands_are_refused_before_they_run(
    codex: AgentLoop, responses: FakeResponses, git_project: Path, tmp_path: Path
) -> None:
    project = git_project
    canary = plant_canary(tmp_path, project)
    responses.add_turns(
        shell(COMMIT_ATTEMPT),
        shell(canary.delete_command),
        shell("echo fine > fine.txt"),
        progress(project, 1, "stage-1"),
        say("done"),
        marker=iteration_marker(1),
    )

    run = codex.run(project, "--goal-text", "Tidy up", "-n", "1",
                    extra_env=CANARY_GUARD_ENV)

    assert_nothing_destructive_ran(run, canary)
    refused = [w for w in run.events("warning") if "guard hook refused before execution" in w["message"]]
    assert len(refused) == 2, run.describe()
    assert any("denied by the loop's guard" in all_text(r.body) for r in responses.turn_requests)


def test_a_provider_500_is_retried(codex: AgentLoop, responses: FakeResponses, git_project: Path) -> None:
    project = git_project
    responses.add_turns(fail(500, "scripted outage"), shell("echo ok > ok.txt"), progress(project, 1, "stage-1"),
                        say("done"), marker=iteration_marker(1))

    run = codex.run(project, "--goal-text", "Make ok.txt", "-n", "1", "--retry-delay", "100")

    assert run.returncode == 0, run.describe()
    report = run.report(1)
    # Codex words a 5xx as "high demand"; its backend marks that failure transient
    assert report["retries"] == 1 and "high demand" in report["retryReason"], report
    assert (project / "ok.txt").is_file()


def test_a_token_budget_stops_the_run(codex: AgentLoop, responses: FakeResponses, git_project: Path) -> None:
    project = git_project
    responses.add_turns(shell("echo one > one.txt"), say("done"), marker=iteration_marker(1))

    run = codex.run(project, "--goal-text", "Make files", "-n", "3", "--max-tokens", "1000")

    assert run.returncode == 3, run.describe()
    state = run.state()
    assert state["status"] == "stopped-budget" and "--max-tokens 1000" in state["stopReason"], state
    assert responses.requests_with(iteration_marker(2)) == []


def test_the_hook_refuses_a_patch_to_a_protected_file(codex: AgentLoop, responses: FakeResponses,
                                                      git_project: Path) -> None:
    """The stage's protect globs reach the PreToolUse hook: a shell `apply_patch` adding a protected
    file is refused before Codex applies it."""
    project = git_project
    (project / "plan.md").write_text("# Protected\n\n- [ ] Create app.txt :: protect: tests/**\n", encoding="utf-8")
    patch = "*** Begin Patch\n*** Add File: tests/test_extra.py\n+x = 1\n*** End Patch\n"
    responses.add_turns(shell(f"apply_patch <<'PATCH'\n{patch}PATCH"), shell("echo app > app.txt"),
                        progress(project, 1, "stage-1"), say("done"), marker=iteration_marker(1))

    run = codex.run(project, "--goal", "plan.md", "-n", "1")

    assert run.returncode == 0, run.describe()
    assert run.state()["status"] == "done", run.describe()
    assert not (project / "tests" / "test_extra.py").exists() and (project / "app.txt").is_file()
    assert any("is protected for this stage" in all_text(r.body) for r in responses.turn_requests), run.describe()
