"""Run the real CLI (python -m kilo_loop) against a scripted fake `kilo` in a temp git repo."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
_ids = itertools.count(1)


def text(value: str) -> dict[str, Any]:
    return {"event": {"type": "text", "part": {"id": f"prt_{next(_ids)}", "type": "text", "text": value}}}


def bash(command: str, status: str = "completed", error: str = "") -> dict[str, Any]:
    state: dict[str, Any] = {"status": status, "input": {"command": command, "description": "run"}, "output": ""}
    if error:
        state["error"] = error
    return {"event": {"type": "tool_use", "part": {"id": f"prt_{next(_ids)}", "tool": "bash",
                                                      "callID": f"call_{next(_ids)}", "state": state}}}


def step(total: int = 1000, cost: float = 0.01) -> dict[str, Any]:
    tokens = {"total": total, "input": total - 100, "output": 100, "reasoning": 0, "cache": {"read": 0, "write": 0}}
    return {"event": {"type": "step_finish", "part": {"id": f"prt_{next(_ids)}", "reason": "stop", "cost": cost,
                                                         "tokens": tokens}}}


def error(message: str, name: str = "APIError") -> dict[str, Any]:
    return {"event": {"type": "error", "error": {"name": name, "data": {"message": message}}}}


def progress(stage: str, status: str = "done", percent: int = 50, **extra: Any) -> dict[str, Any]:
    body = {"iteration": 1, "topic": f"work on {stage}", "stageId": stage, "stageStatus": status,
            "percent": percent, "nextStage": "", "summary": f"did {stage}", "filesChanged": [],
            "needsInput": False, "questions": []}
    body.update(extra)
    return {"progress": body}


def done_iteration(stage: str, file: str | None = None, percent: int = 50) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [text(f"working on {stage}")]
    if file:
        steps.append({"write": file, "text": f"content for {stage}\n"})
    return [*steps, progress(stage, "done", percent), step()]


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for args in (["init", "-q"], ["config", "user.email", "t@example.invalid"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    (path / "README.md").write_text("hello\n")
    subprocess.run(["git", "add", "."], cwd=path, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=path, check=True)
    return path


@dataclass
class LoopRun:
    proc: subprocess.CompletedProcess[str]
    project: Path
    log: Path

    @property
    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    @property
    def run_dir(self) -> Path:
        runs = sorted((self.project / ".kilocode-loop" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
        return runs[-1]

    def state(self) -> dict[str, Any]:
        return json.loads((self.run_dir / "state.json").read_text())

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.run_dir / "events.jsonl").read_text().splitlines() if line]

    def prompt(self, iteration: int) -> str:
        return (self.run_dir / "iterations" / f"{iteration:02d}-prompt.md").read_text()


class FakeKilo:
    def __init__(self, tmp: Path) -> None:
        self.bin_dir = tmp / "bin"
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        self.binary = self.bin_dir / "kilo"
        self.binary.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE_AGENT} \"$@\"\n")
        self.binary.chmod(0o755)
        self.scenario = tmp / "scenario.json"
        self.log = tmp / "agent-calls.jsonl"

    def env(self, scenario: list[list[dict[str, Any]]]) -> dict[str, str]:
        self.scenario.write_text(json.dumps(scenario))
        env = {k: v for k, v in os.environ.items() if not k.startswith("KILO_LOOP_")}
        env.update({
            "FAKE_AGENT_SCENARIO": str(self.scenario), "FAKE_AGENT_LOG": str(self.log),
            "KILO_BIN": str(self.binary),
            "KILO_LOOP_TRANSPORT": "run",  # the fake replays `kilo run --format json`; it has no `serve`
            "KILO_LOOP_USAGE_DB": "false",  # nor a kilo.db of its own
            "KILO_LOOP_PREFLIGHT": "false",  # nor a `run --help`: every invocation is a scripted session
            # The fake logs its calls outside the project, which the jail forbids; the jail has its own
            # tests (tests/unit/test_sandbox_policy.py, tests/e2e/test_jail_e2e.py).
            "KILO_LOOP_SANDBOX": "off",
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p), "NO_COLOR": "1",
            "COLUMNS": "200",
        })
        return env


def run_loop(fake: FakeKilo, project: Path, scenario: list[list[dict[str, Any]]], *args: str,
             stdin: str | None = None, timeout: float = 90, env: dict[str, str] | None = None) -> LoopRun:
    full_env = fake.env(scenario)
    full_env.update(env or {})
    command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard", *args]
    proc = subprocess.run(command, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, text=True, env=full_env, timeout=timeout, cwd=project)
    return LoopRun(proc, project, fake.log)
