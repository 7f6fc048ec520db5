"""--finish: the loop commits each finished stage — exactly its files, with its receipt and trailers —
on the user's branch or on a branch of the run's own; the user's work in progress, the goal file and the
loop's own files stay out. Through the real entry point with a scripted stand-in for `kilo run`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kilo_loop.finish.commits import commit_paths, committed_stages
from tests.fleet.support import agent_binary, goal, init_repo, loop_env, stage, write_goal
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
