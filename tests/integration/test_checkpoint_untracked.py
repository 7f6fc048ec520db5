"""The checkpoint keeps untracked files' content (within caps), so a revert restores every file of the
work tree; and the guard, knowing that, lets deletes inside the work tree through when a revert can
undo them. Real git repositories in pytest's temp dirs; commands go to the guard in-process as data."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kilo_loop.checkpoint import store as checkpoint_module
from kilo_loop.checkpoint import undoable
from kilo_loop.checkpoint.store import (
    capture_checkpoint,
    load_checkpoint,
    plan_revert,
    revert_to_checkpoint,
    untracked_kept,
)
from kilo_loop.guard.runtime import Guard
from tests.support.git import git, make_repo, private_git_config, write


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in private_git_config(tmp_path_factory.mktemp("git")).items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "project", {
        "README.md": "hello\n", "src/app.py": "print('v1')\n",
        ".gitignore": "dist/\ncoverage/\n.nyc_output/\nnode_modules/\n.venv/\n*.log\n"})


def guard(repo: Path, checkpointed: bool = True) -> Guard:
    """A guard whose temp directory is elsewhere: pytest's repo under /tmp must not count as temp."""
    return Guard(temp_dirs=[str(repo.parent / "scratch")], work_tree=str(repo) if checkpointed else None)


@pytest.fixture
def cps(repo: Path) -> Path:
    return repo / ".kilocode-loop" / "runs" / "r1" / "checkpoints"


def test_an_untracked_file_deleted_is_restored_by_revert(repo: Path, cps: Path) -> None:
    write(repo / "notes" / "plan.md", "the plan\n")
    write(repo / "notes" / "draft.txt", "draft v1\n")
    taken = capture_checkpoint(repo, cps, 1)
    assert taken.untracked_tree is not None and not taken.untracked_left_out
    (repo / "notes" / "plan.md").unlink()
    write(repo / "notes" / "draft.txt", "draft v2, the agent's\n")
    plan = plan_revert(repo, cps, 1)
    assert plan.bring_back == ("notes/plan.md",) and plan.missing == ()
    result = revert_to_checkpoint(repo, cps, 1)
    assert (repo / "notes" / "plan.md").read_text() == "the plan\n"
    assert (repo / "notes" / "draft.txt").read_text() == "draft v1\n"
    assert {"notes/plan.md", "notes/draft.txt"} <= set(result.restored)
    assert "notes/plan.md" not in result.missing


def test_what_is_over_the_caps_is_left_out_and_named(repo: Path, cps: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint_module, "UNTRACKED_FILE_CAP", 100)
    write(repo / "big.bin", b"x" * 101)
    write(repo / "small.txt", "s\n")
    taken = capture_checkpoint(repo, cps, 1)
    assert taken.untracked_left_out == ("big.bin",)
    assert load_checkpoint(cps, 1).untracked_left_out == ("big.bin",)


def test_the_caps_pick_small_files_first() -> None:
    kept, left = untracked_kept([("a", 10), ("b", 20 * 1024 * 1024), ("gone", None), ("repo/", 0)])
    assert kept == ["a"] and left == ["b", "gone", "repo/"]


@pytest.mark.parametrize("command", [
    "rm -rf dist/ coverage/ .nyc_output/",
    "rm -rf ./node_modules/.cache",
    "rm -rf .venv && python3 -m venv .venv",
    "cp /dev/null logs/debug.log",
    "npx rimraf dist coverage",
    "find . -name node_modules -prune -exec rm -rf {} +",
    "rm -rf notes",
    "dd if=/dev/zero of=build/blank.img bs=1k count=1",
    "truncate -s 0 src/app.py",
])
def test_deletes_a_revert_can_undo_are_allowed(repo: Path, command: str) -> None:
    for made in ("dist/a.js", "coverage/lcov.info", ".nyc_output/x.json", "node_modules/.cache/c",
                 ".venv/bin/python", "logs/debug.log", "notes/plan.md"):
        write(repo / made, "x\n")
    decision = guard(repo).check_command(command, str(repo))
    assert not decision.denied, decision


@pytest.mark.parametrize(("command", "why"), [
    ("rm -rf .git", ".git"),
    ("rm -rf .kilocode-loop", "loop's own folder"),
    ("rm -rf .", "work tree"),
    ("rm -rf vendor/lib", "git repository"),
    ("rm -rf ../other", "not strictly inside"),
])
def test_deletes_a_revert_cannot_undo_stay_denied(repo: Path, command: str, why: str) -> None:
    (repo / ".kilocode-loop").mkdir()
    (repo / "vendor" / "lib").mkdir(parents=True)
    git(repo / "vendor" / "lib", "init", "-q")  # a clone inside the project
    write(repo / "vendor" / "lib" / "x.c", "int x;\n")
    (repo.parent / "other").mkdir()
    decision = guard(repo).check_command(command, str(repo))
    assert decision.denied and why in decision.reason, decision


def test_an_untracked_file_over_the_cap_is_not_deleted(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(undoable, "UNTRACKED_FILE_CAP", 100)
    write(repo / "data" / "big.csv", "x" * 101)
    decision = guard(repo).check_command("rm -rf data", str(repo))
    assert decision.denied and "larger than the checkpoint keeps" in decision.reason


def test_without_a_checkpoint_the_work_tree_is_not_special(repo: Path) -> None:
    write(repo / "dist" / "a.js", "x\n")
    assert guard(repo, checkpointed=False).check_command("rm -rf dist", str(repo)).denied


def test_removing_a_symlink_removes_the_link_only(repo: Path, tmp_path: Path) -> None:
    os.symlink(os.path.expanduser("~"), repo / "home-link")
    checked = guard(repo)
    assert not checked.check_command("rm -rf home-link", str(repo)).denied
    assert checked.check_command("rm -rf home-link/", str(repo)).denied


def test_guarded_delete_then_revert_brings_every_file_back(repo: Path, cps: Path) -> None:
    """The whole promise: an allowed delete of an untracked file inside the work tree is undone by revert."""
    write(repo / "docs" / "guide.md", "# guide\n")
    capture_checkpoint(repo, cps, 1)
    assert not guard(repo).check_command("rm -rf docs", str(repo)).denied
    subprocess.run(["rm", "-rf", str(repo / "docs")], check=True)  # argv list, a temp repo: no shell
    revert_to_checkpoint(repo, cps, 1)
    assert (repo / "docs" / "guide.md").read_text() == "# guide\n"


def test_unchanged_untracked_files_reuse_the_tree_without_git(repo: Path, cps: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo / "notes.md", "n\n")
    first = capture_checkpoint(repo, cps, 1)
    calls: list[tuple[str, ...]] = []
    real = checkpoint_module._Repo.git

    def counting(self: object, *args: str, **kwargs: object) -> bytes:
        calls.append(args)
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(checkpoint_module._Repo, "git", counting)
    again = capture_checkpoint(repo, cps, 2)
    assert again.untracked_tree == first.untracked_tree
    assert not any(args[:1] == ("update-index",) for args in calls)
    write(repo / "notes.md", "changed\n")
    assert capture_checkpoint(repo, cps, 3).untracked_tree != first.untracked_tree
