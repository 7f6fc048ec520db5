"""Notes to the agent end to end, real kilo against the scripted model, sent with `kilo-loop note` (the run's
dashboard API with its token): under `serve` a note sent mid-turn is in the very next model request of that
session; under `run` it waits, survives `kill -9` + `--resume`, and is the resumed iteration's first request.
Each note goes queued -> delivered -> acknowledged in the run's events and state."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .agent_loop import AgentLoop, progress_report, write_two_file_plan
from .conftest import LOOP_DIR, REPO_ROOT, Loop, find_cli, iteration_marker, write, write_progress
from .fake_anthropic import FakeAnthropic, claude_env
from .fake_provider import FakeProvider, call, hold, say

pytestmark = pytest.mark.e2e

PLAN = "# Notes\n\n- [ ] Write done.txt\n"
NOTE = "use the helper in utils/, not a new one"
NOTES_MARKER = "Notes from the operator"
HELD_S = 150.0
START_TIMEOUT_S = 240.0


def _events(project: Path) -> list[dict[str, Any]]:
    runs = list((project / LOOP_DIR / "runs").glob("*/events.jsonl"))
    if not runs:
        return []
    lines = runs[0].read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _wait_for_event(project: Path, kind: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in _events(project) if e.get("type") == kind]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no {kind} event within {timeout}s: {[e.get('type') for e in _events(project)]}")


def _send_note(loop: Loop | AgentLoop, project: Path, text: str) -> subprocess.CompletedProcess[str]:
    env = loop.environment("kilo") if isinstance(loop, Loop) else loop.environment()
    return subprocess.run([sys.executable, "-m", "kilo_loop", "note", "-C", str(project), text], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=60)


def _with_api(project: Path, timeout: float = START_TIMEOUT_S) -> None:
    """Until the run's dashboard wrote where its API answers."""
    deadline = time.monotonic() + timeout
    while not list((project / LOOP_DIR / "runs").glob("*/api.json")):
        assert time.monotonic() < deadline, "the run never wrote api.json"
        time.sleep(0.1)


def _finish(process: subprocess.Popen[str], timeout: float = 180.0) -> tuple[str, str]:
    try:
        return process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)


def test_serve_a_note_sent_mid_turn_is_in_the_very_next_model_request(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    (project / "plan.md").write_text(PLAN, encoding="utf-8")
    fake_provider.add_turns(hold(HELD_S, then=write(project / "done.txt", "done\n")), marker=iteration_marker(1))
    fake_provider.add_turns(write_progress(project, 1, "stage-1", "done", notesSeen=["n1"]),
                            say("noted n1: I use the helper in utils/."), marker=NOTES_MARKER)
    process = loop.start("kilo", project, "--goal", "plan.md", "-n", "1", "--transport", "serve",
                         "--dashboard", "--port", "0")
    try:
        assert fake_provider.wait_for_hold(START_TIMEOUT_S), "the agent never reached the held reply"
        _with_api(project)
        sent = _send_note(loop, project, NOTE)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert "note n1 queued" in sent.stdout
        before = len(fake_provider.chat_requests)
        fake_provider.release()
        out, err = _finish(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    assert process.returncode == 0, out + err
    after = [r for r in fake_provider.chat_requests[before:] if r.body.get("tools")]
    assert after and NOTE in after[0].user_texts[-1], [r.user_texts[-1][:80] for r in after]
    kinds = [e["type"] for e in _events(project) if e["type"].startswith("note-")]
    assert kinds == ["note-queued", "note-delivered", "note-acknowledged"], kinds
    delivered = next(e for e in _events(project) if e["type"] == "note-delivered")
    assert delivered["data"]["via"] == "live"
    [state_file] = (project / LOOP_DIR / "runs").glob("*/state.json")
    [note] = json.loads(state_file.read_text(encoding="utf-8"))["notes"]
    assert note["status"] == "acknowledged" and note["deliveredVia"] == "live" and note["source"] == "cli"
    assert (project / "done.txt").exists()


def test_run_a_queued_note_survives_kill_9_and_is_the_resumed_iterations_first_request(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    """Under `run` a note waits for the next iteration's prompt; a kill -9 while it waits loses nothing."""
    project = git_project
    (project / "plan.md").write_text(PLAN, encoding="utf-8")
    fake_provider.add_turns(hold(HELD_S), marker=iteration_marker(1))
    bare = {"KILO_LOOP_SANDBOX": "off"}
    process = loop.start("kilo", project, "--goal", "plan.md", "-n", "2", "--transport", "run",
                         "--dashboard", "--port", "0", extra_env=bare)
    try:
        assert fake_provider.wait_for_hold(START_TIMEOUT_S), "the agent never reached the held reply"
        _with_api(project)
        sent = _send_note(loop, project, NOTE)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        _wait_for_event(project, "note-queued")
    finally:
        process.kill()  # kill -9 while the note is queued
        process.communicate(timeout=30)
    fake_provider.release()
    fake_provider.add_turns(write(project / "done.txt", "done\n"),
                            write_progress(project, 2, "stage-1", "done", notesSeen=["n1"]), say("finished"),
                            marker=iteration_marker(2))
    resumed = loop.run("kilo", project, "--goal", "plan.md", "--resume", "last", "-n", "2", "--transport", "run",
                       extra_env=bare)
    assert resumed.returncode == 0, resumed.describe()
    first = next(r for r in fake_provider.chat_requests
                 if r.body.get("tools") and r.user_texts and iteration_marker(2) in r.user_texts[-1])
    text = first.user_texts[-1]  # kilo quotes the prompt and appends its environment details
    assert text.lstrip('"').startswith("## Notes from the operator") and NOTE in text
    notes = resumed.state()["notes"]
    assert [(n["id"], n["status"], n["deliveredVia"], n["acknowledgedHow"]) for n in notes] == [
        ("n1", "acknowledged", "prompt", "progress")]


def test_claude_code_a_note_sent_mid_iteration_opens_the_next_iterations_prompt(
    git_project: Path, agent_home: Path
) -> None:
    """Claude Code takes the note as every CLI without a server does: the next iteration's prompt, first thing."""
    project = git_project
    write_two_file_plan(project)
    with FakeAnthropic() as anthropic:
        claude = AgentLoop("claude", find_cli("claude"), claude_env(anthropic.port, agent_home))
        write_file = "Write"
        anthropic.add_turns(
            hold(HELD_S, then=call("Bash", {"command": "echo a > a.txt", "description": "a"})),
            call(write_file, {"file_path": str(project / LOOP_DIR / "progress.json"),
                              "content": progress_report(1, "stage-1")}),
            say("a made"), marker=iteration_marker(1))
        seen = {**json.loads(progress_report(2, "stage-2")), "notesSeen": ["n1"]}
        anthropic.add_turns(
            call("Bash", {"command": "echo b > b.txt", "description": "b"}),
            call(write_file, {"file_path": str(project / LOOP_DIR / "progress.json"), "content": json.dumps(seen)}),
            say("b made"), marker=iteration_marker(2))
        command = claude.command(project, ("--goal", "plan.md", "-n", "3", "--dashboard", "--port", "0"))
        process = subprocess.Popen(command, cwd=project, env=claude.environment(), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert anthropic.wait_for_hold(START_TIMEOUT_S), "Claude Code never reached the held reply"
            _with_api(project)
            sent = _send_note(claude, project, NOTE)
            assert sent.returncode == 0, sent.stdout + sent.stderr
            _wait_for_event(project, "note-queued")
            anthropic.release()
            out, err = _finish(process)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=30)
        assert process.returncode == 0, out[-3000:] + err[-2000:]
        first = anthropic.requests_with(iteration_marker(2))[0]
        prompt = anthropic.prompt_text(first.body)
        assert prompt.lstrip('"').startswith("## Notes from the operator") and NOTE in prompt
        assert not any(NOTE in anthropic.prompt_text(r.body) for r in anthropic.requests_with(iteration_marker(1)))
    [state_file] = (project / LOOP_DIR / "runs").glob("*/state.json")
    [note] = json.loads(state_file.read_text(encoding="utf-8"))["notes"]
    assert (note["status"], note["deliveredVia"], note["iteration"]) == ("acknowledged", "prompt", 2)
