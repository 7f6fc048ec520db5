"""Running the loop's real entry point against a non-kilo agent CLI (Claude Code, Codex, Gemini)
and a scripted model server: the environment, the command, the finished run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import run_in_group

from .conftest import LOOP_TIMEOUT_S, REPO_ROOT, LoopRun


@dataclass
class AgentLoop:
    runtime: str
    binary: Path
    env: Mapping[str, str]  # what the CLI needs to reach the scripted server

    def environment(self, extra_env: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {name: os.environ[name] for name in ("PATH", "TMPDIR", "LANG") if name in os.environ}
        env.setdefault("LANG", "C.UTF-8")
        env.update(self.env)
        env[f"{self.runtime.upper()}_BIN"] = str(self.binary)
        env["PYTHONPATH"] = str(REPO_ROOT / "src")
        env["COLUMNS"] = "500"
        env.update(extra_env or {})
        return env

    def command(self, project: Path, args: tuple[str, ...]) -> list[str]:
        return [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard",
                "--runtime", self.runtime, *args]

    def run(self, project: Path, *args: str, extra_env: Mapping[str, str] | None = None) -> LoopRun:
        command = self.command(project, args)
        started = time.monotonic()
        done = run_in_group(command, cwd=project, env=self.environment(extra_env), stdin=subprocess.DEVNULL,
                            timeout=LOOP_TIMEOUT_S)
        return LoopRun(command, done.returncode, done.stdout, done.stderr, time.monotonic() - started, project)


def commit_count(project: Path) -> int:
    out = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=project, check=True,
                         capture_output=True, text=True)
    return int(out.stdout)


# --------------------------------------------------------------------------- the refusal scenario
# The destructive commands the scripted model asks for are data: the agent CLI receives them as a
# tool call, and the guard must refuse them before they run. The one that would delete something
# targets a canary directory inside the test's temporary directory, matched by a run pattern.
CANARY_NAME = "kl-canary"
CANARY_GUARD_ENV = {"KILO_LOOP_GUARD_DENY": json.dumps([rf"rm\s+-rf\s+\S*{CANARY_NAME}"])}
COMMIT_ATTEMPT = "printf x > staged.txt && git add staged.txt && git commit -m sneaky"


@dataclass(frozen=True)
class Canary:
    directory: Path
    commits: int

    @property
    def delete_command(self) -> str:
        return f"rm -rf {self.directory}"


def plant_canary(parent: Path, project: Path) -> Canary:
    directory = parent / CANARY_NAME
    directory.mkdir()
    (directory / "canary.txt").write_text("still here\n", encoding="utf-8")
    return Canary(directory, commit_count(project))


def assert_nothing_destructive_ran(run: LoopRun, canary: Canary) -> None:
    """The canary survives, no commit was made, nothing of the commit attempt ran, the session went on."""
    assert run.returncode == 0, run.describe()
    assert (canary.directory / "canary.txt").read_text(encoding="utf-8") == "still here\n"
    assert commit_count(run.project) == canary.commits
    assert not (run.project / "staged.txt").exists()  # refused before any of it ran
    assert (run.project / "fine.txt").is_file()  # the session went on after the refusals


TWO_FILE_PLAN = "# Two files\n\n- [ ] Create a.txt :: verify: test -f a.txt\n- [ ] Create b.txt :: verify: test -f b.txt\n"


def write_two_file_plan(project: Path) -> None:
    (project / "plan.md").write_text(TWO_FILE_PLAN, encoding="utf-8")


def progress_report(iteration: int, stage_id: str, status: str = "done") -> str:
    """The progress.json a scripted agent writes at the end of an iteration."""
    return json.dumps({"iteration": iteration, "topic": f"iteration {iteration}", "stageId": stage_id,
                       "stageStatus": status, "summary": f"scripted iteration {iteration}",
                       "needsInput": False, "questions": []})
