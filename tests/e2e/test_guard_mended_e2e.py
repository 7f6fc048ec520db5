"""The mended guard end to end (issue 23, item 6): the real kilo CLI under `--transport serve`, scripted
by the fake provider, through `python -m kilo_loop`. The agent writes a Makefile with its own write tool
and then runs `make`; it also splits a word with a backslash-newline. The guard reads the Makefile and
joins the line before judging, so both are refused before they run.

The test data is harmless even if it ran: `git push` in a repository with no remote, and a marker file
the recipe would touch first, whose absence proves the recipe never ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Loop, bash, iteration_marker, write, write_progress
from .fake_provider import FakeProvider, say

pytestmark = pytest.mark.e2e

MAKEFILE = "all:\n\techo ok\npublish:\n\ttouch ran-make.txt\n\tgit push origin main\n"
SPLIT = "git pu\\\nsh origin main"


def test_serve_refuses_a_recipe_on_disk_and_a_split_word_before_they_run(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    fake_provider.add_turns(
        write(project / "Makefile", MAKEFILE),
        bash("make publish"),
        bash(SPLIT),
        bash("make"),  # the harmless default target runs
        write_progress(project, 1, "stage-1", "done", percent=100),
        say("Done, without publishing."),
        marker=iteration_marker(1),
    )

    run = loop.run("kilo", project, "--goal-text", "Add a Makefile", "-n", "2", "--transport", "serve",
                   inline=True)

    assert run.returncode == 0, run.describe()
    assert not (project / "ran-make.txt").exists()
    statuses = [(e["data"]["input"].get("command"), e["data"]["status"]) for e in run.events("tool")
                if e["data"]["tool"] == "bash"]
    assert statuses == [("make publish", "error"), (SPLIT, "error"), ("make", "completed")], run.describe()
    refused = [e["data"] for e in run.events("guard")]
    assert [g.get("before_execution") for g in refused] == [True, True], run.describe()
    messages = " ".join(str(e["message"]) for e in run.events("guard"))
    assert "in the script Makefile" in messages and "git push" in messages, run.describe()
    assert run.state()["status"] == "done", run.describe()
