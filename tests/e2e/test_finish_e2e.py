"""From issue to pull request with the real `kilo` (warm server) and the scripted model: the goal is
read from a scripted GitHub issue, the agent's own `git commit` is refused, and the loop commits each
finished stage on the run's branch, pushes it to a local bare remote, opens the pull request that
closes the issue, and comments on the issue as each stage lands."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.forge_server import scripted_github
from tests.support.git import git

from .conftest import Loop, bash, iteration_marker, write, write_progress
from .fake_provider import FakeProvider, calls, say

pytestmark = pytest.mark.e2e

TOKEN = "ghp_" + "e2eF1n1shT0k3nN0tR3aL" + "y" * 15
ISSUE = {"title": "Two small files", "state": "open",
         "body": "Please add two files.\n\n- [ ] Create alpha.txt\n- [ ] Create beta.txt\n\nverify: test -f alpha.txt\n"}


def test_an_issue_becomes_a_pull_request_with_one_loop_commit_per_stage(
    loop: Loop, fake_provider: FakeProvider, git_project: Path, tmp_path: Path
) -> None:
    project = git_project
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    git(project, "remote", "add", "origin", str(origin))
    git(project, "push", "-q", "origin", "main")
    fake_provider.add_turns(
        bash("git add -A && git commit -qm sneaky"),  # the agent may not commit: refused, it goes on
        calls(write(project / "alpha.txt", "alpha\n"), write_progress(project, 1, "stage-1", "done")),
        say("Stage one is done."),
        marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        calls(write(project / "beta.txt", "beta\n"), write_progress(project, 2, "stage-2", "done")),
        say("Stage two is done."),
        marker=iteration_marker(2),
    )
    with scripted_github(issues={12: dict(ISSUE)}) as forge:
        run = loop.run("kilo", project, "--goal", "github:acme/app#12", "-n", "3", "--finish", "pr",
                       "--issue-comments", "--forge", "github", "--forge-repo", "acme/app", "--forge-url", forge.url,
                       extra_env={"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": forge.url})

    assert run.returncode == 0, run.describe()
    assert run.state()["status"] == "done", run.describe()
    refused = run.events("guard") + run.events("guard-pre")  # under serve: denied before it ran
    assert any("git commit" in e["message"] for e in refused), run.describe()
    branch = git(project, "symbolic-ref", "--short", "HEAD").strip()
    assert branch.startswith("kilo-loop/two-small-files-")
    subjects = git(origin, "log", "--format=%s", f"main..{branch}").split("\n")
    assert [s for s in subjects if s] == ["Create beta.txt", "Create alpha.txt"]  # the loop's, not "sneaky"
    assert git(project, "show", "--name-only", "--format=", branch).split() == ["beta.txt"]
    assert len(forge.pulls) == 1 and forge.pulls[0]["draft"] is False, run.describe()
    body = forge.pulls[0]["body"]
    assert "Closes #12" in body and "[x] **Create alpha.txt**" in body and "`test -f alpha.txt` passed" in body
    assert [number for number, _text in forge.comments] == [12, 12]
    assert TOKEN not in run.stdout + run.stderr
    assert all(TOKEN not in path.read_text(errors="replace")
               for path in (project / ".kilocode-loop").rglob("*") if path.is_file())
