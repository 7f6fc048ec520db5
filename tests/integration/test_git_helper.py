"""The one git helper: its environment policy and the one project-root lookup, in real repositories."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kilo_loop.checkpoint.store import capture_checkpoint
from kilo_loop.errors import KiloLoopError
from kilo_loop.git import (
    POLICY,
    REDIRECTS,
    GitError,
    NotAGitRepo,
    git_env,
    git_output,
    git_root,
    project_root,
)
from kilo_loop.session.workspace import snapshot_worktree

SRC = Path(__file__).resolve().parents[2] / "src" / "kilo_loop"


def _repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "tracked.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    "commit", "-qm", "init"], check=True)
    return path


def test_env_strips_redirects_and_applies_policy() -> None:
    inherited = {name: "/elsewhere" for name in REDIRECTS} | {"PATH": "/bin", "LC_ALL": "de_DE.UTF-8"}
    env = git_env({"GIT_INDEX_FILE": "/tmp/scratch-index"}, base=inherited)
    assert not {name for name in REDIRECTS if name != "GIT_INDEX_FILE"} & set(env)
    assert env["GIT_INDEX_FILE"] == "/tmp/scratch-index"  # asked for explicitly
    assert env["PATH"] == "/bin"
    assert {key: env[key] for key in POLICY} == POLICY


def test_inherited_git_dir_does_not_redirect_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project, other = _repo(tmp_path / "project"), _repo(tmp_path / "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    (project / "sub").mkdir()
    assert git_root(project / "sub") == project.resolve()
    (project / "tracked.txt").write_text("changed\n")
    (other / "tracked.txt").write_text("changed elsewhere\n")
    (project / "new.txt").write_text("new\n")
    assert set(snapshot_worktree(project)) == {"tracked.txt", "new.txt"}
    checkpoint = capture_checkpoint(project, tmp_path / "checkpoints", 1)
    assert checkpoint.untracked == ("new.txt",)
    assert checkpoint.changed == ("tracked.txt",)


def test_project_root_is_the_git_root_or_the_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    project = _repo(tmp_path / "project")
    (project / "a" / "b").mkdir(parents=True)
    assert project_root(project / "a" / "b") == project.resolve()
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_root(plain) == plain.resolve()
    monkeypatch.chdir(project / "a")
    assert project_root() == project.resolve()
    with pytest.raises(NotAGitRepo, match="git init") as caught:
        git_root(plain)
    assert caught.value.exit_code == 2


def test_failures_say_what_and_why(tmp_path: Path) -> None:
    project = _repo(tmp_path / "project")
    with pytest.raises(GitError, match=r"^reading nothing: fatal: Needed a single revision") as caught:
        git_output(project, "rev-parse", "--verify", "no-such-ref", what="reading nothing")
    assert isinstance(caught.value, KiloLoopError)


def test_every_git_process_in_src_goes_through_the_helper() -> None:
    spawning = re.compile(r"""\[\s*["']git["']|create_subprocess_exec\(\s*["']git["']""")
    offenders = [path.relative_to(SRC).as_posix() for path in SRC.rglob("*.py")
                 if path.name != "git.py" and spawning.search(path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_outside_git_the_nearest_loop_folder_is_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    (tmp_path / "p" / ".kilocode-loop").mkdir(parents=True)
    (tmp_path / "p" / "src" / "deep").mkdir(parents=True)
    assert project_root(tmp_path / "p" / "src" / "deep") == (tmp_path / "p").resolve()
