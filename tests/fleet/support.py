"""Shared helpers for the parallel and fleet tests: a temporary git repo, goals whose stages
script the goal agent, and the agent wrapper binary."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.git import git

REPO = Path(__file__).resolve().parents[2]
GOAL_AGENT = Path(__file__).resolve().parent / "goal_agent.py"


def init_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.invalid")
    git(path, "config", "user.name", "t")
    for name, text in (files or {"README.md": "hello\n"}).items():
        (path / name).write_text(text)
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "init")
    return path


def agent_binary(tmp: Path) -> Path:
    binary = tmp / "bin" / "kilo"
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_text(f"#!/bin/sh\nexec {sys.executable} {GOAL_AGENT} \"$@\"\n")
    binary.chmod(0o755)
    return binary


def stage(stage_id: str, script: dict[str, Any]) -> dict[str, Any]:
    return {"id": stage_id, "title": f"{stage_id} work", "details": "agent: " + json.dumps(script)}


def goal(title: str, *stages: dict[str, Any]) -> dict[str, Any]:
    return {"title": title, "stages": list(stages)}


def write_goal(path: Path, value: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))
    return path


def loop_env(binary: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILO_LOOP_")}
    env.update({
        "KILO_BIN": str(binary), "NO_COLOR": "1", "COLUMNS": "200",
        "KILO_LOOP_USAGE_DB": "false",  # the fake kilo keeps no kilo.db (and `kilo db path` would be a session to it)
        "KILO_LOOP_PREFLIGHT": "false",  # nor a `run --help` (it would be a session too)
        "KILO_LOOP_SANDBOX": "off",  # the fakes log outside the project; the jail is tested in tests/e2e
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p),
    })
    env.update(extra)
    return env


def start_parallel(project: Path, tmp: Path, goals: list[Path], *flags: str) -> subprocess.Popen[str]:
    """`kilo-loop --goal … --parallel N` in the background, its output on a pipe."""
    argv = [sys.executable, "-m", "kilo_loop", *(arg for g in goals for arg in ("--goal", str(g))), *flags]
    return subprocess.Popen(argv, cwd=project, env=loop_env(agent_binary(tmp)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)


def dashboard_url(proc: subprocess.Popen[str]) -> str:
    """The many-runs dashboard's address, as the parent prints it."""
    assert proc.stdout is not None
    for line in proc.stdout:
        match = re.search(r"Dashboard (http://\S+)", line)
        if match:
            return match.group(1)
    raise AssertionError("the dashboard URL was never printed")
