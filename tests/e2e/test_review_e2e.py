"""The review loop with the real `kilo` CLI against the scripted provider.

- `--review` with a reviewer that blocks once: the stage is un-advanced, the finding is in the
  next prompt, then the review passes and the stage is ticked.
- `--review-wave`: code, test and security reviewers run as three parallel kilo sessions (their
  time windows overlap in the events); the security finding reaches the gate, which is answered
  through `POST /api/review/gate` on the dashboard; the fix pass runs and only the security
  reviewer rechecks.

The reviewer sessions are told apart from the implementer's by their prompt's first line
(`# Reviewer — goal: …`, `# Security reviewer — goal: …`), which selects their script.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.support import dashboard_link

from .conftest import LOOP_DIR, Loop, LoopRun, iteration_marker, write, write_progress
from .fake_provider import FakeProvider, calls, hold, say

pytestmark = pytest.mark.e2e

PLAN = "# Feature\n\n- [ ] Add feature.txt :: verify: test -f feature.txt :: acceptance: feature.txt says ok\n"
BUG = {"severity": "high", "file": "feature.txt", "line": 1, "title": "feature.txt says wrong, not ok"}
LEAK = {"severity": "medium", "file": "feature.txt", "line": 1, "title": "TOKEN-LEAK printed in feature.txt"}


def verdict(project: Path, name: str, value: str, *findings: dict[str, Any]) -> Any:
    body = {"verdict": value, "findings": list(findings), "questions": []}
    return write(project / LOOP_DIR / name, json.dumps(body))


def implement(provider: FakeProvider, project: Path, iteration: int, content: str) -> None:
    provider.add_turns(
        calls(write(project / "feature.txt", content), write_progress(project, iteration, "stage-1", "done")),
        say(f"iteration {iteration} done"),
        marker=iteration_marker(iteration),
    )


def rounds(run: LoopRun) -> list[str]:
    return [e["data"]["step"] for e in run.events("review-round")]


def test_kilo_review_blocks_once_then_passes(loop: Loop, fake_provider: FakeProvider, git_project: Path) -> None:
    project = git_project
    (project / "plan.md").write_text(PLAN, encoding="utf-8")
    implement(fake_provider, project, 1, "wrong\n")
    implement(fake_provider, project, 2, "ok\n")
    fake_provider.add_turns(
        verdict(project, "review.json", "block", BUG), say("blocked"),
        verdict(project, "review.json", "pass"), say("passes now"),
        marker="# Reviewer — goal:",
    )

    run = loop.run("kilo", project, "--goal", "plan.md", "--review", "-n", "3")

    assert run.returncode == 0, run.describe()
    assert rounds(run) == ["retry", "clean"], run.describe()
    first = run.report(1)
    assert first["review"]["verdict"] == "block" and first["review"]["roles"][0]["tokens"] > 0
    assert [e["iteration"] for e in run.events("stage-done")] == [2]  # un-advanced in iteration 1
    assert "## Review findings to fix" in run.prompt(2) and "feature.txt says wrong, not ok" in run.prompt(2)
    review_1 = (run.run_dir / "iterations" / "01-review-prompt.md").read_text(encoding="utf-8")
    assert "+wrong" in review_1 and "feature.txt says ok" in review_1 and "test -f feature.txt" in review_1
    assert "Your earlier findings" in (run.run_dir / "iterations" / "02-review-prompt.md").read_text()
    assert "- [x] Add feature.txt" in (project / "plan.md").read_text(encoding="utf-8")
    state = run.state()
    reviewer_tokens = sum(i["review"]["roles"][0]["tokens"] for i in state["iterations"])
    assert state["totals"]["tokens"] == sum(i["tokens"] for i in state["iterations"]) + reviewer_tokens


def _start_with_dashboard(loop: Loop, project: Path, log: Path, *args: str) -> tuple[subprocess.Popen[bytes],
                                                                                     httpx.Client]:
    """The loop with its dashboard on a free port; a client that carries the dashboard's token."""
    env = loop.environment("kilo")
    command = [*Loop.command(project, args)]
    command.remove("--no-dashboard")
    with log.open("wb") as sink:
        process = subprocess.Popen([*command, "-p", "0"], cwd=project, env=env, stdin=subprocess.DEVNULL,
                                   stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        link = dashboard_link(log.read_text(errors="replace"))
        if link:
            return process, httpx.Client(base_url=link[0], headers={"Authorization": f"Bearer {link[1]}"},
                                         timeout=10)
        time.sleep(0.1)
    process.kill()
    raise AssertionError(log.read_text(errors="replace"))


def _wait_for_gate(client: httpx.Client, process: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        state = client.get("/api/state").json()
        if state.get("reviewGate") and state.get("pendingQuestions"):
            return dict(state["reviewGate"])
        time.sleep(0.5)
    raise AssertionError("no review gate:\n" + log.read_text(errors="replace")[-6000:])


def test_kilo_review_wave_parallel_sessions_and_a_gate_answered_from_the_dashboard(
    loop: Loop, fake_provider: FakeProvider, git_project: Path, tmp_path: Path
) -> None:
    project = git_project
    (project / "plan.md").write_text(PLAN, encoding="utf-8")
    implement(fake_provider, project, 1, "ok TOKEN\n")
    implement(fake_provider, project, 2, "ok\n")
    # Each reviewer holds its first reply a moment, so the three sessions are surely open together.
    for role, first in (("Code", verdict(project, "review-code.json", "pass")),
                        ("Test", verdict(project, "review-test.json", "pass")),
                        ("Security", verdict(project, "review-security.json", "pass", LEAK))):
        fake_provider.add_turns(hold(2.0, first), say(f"{role} review written"), marker=f"# {role} reviewer — goal:")
    for role in ("code", "security"):  # the recheck: the row's reviewer, and code for the change request
        fake_provider.add_turns(verdict(project, f"review-{role}.json", "pass"), say("clean now"),
                                marker=f"# {role.capitalize()} reviewer — goal:")

    log = tmp_path / "loop.log"
    process, client = _start_with_dashboard(loop, project, log, "--goal", "plan.md", "--review-wave", "-n", "3")
    try:
        gate = _wait_for_gate(client, process, log)
        (row,) = gate["rows"]
        assert row["role"] == "security" and "TOKEN-LEAK" in row["title"]
        refused = client.post("/api/review/gate", json={"marks": {"nope": "mitigate"}})
        assert refused.status_code == 400 and "unknown finding" in refused.json()["error"]
        answered = client.post("/api/review/gate",
                               json={"marks": {row["id"]: "mitigate"}, "changeRequest": "print no token"})
        assert answered.status_code == 200, answered.text
        assert process.wait(300) == 0, log.read_text(errors="replace")[-6000:]
    finally:
        client.close()
        if process.poll() is None:
            process.kill()
            process.wait(10)
    run = LoopRun([], 0, log.read_text(errors="replace"), "", 0.0, project)
    started = {e["data"]["role"]: e["data"]["started_at"] for e in run.events("review-started")
               if e.get("iteration") == 1}
    finished = {e["data"]["role"]: e["data"]["finished_at"] for e in run.events("review-finished")
                if e.get("iteration") == 1}
    assert set(started) == {"code", "test", "security"}
    assert max(started.values()) < min(finished.values()), (started, finished)  # the windows overlap
    assert "print no token" in run.prompt(2) and "TOKEN-LEAK" in run.prompt(2)
    rechecked = [e["data"]["role"] for e in run.events("review-started") if e.get("iteration") == 2]
    assert rechecked == ["security", "code"] or rechecked == ["code", "security"]
    assert "- [x] Add feature.txt" in (project / "plan.md").read_text(encoding="utf-8")
