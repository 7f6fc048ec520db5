"""kill -9 at random moments, then `--resume last`: nothing is lost. At the kill, the snapshot
plus the events after it is exactly the state the events describe (blocked stages, verify
feedback, guard note, answers included); the resumed run finishes and its state.json is again
what replaying events.jsonl gives. 20 kills, 20 finished runs, with the scripted fake kilo."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kilo_loop.run.events import from_wire
from kilo_loop.run.layout import RunLayout
from kilo_loop.run.reducer import replay
from kilo_loop.run.store import load_for_resume, read_events
from tests.integration.loop_harness import FakeKilo, init_repo, step, text

TRIALS = 20
QUICK_TRIALS = 4  # the edit-test loop kills at 4 moments; the full suite at all 20
PLAN = ("# Crash plan\n\n- [ ] First stage\n- [ ] Second stage :: verify: test -f gate.txt\n"
        "- [ ] Third stage\n- [ ] Fourth stage\n")


def progress_any(done: bool = True, **extra: Any) -> dict[str, Any]:
    body = {"iteration": 1, "topic": "work", "stageId": None, "stageStatus": "done" if done else "in_progress",
            "percent": 50, "nextStage": "", "summary": "did it", "filesChanged": [], "needsInput": False,
            "questions": []}
    body.update(extra)
    return {"progress": body}


def scenario() -> list[list[dict[str, Any]]]:
    ask = progress_any(False, needsInput=True, questions=[{"question": "Which database?", "options": ["a", "b"]}])
    turns: list[list[dict[str, Any]]] = [
        [text("asking"), {"write": "q.txt", "text": "q\n"}, {"sleep": 0.2}, ask, step()],
        [text("no gate yet"), {"write": "one.txt", "text": "1\n"}, {"sleep": 0.2}, progress_any(), step()],
        [text("claims stage 2 without the gate"), {"write": "two.txt", "text": "2\n"}, {"sleep": 0.2},
         progress_any(), step()],
    ]
    for n in range(8):  # from here on the agent leaves the gate file, so verify passes
        turns.append([text(f"turn {n}"), {"write": f"w{n}.txt", "text": f"{n}\n"}, {"write": "gate.txt", "text": "ok\n"},
                      {"sleep": 0.2}, progress_any(), step()])
    return turns


def launch(fake: FakeKilo, project: Path, *args: str, stdin: bytes | None) -> subprocess.Popen[bytes]:
    env = fake.env(scenario())
    command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard", *args]
    proc = subprocess.Popen(command, cwd=project, env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if stdin is not None and proc.stdin is not None:
        proc.stdin.write(stdin)
        proc.stdin.close()
    return proc


def replayed(run: RunLayout) -> dict[str, Any]:
    state = replay([from_wire(wire) for wire in read_events(run.events)])
    assert state is not None
    return state.snapshot()


@pytest.mark.parametrize(
    "trial", [trial if trial < QUICK_TRIALS else pytest.param(trial, marks=pytest.mark.slow) for trial in range(TRIALS)]
)
def test_kill_9_then_resume_loses_nothing(tmp_path: Path, trial: int) -> None:
    rng = random.Random(trial)
    project = init_repo(tmp_path / "repo")
    (project / "plan.md").write_text(PLAN)
    fake = FakeKilo(tmp_path / "fake")
    proc = launch(fake, project, "--goal", "plan.md", "-n", "12", "--run-id", "crash", stdin=b"2\n")
    run = RunLayout(project / ".kilocode-loop" / "runs" / "crash")
    deadline = time.monotonic() + 60
    while not run.state.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(rng.uniform(0.0, 4.0))  # somewhere in the run: mid-session, mid-verify, mid-question…
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert run.state.exists()
    # Right after the kill: snapshot + replayed tail == the whole story told by events.jsonl.
    assert load_for_resume(run).snapshot() == replayed(run)
    before = load_for_resume(run)
    resumed = launch(fake, project, "--goal", "plan.md", "-n", "12", "--resume", "last", stdin=None)
    assert resumed.wait(120) == 0
    after = json.loads(run.state.read_text())
    assert after["status"] == "done"
    assert after["completedStages"] == ["stage-1", "stage-2", "stage-3", "stage-4"]
    assert set(before.completed_stages) <= set(after["completedStages"])
    assert after == replayed(run)
    answers = project / ".kilocode-loop" / "answers.json"
    saved_answers = json.loads(answers.read_text())["answers"] if answers.exists() else []
    assert after["answers"] == len(saved_answers)
    if before.verify_feedback:
        prompts = sorted((run.dir / "iterations").glob("*-prompt.md"))
        first_after = next(p for p in prompts if int(p.name[:2]) > before.iteration)
        assert "## Verify failed last iteration" in first_after.read_text()  # the feedback survived the kill
