"""The loop with the Cursor backend, through the real entry point, against a fake `cursor-agent`
replaying a stream written from Cursor's documented format (cursor-agent is not on a package
registry): stages complete, shared context resumes, a destructive shell call ends the session,
a transient failure is retried; and a goal whose stages name different runtimes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.loop_harness import REPO, FakeKilo, LoopRun, done_iteration

FAKE_CURSOR = Path(__file__).with_name("fake_cursor_agent.py")
RECORDED = REPO / "tests" / "fixtures" / "streams" / "cursor-documented.ndjson"
# Destructive commands are data: the fake only prints them as an announced tool call.
FORCE_PUSH = "git push --force origin main"


class FakeCursor:
    def __init__(self, tmp: Path) -> None:
        bin_dir = tmp / "cursor-bin"
        bin_dir.mkdir(parents=True)
        self.binary = bin_dir / "cursor-agent"
        self.binary.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE_CURSOR} \"$@\"\n")
        self.binary.chmod(0o755)
        self.scenario = tmp / "cursor-scenario.json"
        self.log = tmp / "cursor-calls.jsonl"

    def env(self, scenario: list[list[dict[str, Any]]]) -> dict[str, str]:
        self.scenario.write_text(json.dumps(scenario))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KILO_LOOP_", "KILO_BIN", "CLAUDE_BIN"))}
        env.update({"FAKE_CURSOR_SCENARIO": str(self.scenario), "FAKE_CURSOR_LOG": str(self.log),
                    "CURSOR_BIN": str(self.binary), "PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1",
                    "COLUMNS": "200", "KILO_LOOP_PREFLIGHT": "false",
                    "KILO_LOOP_SANDBOX": "off"})  # the fake logs outside the project (the jail: tests/e2e)  # the fake takes `--help` for a session
        return env

    @property
    def calls(self) -> list[list[str]]:
        return [json.loads(line)["argv"] for line in self.log.read_text().splitlines()] if self.log.exists() else []


@pytest.fixture
def cursor(tmp_path: Path) -> FakeCursor:
    return FakeCursor(tmp_path)


def run(cursor: FakeCursor, project: Path, scenario: list[list[dict[str, Any]]], *args: str,
        env: dict[str, str] | None = None) -> LoopRun:
    command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard", *args]
    proc = subprocess.run(command, check=False, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90,
                          env={**cursor.env(scenario), **(env or {})}, cwd=project)
    return LoopRun(proc, project, cursor.log)


def two_stage_plan(project: Path) -> None:
    (project / "plan.md").write_text("# Plan\n\n- [ ] First\n- [ ] Second\n", encoding="utf-8")


RECORDED_DONE: list[dict[str, Any]] = [{"replay": str(RECORDED)}, {"progress": "done"}]


def test_two_stages_complete_with_the_cursor_stream(cursor: FakeCursor, project: Path) -> None:
    two_stage_plan(project)

    result = run(cursor, project, [RECORDED_DONE, RECORDED_DONE], "--runtime", "cursor", "--goal", "plan.md")

    assert result.proc.returncode == 0, result.proc.stdout + result.proc.stderr
    state = result.state()
    assert state["status"] == "done" and state["runtime"] == "cursor"
    assert "▸ Read README.md" in result.proc.stdout and "▸ Run ls -la (running)" in result.proc.stdout
    assert all("--force" in argv and "--output-format" in argv for argv in cursor.calls)
    assert all("--resume" not in argv for argv in cursor.calls)  # fresh sessions by default


def test_shared_context_resumes_the_cursor_session(cursor: FakeCursor, project: Path) -> None:
    two_stage_plan(project)

    result = run(cursor, project, [RECORDED_DONE, RECORDED_DONE], "--runtime", "cursor", "--goal", "plan.md",
                 "--shared-context")

    assert result.proc.returncode == 0, result.proc.stdout + result.proc.stderr
    first, second = cursor.calls
    assert "--resume" not in first and second[second.index("--resume") + 1] == "cursor-session-0000"


def test_an_announced_destructive_shell_call_ends_the_session(cursor: FakeCursor, project: Path) -> None:
    announce = {"event": {"type": "tool_call", "subtype": "started", "call_id": "c1",
                          "tool_call": {"shellToolCall": {"args": {"command": FORCE_PUSH}}}}}
    scenario = [[announce, {"sleep": 20}, {"write": "after-kill.txt", "text": "the session went on"},
                 {"progress": "done"}]]

    result = run(cursor, project, scenario, "--runtime", "cursor", "--goal-text", "Ship it", "-n", "1")

    events = result.events()
    guard = [e for e in events if e["type"] == "guard"]
    assert guard and guard[0]["data"]["rule"] == "git-push-force", result.proc.stdout
    assert not (project / "after-kill.txt").exists()  # killed at the announcement, not after the sleep
    assert result.state()["iterations"][0]["outcome"] == "guard"


def test_a_transient_failure_is_retried(cursor: FakeCursor, project: Path) -> None:
    failure = [{"event": {"type": "result", "subtype": "error", "is_error": True,
                          "result": "Connection reset by peer"}}, {"exit": 1}]

    result = run(cursor, project, [failure, RECORDED_DONE], "--runtime", "cursor", "--goal-text", "Do it", "-n", "1",
                 "--retry-delay", "50")

    assert result.proc.returncode == 0, result.proc.stdout + result.proc.stderr
    assert len(cursor.calls) == 2 and result.state()["iterations"][0]["retries"] == 1


def test_a_cost_budget_says_it_cannot_stop_a_runtime_that_reports_no_cost(cursor: FakeCursor, project: Path) -> None:
    result = run(cursor, project, [RECORDED_DONE], "--runtime", "cursor", "--goal-text", "Do it", "-n", "1",
                 "--max-cost", "0.5")

    assert result.proc.returncode == 0, result.proc.stdout + result.proc.stderr
    warnings = [e.get("message", "") for e in result.events() if e["type"] == "warning"]
    assert any("cursor reports no cost: --max-cost cannot stop" in w for w in warnings), warnings


def test_stages_may_name_their_own_runtime(cursor: FakeCursor, project: Path, tmp_path: Path) -> None:
    (project / "plan.md").write_text("# Mixed\n\n- [ ] On kilo\n- [ ] On cursor :: runtime: cursor\n",
                                     encoding="utf-8")
    kilo = FakeKilo(tmp_path / "kilo")
    env = kilo.env([done_iteration("stage-1", "kilo.txt")])

    result = run(cursor, project, [RECORDED_DONE], "--goal", "plan.md", "--shared-context",
                 env={k: env[k] for k in ("FAKE_AGENT_SCENARIO", "FAKE_AGENT_LOG", "KILO_BIN", "KILO_LOOP_SANDBOX")})

    assert result.proc.returncode == 0, result.proc.stdout + result.proc.stderr
    assert result.state()["completedStages"] == ["stage-1", "stage-2"]
    assert (project / "kilo.txt").is_file() and len(cursor.calls) == 1
    assert "--resume" not in cursor.calls[0]  # kilo's session id means nothing to cursor-agent


def test_isolate_home_gives_the_agent_a_private_home_in_the_run(cursor: FakeCursor, project: Path) -> None:
    result = run(cursor, project, [RECORDED_DONE], "--runtime", "cursor", "--goal-text", "Do it", "-n", "1",
                 "--isolate-home")

    assert result.proc.returncode == 0, result.proc.stdout + result.proc.stderr
    call = json.loads(cursor.log.read_text().splitlines()[0])
    home = Path(call["home"])
    assert home == result.run_dir / "agent-home" and home.stat().st_mode & 0o777 == 0o700
    assert Path(call["xdg_config"]).parent == home
    assert call["home"] != os.environ.get("HOME")


def test_without_isolate_home_the_agent_keeps_the_operators_home(cursor: FakeCursor, project: Path) -> None:
    result = run(cursor, project, [RECORDED_DONE], "--runtime", "cursor", "--goal-text", "Do it", "-n", "1")

    assert result.proc.returncode == 0, result.proc.stdout + result.proc.stderr
    assert json.loads(cursor.log.read_text().splitlines()[0])["home"] == os.environ.get("HOME")
    assert not (result.run_dir / "agent-home").exists()
