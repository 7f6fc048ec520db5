"""The first five minutes, for real: `kilo-loop init --runtime kilo --yes` in a fresh repository with
the pinned kilo, then the command it printed, against the scripted model: the run ends `done`."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Loop, iteration_marker, write, write_progress
from .fake_provider import FakeProvider, calls, say

# Three real kilo sessions plus the server start: over a minute, more on a busy machine.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def test_init_then_the_printed_command_runs_to_done(loop: Loop, fake_provider: FakeProvider, git_project: Path) -> None:
    project = git_project
    env = loop.environment("kilo")
    init = subprocess.run([sys.executable, "-m", "kilo_loop", "init", "--runtime", "kilo", "--plan", "Create alpha.txt",
                           "--no-dashboard", "--yes"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, check=False)
    assert init.returncode == 0, init.stdout + init.stderr
    assert "✓ kilo is ready: KILO_CONFIG is set" in init.stdout
    printed = [line.strip() for line in init.stdout.splitlines() if line.strip().startswith("kilo-loop --goal")]
    assert printed == ["kilo-loop --goal .kilo/plans/create-alpha-txt.md"], init.stdout

    for iteration in (1, 2, 3):  # the plan template's three stages, one an iteration
        work = [write(project / "alpha.txt", "alpha\n")] if iteration == 2 else []
        fake_provider.add_turns(
            calls(*work, write_progress(project, iteration, f"stage-{iteration}", "done", percent=iteration * 33)),
            say(f"Stage {iteration} is done."),
            marker=iteration_marker(iteration),
        )
    run = loop.run("kilo", project, *shlex.split(printed[0])[1:])

    assert run.returncode == 0, run.describe()
    assert run.state()["status"] == "done", run.describe()
    assert (project / "alpha.txt").read_text() == "alpha\n"
    assert "- [ ]" not in (project / ".kilo" / "plans" / "create-alpha-txt.md").read_text()
