"""The facts our NDJSON parser and CLI backend rely on, pinned against the real CLIs.

Each test runs `kilo run --format json --auto --title t …` (or `opencode run … --dangerously-skip-
permissions`) with stdin /dev/null, cwd and PWD set to the project, against the scripted provider.
Set KILO_LOOP_E2E_CAPTURE_DIR to save each run's NDJSON (temp paths replaced) as a fixture.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import AgentRun, RunAgent
from .fake_provider import FakeProvider, call, fail, say

pytestmark = pytest.mark.e2e

CAPTURE_ENV = "KILO_LOOP_E2E_CAPTURE_DIR"
CAPTURE_ROOT = "/tmp/e2e"


def save_capture(name: str, run: AgentRun, tmp_path: Path) -> None:
    """With KILO_LOOP_E2E_CAPTURE_DIR set, keep this run's stdout as `<dir>/<name>.jsonl`."""
    target = os.environ.get(CAPTURE_ENV)
    if not target:
        return
    text = run.stdout.replace(str(tmp_path), CAPTURE_ROOT)
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:8765", text)
    Path(target).mkdir(parents=True, exist_ok=True)
    (Path(target) / f"{name}.jsonl").write_text(text, encoding="utf-8")


def part(event: dict[str, Any]) -> dict[str, Any]:
    value = event.get("part")
    assert isinstance(value, dict), event
    return value


def assert_step_finish_shape(event: dict[str, Any], reason: str, usage: dict[str, int] | None) -> None:
    """`step_finish` carries reason, cost and the provider's usage as `tokens`."""
    finish = part(event)
    assert finish["reason"] == reason
    assert isinstance(finish["cost"], int | float)
    tokens = finish["tokens"]
    assert set(tokens) >= {"total", "input", "output", "reasoning", "cache"}
    assert set(tokens["cache"]) >= {"read", "write"}
    assert usage is not None
    assert (tokens["input"], tokens["output"]) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert tokens["total"] == usage["total_tokens"]


def test_text_turn_then_session_flag_continues_the_same_context(
    run_agent: RunAgent, fake_provider: FakeProvider, git_project: Path, tmp_path: Path
) -> None:
    # One server, two iterations: each prompt's marker selects its own script.
    fake_provider.add_turns(say("Hello from the fake model"), marker="ITERATION-ONE")
    fake_provider.add_turns(say("beta answer"), marker="ITERATION-TWO")

    first = run_agent("kilo", "ITERATION-ONE: say hello", project=git_project)

    assert first.returncode == 0, first.describe()
    assert [e["type"] for e in first.events] == ["step_start", "text", "step_finish"], first.describe()
    assert first.non_json_lines == []
    assert first.session_id.startswith("ses_")
    assert all(isinstance(e["timestamp"], int) for e in first.events)
    text = part(first.of_type("text")[0])
    assert text["type"] == "text" and text["text"] == "Hello from the fake model"
    assert_step_finish_shape(first.of_type("step_finish")[0], "stop", fake_provider.chat_requests[0].usage)
    # --title suppresses the extra title request: exactly one model call, carrying our prompt.
    assert len(fake_provider.requests) == 1
    assert "ITERATION-ONE: say hello" in fake_provider.chat_requests[0].user_texts[-1]
    save_capture("kilo_text", first, tmp_path)

    second = run_agent("kilo", "ITERATION-TWO: go on", project=git_project, session=first.session_id)

    assert second.returncode == 0, second.describe()
    assert second.session_id == first.session_id
    assert part(second.of_type("text")[0])["text"] == "beta answer"
    seen = fake_provider.chat_requests[-1].all_text
    assert "ITERATION-ONE: say hello" in seen and "Hello from the fake model" in seen
    assert "ITERATION-TWO: go on" in seen


def test_bash_tool_call_runs_in_the_project(
    run_agent: RunAgent, fake_provider: FakeProvider, git_project: Path, tmp_path: Path
) -> None:
    command = "pwd > where.txt && echo ran-bash"
    fake_provider.add_turns(call("bash", {"command": command, "description": "Record cwd"}), say("Ran it"))

    run = run_agent("kilo", "run a command", project=git_project)

    assert run.returncode == 0, run.describe()
    [tool] = run.tool_uses("bash")
    state = part(tool)["state"]
    assert state["status"] == "completed", run.describe()
    assert state["input"]["command"] == command
    assert state["output"] == "ran-bash\n"
    assert part(tool)["callID"]
    assert (git_project / "where.txt").read_text().strip() == str(git_project)
    reasons = [part(e)["reason"] for e in run.of_type("step_finish")]
    assert reasons == ["tool-calls", "stop"]
    assert fake_provider.remaining() == 0
    # The tool result went back to the model in the next request.
    assert "ran-bash" in fake_provider.chat_requests[1].all_text
    save_capture("kilo_tool_bash", run, tmp_path)


def test_write_lands_where_pwd_points_not_where_cwd_is(
    run_agent: RunAgent, fake_provider: FakeProvider, git_project: Path, tmp_path: Path
) -> None:
    decoy = tmp_path / "decoy-cwd"
    decoy.mkdir()
    fake_provider.add_turns(call("write", {"filePath": "notes/hello.txt", "content": "hi\n"}), say("Wrote it"))

    run = run_agent("kilo", "write a file", project=git_project, cwd=decoy)

    assert run.returncode == 0, run.describe()
    [tool] = run.tool_uses("write")
    state = part(tool)["state"]
    assert state["status"] == "completed", run.describe()
    assert state["input"] == {"filePath": "notes/hello.txt", "content": "hi\n"}
    assert (git_project / "notes" / "hello.txt").read_text() == "hi\n"
    assert not (decoy / "notes").exists()
    save_capture("kilo_write", run, tmp_path)


def test_permission_deny_rule_blocks_the_command(
    run_agent: RunAgent, fake_provider: FakeProvider, git_project: Path, tmp_path: Path
) -> None:
    fake_provider.add_turns(call("bash", {"command": "touch denied.txt", "description": "Touch"}), say("Blocked"))
    permission = {"bash": {"*": "allow", "touch *": "deny"}}

    run = run_agent("kilo", "touch a file", project=git_project, permission=permission)

    assert run.returncode == 0, run.describe()
    [tool] = run.tool_uses("bash")
    state = part(tool)["state"]
    assert state["status"] == "error", run.describe()
    assert state["input"]["command"] == "touch denied.txt"
    assert "touch *" in state["error"] and "deny" in state["error"]
    assert not (git_project / "denied.txt").exists()
    # The denial is the tool result the model sees; the run goes on.
    assert "prevents you from using this specific tool call" in fake_provider.chat_requests[1].all_text
    save_capture("kilo_denied", run, tmp_path)


def test_provider_errors_end_with_error_event(
    run_agent: RunAgent, fake_provider: FakeProvider, git_project: Path, tmp_path: Path
) -> None:
    # A 500 is retried by the CLI itself (isRetryable); a 400 is not and ends the run at once.
    # KILO_SESSION_RETRY_LIMIT caps the retries (by default a 500 costs 6 attempts, ~70-90 s).
    fake_provider.add_turns(fail(500, "server exploded"), fail(400, "bad request from the fake provider"))

    run = run_agent("kilo", "fail please", project=git_project, extra_env={"KILO_SESSION_RETRY_LIMIT": "3"})

    assert run.returncode == 1, run.describe()
    assert [e["type"] for e in run.events] == ["error"], run.describe()
    [error] = run.of_type("error")
    assert error["sessionID"].startswith("ses_")
    assert error["error"]["name"] == "APIError"
    data = error["error"]["data"]
    assert data["message"] == "bad request from the fake provider"
    assert data["statusCode"] == 400 and data["isRetryable"] is False
    assert [r.turn for r in fake_provider.requests] == [
        fail(500, "server exploded"), fail(400, "bad request from the fake provider"),
    ]
    save_capture("kilo_error", run, tmp_path)


def test_opencode_bash_tool_call(
    run_agent: RunAgent, fake_provider: FakeProvider, git_project: Path, tmp_path: Path
) -> None:
    command = "pwd > where.txt && echo ran-bash"
    fake_provider.add_turns(call("bash", {"command": command, "description": "Record cwd"}), say("Ran it"))

    run = run_agent("opencode", "run a command", project=git_project)

    assert run.returncode == 0, run.describe()
    assert [e["type"] for e in run.events] == [
        "step_start", "tool_use", "step_finish", "step_start", "text", "step_finish",
    ], run.describe()
    [tool] = run.tool_uses("bash")
    state = part(tool)["state"]
    assert state["status"] == "completed" and state["input"]["command"] == command
    assert state["output"] == "ran-bash\n"
    assert (git_project / "where.txt").read_text().strip() == str(git_project)
    assert_step_finish_shape(run.of_type("step_finish")[-1], "stop", fake_provider.chat_requests[-1].usage)
    save_capture("opencode_tool_bash", run, tmp_path)
