"""The watched read of the work tree gives exactly what a full `git status` gives, whatever is done
to the tree between two reads, and asks git nothing when nothing changed.

The operations are Python file calls and git argv lists on a temporary repository (no shell)."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from kilo_loop import gitstatus
from kilo_loop.session.workspace import WorkTree
from kilo_loop.treewatch import TreeWatch
from tests.integration.test_worktree_reads import StatusCalls
from tests.support.git import git

pytestmark = pytest.mark.skipif(not Path("/proc/sys/fs/inotify").is_dir(), reason="inotify is Linux's")


def seed_tree(project: Path) -> None:
    for name in ("src/app.py", "src/lib/util.py", "docs/guide.md", "notes.txt"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(f"{name}\n")
    (project / ".gitignore").write_text("*.log\nbuild/\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "seed")
    (project / "build" / "deep").mkdir(parents=True)
    (project / "build" / "deep" / "out.o").write_bytes(b"\0")


class Tree:
    """A random walk of edits over the files and folders that exist."""

    def __init__(self, project: Path, rng: random.Random) -> None:
        self.project, self.rng = project, rng

    def files(self) -> list[Path]:
        return sorted(p for p in self.project.rglob("*") if p.is_file() and ".git" not in p.parts)

    def dirs(self) -> list[Path]:
        return sorted(p for p in self.project.rglob("*")
                      if p.is_dir() and not p.is_symlink() and ".git" not in p.parts)

    def some_file(self) -> Path:
        return self.rng.choice(self.files() or [self.project / "fresh.txt"])

    def some_dir(self) -> Path:
        return self.rng.choice([self.project, *self.dirs()])

    def new_name(self, suffix: str = ".txt") -> Path:
        return self.some_dir() / f"n{self.rng.randrange(10_000)}{suffix}"

    # each returns nothing; picked at random by `step`
    def edit(self) -> None:
        target = self.some_file()
        target.write_bytes(target.read_bytes() + b"more\n" if target.exists() else b"x\n")

    def write_back(self) -> None:  # as HEAD has it, when tracked: modified turns clean again
        target = self.some_file()
        target.write_text(f"{target.relative_to(self.project).as_posix()}\n")

    def create(self) -> None:
        self.new_name(self.rng.choice([".txt", ".log", ".py"])).write_text("new\n")

    def create_tree(self) -> None:
        top = self.some_dir() / f"d{self.rng.randrange(10_000)}"
        (top / "a" / "b").mkdir(parents=True)
        for name in ("x.txt", "a/y.txt", "a/b/z.log"):
            (top / name).write_text(name)

    def delete(self) -> None:
        self.some_file().unlink(missing_ok=True)

    def delete_tree(self) -> None:
        target = self.some_dir()
        if target != self.project:
            shutil.rmtree(target)

    def rename_file(self) -> None:
        source = self.some_file()
        if source.exists():
            source.rename(self.new_name())

    def rename_dir(self) -> None:
        source = self.some_dir()
        if source != self.project and not self.project.joinpath("moved").exists():
            source.rename(self.project / "moved")

    def atomic_replace(self) -> None:
        target = self.some_file()
        temporary = target.parent / f".{target.name}.tmp"
        temporary.write_text("replaced\n")
        os.replace(temporary, target)

    def chmod(self) -> None:
        target = self.some_file()
        if target.exists():
            target.chmod(target.stat().st_mode ^ 0o100)

    def crlf(self) -> None:
        self.some_file().write_bytes(b"one\r\ntwo\r\n")

    def symlink(self) -> None:
        self.new_name(".lnk").symlink_to("notes.txt")

    def into_ignored(self) -> None:
        build = self.project / "build"
        build.mkdir(exist_ok=True)
        (build / f"o{self.rng.randrange(100)}.o").write_bytes(b"\1")

    def stage(self) -> None:
        git(self.project, "add", "-A")

    def commit(self) -> None:
        git(self.project, "add", "-A")
        git(self.project, "commit", "-qm", "step", "--allow-empty")

    def new_branch(self) -> None:
        git(self.project, "checkout", "-q", "-b", f"b{self.rng.randrange(10_000)}")

    def detach(self) -> None:
        git(self.project, "checkout", "-q", "--detach")

    def ignore_more(self) -> None:
        if (self.project / ".gitignore").is_dir():  # file_to_dir made it a folder
            return
        with (self.project / ".gitignore").open("a") as rules:
            rules.write("*.py\n" if self.rng.random() < 0.5 else "docs/\n")

    def file_to_dir(self) -> None:
        target = self.some_file()
        target.unlink(missing_ok=True)
        target.mkdir()
        (target / "inner.txt").write_text("inner\n")

    def step(self) -> str:
        actions: list[Callable[[], None]] = [
            self.edit, self.edit, self.edit, self.write_back, self.create, self.create_tree, self.delete,
            self.delete_tree, self.rename_file, self.rename_dir, self.atomic_replace, self.chmod, self.crlf,
            self.symlink, self.into_ignored, self.stage, self.commit, self.ignore_more, self.file_to_dir,
            self.new_branch, self.detach,
        ]
        action = self.rng.choice(actions)
        action()
        return action.__name__


@pytest.mark.parametrize("seed", range(int(os.environ.get("SEEDS", "8"))))
def test_watched_reads_match_full_status_through_random_edits(project: Path, seed: int) -> None:
    seed_tree(project)
    tree, walk = WorkTree(project), Tree(project, random.Random(seed))
    tree.read()
    assert tree._watch is not None  # the tree is watched: this test is about the watched reads
    done: list[str] = []
    for _ in range(30):
        done += [walk.step() for _ in range(walk.rng.randint(1, 3))]
        got, want = tree.read(), gitstatus.read_status(project)
        differ = {p: (got.entries.get(p), want.entries.get(p)) for p in set(got.entries) | set(want.entries) if got.entries.get(p) != want.entries.get(p)}
        assert (got.head, differ) == (want.head, {}), f"after {done}"
    tree.close()


def test_nothing_changed_asks_git_nothing(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_tree(project)
    tree = WorkTree(project)
    first = tree.read()
    calls = StatusCalls(monkeypatch)
    assert tree.read() is first and tree.current() is first
    assert (calls.full, calls.paths) == (0, [])
    tree.close()


def test_an_edit_of_a_modified_file_is_hashed_not_asked(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_tree(project)
    (project / "notes.txt").write_text("changed once\n")
    tree = WorkTree(project)
    tree.read()
    calls = StatusCalls(monkeypatch)
    (project / "notes.txt").write_text("changed twice\n")
    assert tree.read().entries["notes.txt"].code == " M"
    (project / "notes.txt").write_text("notes.txt\n")  # as committed
    assert "notes.txt" not in tree.read().entries
    assert (calls.full, calls.paths) == (0, [])
    tree.close()


def test_attributes_leave_edits_to_git(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filter (eol, LFS, ident) may make the index hold other bytes than the file: git decides."""
    seed_tree(project)
    (project / ".gitattributes").write_text("*.txt ident\n")
    git(project, "add", ".gitattributes")
    git(project, "commit", "-qm", "attributes")
    (project / "notes.txt").write_text("changed once\n")
    tree = WorkTree(project)
    tree.read()
    calls = StatusCalls(monkeypatch)
    (project / "notes.txt").write_text("changed twice\n")
    tree.read()
    assert calls.paths == [("notes.txt",)]
    tree.close()


def test_a_nested_repository_is_not_watched(project: Path) -> None:
    seed_tree(project)
    (project / "vendor" / "dep").mkdir(parents=True)
    git(project / "vendor" / "dep", "init", "-q")
    assert TreeWatch.start(project, gitstatus.read_status(project)) is None
    tree = WorkTree(project)
    tree.read()
    (project / "vendor" / "dep" / "file.txt").write_text("x\n")
    assert tree.read().entries == gitstatus.read_status(project).entries


def test_a_switched_off_watch_reads_the_whole_tree(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILO_LOOP_WATCH", "0")
    tree = WorkTree(project)
    tree.read()
    calls = StatusCalls(monkeypatch)
    tree.read()
    assert tree._watch is None and calls.full == 1


def test_other_branches_and_worktrees_do_not_count(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fleet's other jobs make branches and commits in the same repository: the watched tree, a
    linked worktree on its own branch, is not read again for them, and still sees its own commit."""
    seed_tree(project)
    linked = project.parent / "linked"
    git(project, "worktree", "add", "-q", "-b", "job", str(linked))
    tree = WorkTree(linked)
    tree.read()
    calls = StatusCalls(monkeypatch)
    git(project, "branch", "other")
    (project / "notes.txt").write_text("main's own work\n")
    git(project, "commit", "-qam", "main moves on")
    assert tree.read().entries == {} and (calls.full, calls.paths) == (0, [])
    (linked / "notes.txt").write_text("the job's work\n")
    git(linked, "commit", "-qam", "job commits")
    assert tree.read().head == gitstatus.read_status(linked).head and calls.full >= 1
    tree.close()


def test_a_tracked_folder_with_an_ignored_looking_name_is_watched(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`build/` is left out of the first walk as probably ignored; tracked here, it gets its watch
    and one more full read, and edits in it are seen."""
    (project / "build").mkdir()
    (project / "build" / "recipe.txt").write_text("tracked\n")
    git(project, "add", "build/recipe.txt")
    git(project, "commit", "-qm", "a tracked build folder")
    calls = StatusCalls(monkeypatch)
    tree = WorkTree(project)
    tree.read()
    assert calls.full == 2
    (project / "build" / "recipe.txt").write_text("edited\n")
    assert tree.read().entries["build/recipe.txt"].code == " M"
    tree.close()


def test_an_ignored_folder_is_one_entry_and_unwatched(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / ".gitignore").write_text("scratch/\n")
    git(project, "add", ".gitignore")
    git(project, "commit", "-qm", "ignore scratch")
    (project / "scratch" / "deep").mkdir(parents=True)
    calls = StatusCalls(monkeypatch)
    tree = WorkTree(project)
    first = tree.read()
    assert calls.full == 1 and first.entries["scratch/"].code == "!!"
    (project / "scratch" / "deep" / "out.bin").write_bytes(b"\0")
    assert tree.read() is first and calls.paths == []
    tree.close()
