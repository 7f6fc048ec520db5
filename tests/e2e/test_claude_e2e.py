"""The loop with the REAL Claude Code CLI (pinned in scripts/install-agent-clis.sh) against a
scripted Anthropic Messages server on 127.0.0.1: stages complete, tool headings and tokens
show, shared context resumes the session, the guard's PreToolUse hook refuses destructive
calls before they run, provider failures are retried and budgets stop the run."""

from __future__ import annotations

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
from .fake_anthropic import FakeAnthropic, all_text, claude_env, prompt_text
from .fake_provider import Calls, call, fail, say

pytestmark = pytest.mark.e2e


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def claude(anthropic: FakeAnthropic, agent_home: Path) -> AgentLoop:
    # Claude Code retries provider errors itself; 0 retries shows the loop's own retry at work.
    env = {**claude_env(anthropic.port, agent_home), "CLAUDE_CODE_MAX_RETRIES": "0"}
    return AgentLoop("claude", find_cli("claude"), env)


def bash(command: str) -> Calls:
    return call("Bash", {"command": command, "description": "Scripted command"})


def write(path: Path, content: str) -> Calls:
    return call("Write", {"file_path": str(path), "content": content})


def progress(project: Path, iteration: int, stage_id: str, status: str = "done") -> Calls:
    return write(project / LOOP_DIR / "progress.json", progress_report(iteration, stage_id, status))


def test_two_stage_goal_completes_with_tool_headings_and_tokens(
    claude: AgentLoop, anthropic: FakeAnthropic, git_project: Path
) -> None:
    project = git_project
    write_two_file_plan(project)
    for i, (stage, name) in enumerate((("stage-1", "a.txt"), ("stage-2", "b.txt")), start=1):
        anthropic.add_turns(bash(f"echo {name} > {name}"), progress(project, i, stage), say(f"{name} made"),
                            marker=iteration_marker(i))

    run = claude.run(project, "--goal", "plan.md", "-n", "3")

    assert run.returncode == 0, run.describe()
    state = run.state()
    assert state["status"] == "done" and state["completedStages"] == ["stage-1", "stage-2"], run.describe()
    assert state["runtime"] == "claude"
    assert (project / "a.txt").is_file() and (project / "b.txt").is_file()
    assert "▸ Run echo a.txt > a.txt" in run.stdout and "▸ Write" in run.stdout, run.describe()
    tools = [e["data"]["tool"] for e in run.events("tool")]
    assert tools.count("Bash") == 2 and tools.count("Write") == 2
    report = run.report(1)
    assert report["tokens"] > 0 and report["cost"] > 0, report
    assert state["totals"]["tokens"] > 0
    # fresh sessions by default: iteration 2 never saw iteration 1's prompt
    assert not any(iteration_marker(1) in r.all_text for r in anthropic.requests_with(iteration_marker(2)))


def test_shared_context_resumes_the_claude_session(
    claude: AgentLoop, anthropic: FakeAnthropic, git_project: Path
) -> None:
    project = git_project
    write_two_file_plan(project)
    for i, (stage, name) in enumerate((("stage-1", "a.txt"), ("stage-2", "b.txt")), start=1):
        anthropic.add_turns(bash(f"echo {name} > {name}"), progress(project, i, stage), say(f"{name} made"),
                            marker=iteration_marker(i))

    run = claude.run(project, "--goal", "plan.md", "-n", "3", "--shared-context")

    assert run.returncode == 0, run.describe()
    sessions = [i["sessionId"] for i in run.state()["iterations"]]
    assert len(sessions) == 2 and sessions[0] == sessions[1], sessions
    second = anthropic.requests_with(iteration_marker(2))
    assert second, [prompt_text(r.body)[-200:] for r in anthropic.turn_requests]
    seen = [all_text(r.body) for r in second]
    assert all(iteration_marker(1) in text and "a.txt made" in text for text in seen), [
        (len(r.body.get("messages", [])), iteration_marker(1) in t, t[:1500]) for r, t in zip(second, seen, strict=True)]


def test_destructive_calls_are_refused_before_they_run(
    claude: AgentLoop, anthropic: FakeAnthropic, git_project: Path, tmp_path: Path
) -> None:
    project = git_project
    canary = plant_canary(tmp_path, project)
    anthropic.add_turns(
        bash(COMMIT_ATTEMPT),
        bash(canary.delete_command),
        bash("echo fine > fine.txt"),
        progress(project, 1, "stage-1"),
        say("done"),
        marker=iteration_marker(1),
    )

    run = claude.run(project, "--goal-text", "Tidy up", "-n", "1",
                     extra_env=CANARY_GUARD_ENV)

    assert_nothing_destructive_ran(run, canary)
    pre = run.events("guard-pre")
    assert len(pre) == 2, run.describe()
    tool_errors = [e["data"]["error"] for e in run.events("tool") if e["data"]["status"] == "error"]
    assert len(tool_errors) == 2 and all("denied by the loop's guard" in err for err in tool_errors)
    # the model was told why, so it can reach the goal another way
    assert any("denied by the loop's guard" in all_text(r.body) for r in anthropic.turn_requests)
    assert (run.run_dir / "claude-settings.json").is_file()


@pytest.mark.parametrize("status", [500, 429])
def test_a_provider_failure_is_retried(
    claude: AgentLoop, anthropic: FakeAnthropic, git_project: Path, status: int
) -> None:
    project = git_project
    anthropic.add_turns(fail(status, "scripted outage"), bash("echo ok > ok.txt"), progress(project, 1, "stage-1"),
                        say("done"), marker=iteration_marker(1))

    run = claude.run(project, "--goal-text", "Make ok.txt", "-n", "1", "--retry-delay", "100")

    assert run.returncode == 0, run.describe()
    report = run.report(1)
    assert report["retries"] == 1 and str(status) in report["retryReason"], report
    assert "auto-retry" in run.stdout
    assert (project / "ok.txt").is_file()


def test_a_token_budget_stops_the_run(claude: AgentLoop, anthropic: FakeAnthropic, git_project: Path) -> None:
    project = git_project
    anthropic.add_turns(bash("echo one > one.txt"), bash("echo two > two.txt"), say("done"),
                        marker=iteration_marker(1))

    run = claude.run(project, "--goal-text", "Make files", "-n", "3", "--max-tokens", "1000")

    assert run.returncode == 3, run.describe()
    state = run.state()
    assert state["status"] == "stopped-budget" and "--max-tokens 1000" in state["stopReason"], state
    assert not (project / "two.txt").exists()  # killed mid-session, before the second call
    assert len(anthropic.requests_with(iteration_marker(2))) == 0


def test_a_cost_budget_stops_the_run(claude: AgentLoop, anthropic: FakeAnthropic, git_project: Path) -> None:
    # Claude Code reports the session's cost once, at its end: the run stops before the next session.
    project = git_project
    anthropic.add_turns(bash("echo one > one.txt"), say("done"), marker=iteration_marker(1))

    run = claude.run(project, "--goal-text", "Make files", "-n", "3", "--max-cost", "0.001")

    assert run.returncode == 3, run.describe()
    state = run.state()
    assert state["status"] == "stopped-budget" and "--max-cost" in state["stopReason"], state
    assert state["totals"]["cost"] > 0.001 and (project / "one.txt").is_file()
    assert anthropic.requests_with(iteration_marker(2)) == []


def test_prompt_text_skips_reminders_and_tool_results() -> None:
    body = {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                     {"type": "text", "text": "Iteration 1 of 2."}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "out"}]},
    ]}
    assert prompt_text(body) == "Iteration 1 of 2."


def test_the_hook_refuses_a_write_to_a_protected_file(claude: AgentLoop, anthropic: FakeAnthropic,
                                                       git_project: Path) -> None:
    """The stage's protect globs reach the PreToolUse hook: Claude Code never writes the file."""
    project = git_project
    (project / "plan.md").write_text("# Protected\n\n- [ ] Create app.txt :: protect: tests/**\n", encoding="utf-8")
    anthropic.add_turns(write(project / "tests" / "test_extra.py", "def test_extra():\n    pass\n"),
                        write(project / "app.txt", "app\n"), progress(project, 1, "stage-1"), say("done"),
                        marker=iteration_marker(1))

    run = claude.run(project, "--goal", "plan.md", "-n", "1")

    assert run.returncode == 0, run.describe()
    assert run.state()["status"] == "done", run.describe()
    assert not (project / "tests" / "test_extra.py").exists() and (project / "app.txt").is_file()
    errors = [e["data"]["error"] for e in run.events("tool") if e["data"]["status"] == "error"]
    assert len(errors) == 1 and "(protect)" in errors[0] and "tests/**" in errors[0], run.describe()
    assert any("is protected for this stage" in all_text(r.body) for r in anthropic.turn_requests)
