"""One full `git status` per iteration, and what it still gets right: the read after a session
serves the next iteration's "before" and its checkpoint; the ticked goal file is refreshed alone;
verify output makes the loop read the whole tree again."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from kilo_loop import gitstatus
from kilo_loop.loop.workspace import WorkTree
from kilo_loop.safety.checkpoint import revert_to_checkpoint
from tests.integration.inprocess import done_turn, start_loop

THREE = "# Three\n\n- [ ] First stage\n- [ ] Second stage\n- [ ] Third stage\n"


def commit_plan(project: Path) -> None:
    """The goal file tracked, as in most projects: its tick then shows as a modified file."""
    (project / "plan.md").write_text(THREE)
    for args in (["add", "plan.md"], ["commit", "-qm", "plan"]):
        subprocess.run(["git", *args], cwd=project, check=True)


class StatusCalls:
    """Every `git status` the loop and its checkpoints run: full reads and pathspec-limited ones."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = 0
        self.paths: list[tuple[str, ...]] = []
        real = gitstatus.git_output

        def counting(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> bytes:
            if "--" in args and args[0] == "status":
                self.paths.append(args[args.index("--") + 1:])
            elif args[0] == "status":
                self.full += 1
            return real(cwd, *args, env=env)

        monkeypatch.setattr(gitstatus, "git_output", counting)


async def test_one_full_status_per_iteration_and_the_tick_refreshed_alone(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commit_plan(project)
    calls = StatusCalls(monkeypatch)
    turns = [done_turn("stage-1", "a.txt"), done_turn("stage-2", "b.txt"), done_turn("stage-3", "c.txt", 100)]
    run = start_loop(project, turns, THREE)
    state = await run.finish()
    assert state.status == "done" and state.iteration == 3
    assert calls.full == 1 + 3  # the first "before", then one after each session
    assert calls.paths == [("plan.md",)] * 3  # each tick, refreshed alone
    # The goal file the loop ticked is not the agent's change: each iteration reports its own file only.
    assert [item.files_changed for item in state.iterations] == [["a.txt"], ["b.txt"], ["c.txt"]]
    # Yet the checkpoint before iteration 2 saw the tick and iteration 1's file, from the reused read.
    checkpoints = run.handle.layout.checkpoints
    second = json.loads((checkpoints / "iter-02.json").read_text())
    assert second["changed"] == ["plan.md"] and second["untracked"] == ["a.txt"]
    third = json.loads((checkpoints / "iter-03.json").read_text())
    assert {"a.txt", "b.txt"} <= set(third["untracked"])
    revert_to_checkpoint(project, checkpoints, 2)
    assert (project / "a.txt").exists() and not (project / "b.txt").exists() and not (project / "c.txt").exists()
    assert (project / "plan.md").read_text().count("[x]") == 1


async def test_without_checkpoints_the_same_one_read(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = StatusCalls(monkeypatch)
    turns = [done_turn("stage-1", "a.txt"), done_turn("stage-2", "b.txt"), done_turn("stage-3", "c.txt", 100)]
    state = await start_loop(project, turns, THREE, checkpoint=False).finish()
    assert state.status == "done"
    assert calls.full == 4 and len(calls.paths) == 3
    assert [item.files_changed for item in state.iterations] == [["a.txt"], ["b.txt"], ["c.txt"]]


async def test_verify_output_makes_the_loop_read_the_whole_tree_again(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = StatusCalls(monkeypatch)
    turns = [done_turn("stage-1", "a.txt"), done_turn("stage-2", "b.txt", 100)]
    # The verify command is a fixed argv-free line of the test's own: it writes one file and passes.
    state = await start_loop(project, turns, "# Two\n\n- [ ] First stage\n- [ ] Second stage\n",
                             verify="echo ok > verify.out").finish()
    assert state.status == "done"
    assert calls.full == 2 + 2 and calls.paths == []  # a fresh "before" after each verify
    # verify.out appeared after iteration 1's read: iteration 2's fresh "before" has it, so it is not
    # reported as iteration 2's change.
    assert [item.files_changed for item in state.iterations] == [["a.txt"], ["b.txt"]]


def test_refresh_outside_the_project_forgets_the_read(project: Path, tmp_path: Path) -> None:
    tree = WorkTree(project)
    kept = tree.read()
    assert tree.current() is kept
    tree.refresh([tmp_path / "elsewhere.md"])
    assert tree.current() is not kept  # read again


def test_refresh_sees_the_file_as_git_does(project: Path) -> None:
    tree = WorkTree(project)
    tree.read()
    (project / "notes.md").write_text("new\n")
    tree.refresh([project / "notes.md"])
    assert tree.current().entries["notes.md"].code == "??"
    (project / "notes.md").unlink()
    tree.refresh([project / "notes.md"])
    assert "notes.md" not in tree.current().entries
