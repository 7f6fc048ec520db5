"""--finish: the loop commits each finished stage — exactly its files, with its receipt and trailers —
on the user's branch or on a branch of the run's own; the user's work in progress, the goal file and the
loop's own files stay out. Through the real entry point with a scripted stand-in for `kilo run`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kilo_loop.finish.commits import FinishError, commit_paths, committed_stages, push_branch
from tests.fleet.support import agent_binary, goal, init_repo, loop_env, stage, write_goal
from tests.support.forge_server import scripted_forge, scripted_github
from tests.support.git import git


def run_loop(project: Path, tmp: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "kilo_loop", "--goal", "plans/work.json", "-n", "4", "--no-dashboard",
            "--no-confirm", "--hitl", "off", *flags]
    return subprocess.run(argv, cwd=project, env=loop_env(agent_binary(tmp)), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, check=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo", {"README.md": "hello\n", "notes.txt": "mine\n"})
    first = stage("s1", {"write": {"src/a.py": "A = 1\n"}})
    second = stage("s2", {"write": {"src/b.py": "B = 2\n"}, "append": {"notes.txt": "agent\n"}})
    first["verify"], second["verify"] = "test -f src/a.py", "test -f src/b.py"
    write_goal(root / "plans" / "work.json", goal("Add the two modules", first, second))
    git(root, "add", "plans")
    git(root, "commit", "-q", "-m", "the plan")
    (root / "notes.txt").write_text("mine\nstill typing\n")  # the user's work in progress, not the stage's
    return root


def files_of(project: Path, commit: str) -> list[str]:
    return git(project, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).split()


def test_finish_branch_commits_each_stage_on_the_runs_own_branch(project: Path, tmp_path: Path) -> None:
    main_before = git(project, "rev-parse", "main").strip()
    done = run_loop(project, tmp_path, "--finish", "branch")
    assert done.returncode == 0, done.stdout + done.stderr

    branch = git(project, "symbolic-ref", "--short", "HEAD").strip()
    assert branch.startswith("kilo-loop/add-the-two-modules-"), branch
    assert git(project, "rev-parse", "main").strip() == main_before  # the user's branch is untouched
    commits = git(project, "rev-list", "--reverse", f"{main_before}..HEAD").split()
    assert [git(project, "log", "-1", "--format=%s", c).strip() for c in commits] == ["s1 work", "s2 work"]
    assert [files_of(project, c) for c in commits] == [["src/a.py"], ["src/b.py"]]

    body = git(project, "log", "-1", "--format=%B", commits[1])
    run_id = branch.rsplit("-", 3)[-3:]
    assert "Verify: `test -f src/b.py` passed" in body and "Iterations: 1" in body
    assert f"Kilo-Loop-Run: {'-'.join(run_id)}" in body and "Kilo-Loop-Stage: s2" in body
    # the work in progress (also touched by the agent) stays uncommitted, and the loop says so
    assert git(project, "status", "--porcelain", "--", "notes.txt").startswith(" M")
    assert "left out (dirty before the run): notes.txt" in done.stdout
    assert git(project, "status", "--porcelain", "--", "src").strip() == ""  # committed files read clean


def test_a_resumed_finisher_sees_the_stages_already_committed(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "repo")
    (project / "a.txt").write_text("a\n")
    commit_paths(project, ["a.txt"], "s1 work\n\nKilo-Loop-Run: r1\nKilo-Loop-Stage: s1\n", {})
    (project / "b.txt").write_text("b\n")
    commit_paths(project, ["b.txt"], "other run\n\nKilo-Loop-Run: r2\nKilo-Loop-Stage: s2\n", {})
    assert committed_stages(project, "r1") == {"s1"}
    assert committed_stages(project, "r2") == {"s2"}
    assert committed_stages(project, "r3") == set()


def test_revert_to_before_a_committed_stage_drops_its_commits_only_with_yes(project: Path, tmp_path: Path) -> None:
    base = git(project, "rev-parse", "HEAD").strip()
    done = run_loop(project, tmp_path, "--finish", "commit")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(git(project, "rev-list", f"{base}..HEAD").split()) == 2
    revert = [sys.executable, "-m", "kilo_loop", "revert", "--run", "last", "--before", "1"]
    env = loop_env(agent_binary(tmp_path))

    refused = subprocess.run(revert, cwd=project, env=env, capture_output=True, text=True, check=False)
    assert refused.returncode != 0 and "drops 2 commit(s)" in refused.stderr and "s2 work" in refused.stderr
    assert len(git(project, "rev-list", f"{base}..HEAD").split()) == 2  # nothing moved

    reverted = subprocess.run([*revert, "--yes"], cwd=project, env=env, capture_output=True, text=True, check=False)
    assert reverted.returncode == 0, reverted.stdout + reverted.stderr
    assert "dropping 2 stage commit(s)" in reverted.stdout
    assert git(project, "rev-parse", "HEAD").strip() == base
    assert not (project / "src").exists()
    assert (project / "notes.txt").read_text() == "mine\nstill typing\n"  # the work in progress as it was
    assert git(project, "status", "--porcelain", "--untracked-files=no").strip() == "M notes.txt"


TOKEN = "ghp_" + "k1L0oPt3stT0k3nN0tR3aL" + "x" * 14  # looks like a GitHub token, so redaction must hide it


def with_origin(project: Path, tmp_path: Path) -> Path:
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    git(project, "remote", "add", "origin", str(origin))
    git(project, "push", "-q", "origin", "main")
    return origin


ISSUE = {"title": "Add the two modules", "state": "open", "body": (
    "Two small modules, please.\n\n"
    "- [ ] Add module A\n  agent: {\"write\": {\"src/a.py\": \"A = 1\\n\"}}\n"
    "- [ ] Add module B\n  agent: {\"write\": {\"src/b.py\": \"B = 2\\n\"}, \"append\": {\"notes.txt\": \"x\\n\"}}\n\n"
    "verify: test -f src/a.py\n")}


def run_pr(project: Path, tmp_path: Path, forge_url: str, *flags: str, token: str = TOKEN,
           goal_ref: str = "plans/work.json") -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "kilo_loop", "--goal", goal_ref, "--no-dashboard", "--no-confirm",
            "--hitl", "off", "--finish", "pr", "--forge", "github", "--forge-repo", "acme/app",
            "--forge-url", forge_url, *flags]
    env = loop_env(agent_binary(tmp_path), GITHUB_TOKEN=token, GITHUB_API_URL=forge_url)
    return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=120, check=False)


def test_an_issue_becomes_a_draft_pull_request_then_the_resume_makes_it_ready(project: Path, tmp_path: Path) -> None:
    """`--goal github:acme/app#12 --finish pr --issue-comments`: the issue's tasks are the stages; a run that
    ends early opens a draft saying what is left; the resume (reading the saved plan, not the issue again)
    finishes, updates the pull request and marks it ready."""
    origin = with_origin(project, tmp_path)
    with scripted_github(issues={12: dict(ISSUE)}) as forge:
        flags = ("--issue-comments",)
        first = run_pr(project, tmp_path, forge.url, "-n", "1", *flags, goal_ref="github:acme/app#12")
        assert len(forge.pulls) == 1 and forge.pulls[0]["draft"] is True, first.stdout + first.stderr
        pull = forge.pulls[0]
        assert pull["base"]["ref"] == "main" and pull["head"]["ref"].startswith("kilo-loop/add-the-two-modules-")
        assert "Closes #12" in pull["body"] and "## What is left" in pull["body"] and "Add module B" in pull["body"]
        branch = pull["head"]["ref"]
        assert git(origin, "log", "-1", "--format=%s", branch).strip() == "Add module A"
        assert [number for number, _text in forge.comments] == [12] and "Add module A" in forge.comments[0][1]
        assert (project / ".kilocode-loop" / "goals" / "issue-github-acme-app-12.md").is_file()

        reads = len([r for r in forge.requests if r["method"] == "GET" and r["path"].endswith("/issues/12")])
        run_id = "-".join(branch.rsplit("-", 3)[-3:])
        second = run_pr(project, tmp_path, forge.url, "-n", "2", "--resume", run_id, *flags,
                        goal_ref="github:acme/app#12")
        assert second.returncode == 0, second.stdout + second.stderr
        assert len(forge.pulls) == 1 and forge.pulls[0]["draft"] is False  # updated, then marked ready
        assert "## What is left" not in forge.pulls[0]["body"] and "[x] **Add module B**" in forge.pulls[0]["body"]
        assert git(origin, "log", "--format=%s", branch).split("\n")[:2] == ["Add module B", "Add module A"]
        assert git(origin, "rev-parse", "main") == git(project, "rev-parse", "main")  # never the default branch
        assert len(forge.comments) == 2
        assert reads == len([r for r in forge.requests if r["method"] == "GET" and r["path"].endswith("/issues/12")])

    assert all(r["authorization"] == f"Bearer {TOKEN}" for r in forge.requests)
    written = "".join(p.read_text(errors="replace") for p in (project / ".kilocode-loop").rglob("*") if p.is_file())
    assert TOKEN not in written and TOKEN not in first.stdout + second.stdout


def test_finish_pr_without_a_token_stops_before_any_work(project: Path, tmp_path: Path) -> None:
    with_origin(project, tmp_path)
    with scripted_github() as forge:
        done = run_pr(project, tmp_path, forge.url, "-n", "2", token="")
    assert done.returncode != 0
    assert "--finish pr needs a github token: set GITHUB_TOKEN" in done.stdout + done.stderr
    assert not (project / "src").exists() and forge.requests == []


def test_a_push_the_remote_rejects_is_rebased_and_a_network_failure_retried(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "repo")
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    git(project, "remote", "add", "origin", str(origin))
    git(project, "switch", "-q", "-c", "kilo-loop/work-r1")
    (project / "a.txt").write_text("a\n")
    commit_paths(project, ["a.txt"], "stage a\n", {})
    push_branch(project, "origin", "kilo-loop/work-r1")
    # someone else pushes to the run's branch: the loop's next push is not a fast-forward
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", "-b", "kilo-loop/work-r1", str(origin), str(other)], check=True)
    (other / "theirs.txt").write_text("theirs\n")
    git(other, "add", "theirs.txt")
    git(other, "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "theirs")
    git(other, "push", "-q", "origin", "kilo-loop/work-r1")
    (project / "b.txt").write_text("b\n")
    commit_paths(project, ["b.txt"], "stage b\n", {})
    push_branch(project, "origin", "kilo-loop/work-r1")
    assert git(origin, "log", "--format=%s", "kilo-loop/work-r1").split("\n")[:3] == ["stage b", "theirs", "stage a"]

    git(project, "remote", "set-url", "origin", "http://127.0.0.1:9/nothing.git")  # nothing listens there
    waits: list[float] = []
    with pytest.raises(FinishError, match="the commits stay here; resume the run to push again"):
        push_branch(project, "origin", "kilo-loop/work-r1", sleep=waits.append, delays=(0.1, 0.2))
    assert waits == [0.1, 0.2]


@pytest.mark.parametrize(("kind", "api_path", "variable"), [("gitlab", "", "GITLAB_TOKEN"),
                                                              ("gitea", "/api/v1", "GITEA_TOKEN")])
def test_finish_pr_on_gitlab_and_gitea_in_their_own_shapes(project: Path, tmp_path: Path, kind: str, api_path: str,
                                                            variable: str) -> None:
    origin = with_origin(project, tmp_path)
    repo = "group/app" if kind == "gitlab" else "acme/app"
    with scripted_forge(kind, repo=repo) as forge:
        argv = [sys.executable, "-m", "kilo_loop", "--goal", "plans/work.json", "-n", "4", "--no-dashboard",
                "--no-confirm", "--hitl", "off", "--finish", "pr", "--forge", kind, "--forge-repo", repo,
                "--forge-url", forge.url + api_path]
        done = subprocess.run(argv, cwd=project, env=loop_env(agent_binary(tmp_path), **{variable: TOKEN}),
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(forge.pulls) == 1, done.stdout + done.stderr
    pull = forge.pulls[0]
    assert pull["title"] == "Add the two modules"  # every stage done: no Draft:/WIP: prefix
    body = pull["description" if kind == "gitlab" else "body"]
    assert "[x] **s2 work**" in body and "## What is left" not in body
    branch = pull["source_branch"] if kind == "gitlab" else pull["head"]["ref"]
    assert git(origin, "log", "--format=%s", branch).split("\n")[:2] == ["s2 work", "s1 work"]
    expected = TOKEN if kind == "gitlab" else f"token {TOKEN}"
    assert all(request["authorization"] == expected for request in forge.requests)
