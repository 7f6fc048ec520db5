"""Shared helpers for the parallel and fleet tests: a temporary git repo, goals whose stages
script the goal agent, and the agent wrapper binary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
GOAL_AGENT = Path(__file__).resolve().parent / "goal_agent.py"


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, text=True).stdout


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
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p),
    })
    env.update(extra)
    return env
