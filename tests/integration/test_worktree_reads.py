"""How few `git status` reads the loop makes, and what it still gets right: the read after a session
serves the next iteration's "before" and its checkpoint; the ticked goal file is accounted for
from its bytes (the same answer git gives, checked against git). Watched (inotify), the loop asks
git about the new files alone; unwatched (`KILO_LOOP_WATCH=0`, or no inotify) it reads the whole
tree once per iteration, and again after verify output."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from kilo_loop import gitstatus
from kilo_loop.checkpoint.store import capture_checkpoint, revert_to_checkpoint
from kilo_loop.session.workspace import WorkTree
from tests.integration.inprocess import done_turn, start_loop
from tests.support.git import git

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


@pytest.fixture(params=["watched", "unwatched"])
def watched(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if request.param == "unwatched":
        monkeypatch.setenv("KILO_LOOP_WATCH", "0")
    return request.param == "watched"


# Watched: one full read before the first iteration (once the watches are set), then only the agent's
# new files; the progress report is new once.
NEW_FILES = [(".kilocode-loop/progress.json", "a.txt"), ("b.txt",), ("c.txt",)]


async def test_one_read_per_iteration_and_the_tick_refreshed_alone(
        project: Path, monkeypatch: pytest.MonkeyPatch, watched: bool) -> None:
    commit_plan(project)
    calls = StatusCalls(monkeypatch)
    turns = [done_turn("stage-1", "a.txt"), done_turn("stage-2", "b.txt"), done_turn("stage-3", "c.txt", 100)]
    run = start_loop(project, turns, THREE)
    state = await run.finish()
    assert state.status == "done" and state.iteration == 3
    if watched:
        assert (calls.full, calls.paths) == (1, NEW_FILES)  # each tick worked out from the goal file's bytes
    else:
        assert (calls.full, calls.paths) == (1 + 3, [])  # the first "before", then one after each session
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


async def test_without_checkpoints_the_same_reads(
        project: Path, monkeypatch: pytest.MonkeyPatch, watched: bool) -> None:
    calls = StatusCalls(monkeypatch)
    turns = [done_turn("stage-1", "a.txt"), done_turn("stage-2", "b.txt"), done_turn("stage-3", "c.txt", 100)]
    state = await start_loop(project, turns, THREE, checkpoint=False).finish()
    assert state.status == "done"
    assert (calls.full, calls.paths) == ((1, NEW_FILES) if watched else (4, []))
    assert [item.files_changed for item in state.iterations] == [["a.txt"], ["b.txt"], ["c.txt"]]


async def test_verify_output_is_read_before_the_next_iteration(
        project: Path, monkeypatch: pytest.MonkeyPatch, watched: bool) -> None:
    calls = StatusCalls(monkeypatch)
    turns = [done_turn("stage-1", "a.txt"), done_turn("stage-2", "b.txt", 100)]
    # The verify command is a fixed argv-free line of the test's own: it writes one file and passes.
    state = await start_loop(project, turns, "# Two\n\n- [ ] First stage\n- [ ] Second stage\n",
                             verify="echo ok > verify.out").finish()
    assert state.status == "done"
    if watched:  # the verify's file, asked about before iteration 2
        assert (calls.full, calls.paths) == (1, [(".kilocode-loop/progress.json", "a.txt"), ("verify.out",), ("b.txt",)])
    else:
        assert (calls.full, calls.paths) == (2 + 2, [])  # a fresh "before" after each verify
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


WRITES = {
    # name: (set-up of goal.md before the read, what the loop writes after it)
    "clean tracked file": (["commit"], b"- [x] one\n- [ ] two\n"),
    "already modified": (["commit", "modify"], b"- [x] one\n- [x] two\n"),
    "written back as the index has it": (["commit", "modify"], b"- [ ] one\n- [ ] two\n"),
    "staged, then written as staged": (["commit", "modify", "stage"], b"- [ ] one\n- [ ] two\n- [ ] three\n"),
    "staged, then written anew": (["commit", "modify", "stage"], b"- [x] one\n- [x] two\n"),
    "untracked": ([], b"- [x] one\n- [ ] two\n"),
    "ignored": (["ignore"], b"- [x] one\n- [ ] two\n"),
    "in an ignored folder": (["ignore-dir"], b"- [x] one\n- [ ] two\n"),
    "windows line ends": (["commit", "crlf"], b"- [x] one\r\n- [ ] two\r\n"),
}


@pytest.mark.parametrize("case", sorted(WRITES))
def test_a_write_the_loop_names_gives_the_status_git_gives(project: Path, case: str) -> None:
    steps, written = WRITES[case]
    goal = project / ("docs/goal.md" if "ignore-dir" in steps else "goal.md")
    goal.parent.mkdir(exist_ok=True)
    goal.write_bytes(b"- [ ] one\r\n- [ ] two\r\n" if "crlf" in steps else b"- [ ] one\n- [ ] two\n")
    if "ignore" in steps or "ignore-dir" in steps:
        (project / ".gitignore").write_text("goal.md\n" if "ignore" in steps else "docs/\n")
    if "commit" in steps:
        git(project, "add", goal.name)
        git(project, "commit", "-qm", "goal")
    if "modify" in steps:
        goal.write_bytes(b"- [ ] one\n- [ ] two\n- [ ] three\n")
    if "stage" in steps:
        git(project, "add", goal.name)
        goal.write_bytes(b"- [ ] one\n- [ ] two\n")  # the index holds the three-line version
    tree = WorkTree(project)
    tree.read()
    before = goal.read_bytes()
    goal.write_bytes(written)
    tree.wrote(goal, before)
    assert tree.current().entries == gitstatus.read_status(project).entries


def test_without_the_bytes_before_git_is_asked(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = WorkTree(project)
    tree.read()
    calls = StatusCalls(monkeypatch)
    (project / "README.md").write_text("changed\n")
    tree.wrote(project / "README.md", None)
    assert calls.paths == [("README.md",)]
    assert tree.current().entries["README.md"].code == " M"


def test_a_checkpoint_of_a_sub_folder_reads_its_own_scoped_status(project: Path, tmp_path: Path) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "inside.txt").write_text("new inside\n")
    (project / "outside.txt").write_text("new outside\n")
    whole = gitstatus.read_status(project)
    assert {"sub/inside.txt", "outside.txt"} <= whole.untracked
    checkpoint = capture_checkpoint(project / "sub", tmp_path / "run" / "checkpoints", 1, whole)
    assert checkpoint.prefix == "sub/" and checkpoint.untracked == ("sub/inside.txt",)
