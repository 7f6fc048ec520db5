"""Checkpoints and revert against real temporary git repositories."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from kilo_loop.checkpoint.store import (
    FORMAT_VERSION,
    PATCH_FORMAT,
    CheckpointError,
    capture_checkpoint,
    capture_patch_checkpoint,
    checkpoint_ref,
    checkpoint_stem,
    choose_untracked_deletions,
    classify_tracked,
    existed_before,
    is_protected,
    is_safe_relpath,
    list_checkpoints,
    plan_revert,
    protected_roots,
    read_checkpoint_patch,
    revert_to_checkpoint,
)
from tests.support.git import git, make_repo, private_git_config, write


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in private_git_config(tmp_path_factory.mktemp("git"), allow_file_protocol=True).items():
        monkeypatch.setenv(key, value)


@pytest.fixture(autouse=True, params=["trees", "patches"])
def fmt(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs against both formats: trees in git's object store (what the loop writes now)
    and patches beside the JSON (runs recorded before, and a conflicted index)."""
    if request.param == "patches":
        monkeypatch.setattr(sys.modules[__name__], "capture_checkpoint", capture_patch_checkpoint)
    return str(request.param)


def status(repo: Path) -> str:
    return git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "project", {
        "README.md": "hello\n", "src/app.py": "print('v1')\n", ".gitignore": "*.log\nbuild/\n",
    })


@pytest.fixture
def cps(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "r1" / "checkpoints"


# ------------------------------------------------------------------ capture


def test_capture_records_state_without_touching_index_or_head(repo: Path, cps: Path, fmt: str) -> None:
    write(repo / "README.md", "changed\n")
    write(repo / "src/app.py", "print('staged')\n")
    git(repo, "add", "src/app.py")
    write(repo / "notes.txt", "untracked\n")
    write(repo / "debug.log", "ignored\n")
    index_before = (repo / ".git/index").read_bytes()
    status_before = status(repo)
    head_before = git(repo, "rev-parse", "HEAD").strip()

    cp = capture_checkpoint(repo, cps, 1)

    assert (repo / ".git/index").read_bytes() == index_before
    assert status(repo) == status_before
    assert git(repo, "rev-parse", "HEAD").strip() == head_before
    data = json.loads((cps / "iter-01.json").read_text())
    assert data["iteration"] == 1 and data["head"] == head_before and data["dirty"] is True
    assert data["untracked"] == ["notes.txt"]
    if fmt == "patches":
        assert data["version"] == PATCH_FORMAT and data["patchFile"] == "iter-01.patch"
        assert data["patchBytes"] == (cps / "iter-01.patch").stat().st_size > 0
        assert data["stagedPatchFile"] == "iter-01.staged.patch"
    else:
        assert data["version"] == FORMAT_VERSION and not list(cps.glob("*.patch"))
        assert data["patchBytes"] == len("changed\n") + len("print('staged')\n")
        assert git(repo, "rev-parse", checkpoint_ref("r1", 1)).strip() == data["tree"]
        assert git(repo, "rev-parse", checkpoint_ref("r1", 1, index=True)).strip() == data["indexTree"]
    assert "createdAt" in data and "debug.log" in data["ignored"]
    assert sorted(data["changed"]) == ["README.md", "src/app.py"]
    assert cp.path == cps / "iter-01.json" and cp.head == head_before
    patch = read_checkpoint_patch(cps, 1, repo)
    assert "+changed" in patch and "+print('staged')" in patch
    assert not list(cps.glob(".*.tmp"))


def test_clean_tree_checkpoint_is_not_dirty(repo: Path, cps: Path) -> None:
    cp = capture_checkpoint(repo, cps, 1)
    assert cp.dirty is False and cp.patch_bytes == 0 and cp.staged_patch_file is None


def test_names_use_two_digits_then_more(repo: Path, cps: Path) -> None:
    assert checkpoint_stem(7) == "iter-07" and checkpoint_stem(100) == "iter-100"
    capture_checkpoint(repo, cps, 100)
    capture_checkpoint(repo, cps, 9)
    assert (cps / "iter-100.json").is_file() and (cps / "iter-09.json").is_file()
    assert [cp.iteration for cp in list_checkpoints(cps)] == [9, 100]


def test_list_skips_corrupt_checkpoints(repo: Path, cps: Path) -> None:
    capture_checkpoint(repo, cps, 1)
    capture_checkpoint(repo, cps, 2)
    (cps / "iter-02.json").write_text("{not json")
    (cps / "notes.json").write_text("{}")
    (cps / "iter-001.json").write_text((cps / "iter-01.json").read_text())
    (cps / "iter-00.json").write_text("{}")
    assert [cp.iteration for cp in list_checkpoints(cps)] == [1]
    assert list_checkpoints(cps / "missing") == []


@pytest.mark.parametrize("bad", [0, -1, True, "1", "../x", 1.0])
def test_bad_iteration_is_a_clear_error(repo: Path, cps: Path, bad: object) -> None:
    with pytest.raises(CheckpointError, match="iteration must be an integer"):
        read_checkpoint_patch(cps, bad)  # type: ignore[arg-type]


def test_missing_checkpoint_is_a_clear_error(repo: Path, cps: Path) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint before iteration 3"):
        read_checkpoint_patch(cps, 3)
    with pytest.raises(CheckpointError, match="no checkpoint before iteration 3"):
        revert_to_checkpoint(repo, cps, 3)


def test_tampered_head_is_rejected(repo: Path, cps: Path) -> None:
    capture_checkpoint(repo, cps, 1)
    data = json.loads((cps / "iter-01.json").read_text())
    data["head"] = "--output=/tmp/pwned"
    (cps / "iter-01.json").write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="not a commit id"):
        revert_to_checkpoint(repo, cps, 1)


def test_not_a_git_repository(tmp_path: Path, cps: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(CheckpointError, match="not inside a git work tree"):
        capture_checkpoint(tmp_path / "plain", cps, 1)
    with pytest.raises(CheckpointError, match="does not exist"):
        capture_checkpoint(tmp_path / "nope", cps, 1)


# ------------------------------------------------------------------ revert


def test_revert_restores_tracked_and_deletes_new_files(repo: Path, cps: Path) -> None:
    write(repo / "README.md", "mine, before the run\n")
    capture_checkpoint(repo, cps, 1)
    write(repo / "README.md", "agent rewrote it\n")
    (repo / "src/app.py").unlink()
    write(repo / "src/new_module.py", "x = 1\n")
    write(repo / "newdir/deep/file.txt", "x\n")

    result = revert_to_checkpoint(repo, cps, 1)

    assert (repo / "README.md").read_text() == "mine, before the run\n"
    assert (repo / "src/app.py").read_text() == "print('v1')\n"
    assert not (repo / "src/new_module.py").exists()
    assert not (repo / "newdir").exists()
    assert set(result.deleted) == {"src/new_module.py", "newdir/deep/file.txt"}
    assert {"README.md", "src/app.py"} <= set(result.restored)


def test_pre_existing_untracked_and_ignored_files_are_kept(repo: Path, cps: Path, fmt: str) -> None:
    write(repo / ".env", "SECRET=1\n")
    write(repo / "debug.log", "old log\n")
    write(repo / "build/out.bin", b"\x00\x01")
    capture_checkpoint(repo, cps, 1)
    write(repo / ".env", "SECRET=changed by agent\n")
    write(repo / "build/later.bin", b"\x02")  # inside an ignored dir: never deleted
    write(repo / "agent.log", "ignored, created later\n")
    write(repo / ".gitignore", "")  # the agent un-ignores everything; revert restores it first
    write(repo / "created.txt", "new\n")

    # The plan sees agent.log as untracked (the agent emptied .gitignore); the revert restores
    # .gitignore first, so agent.log is ignored again and kept.
    assert plan_revert(repo, cps, 1).delete == ("agent.log", "created.txt")
    result = revert_to_checkpoint(repo, cps, 1)

    # a tree checkpoint keeps untracked files' content, so the revert brings .env back as it was
    assert (repo / ".env").read_text() == ("SECRET=1\n" if fmt == "trees" else "SECRET=changed by agent\n")
    assert (repo / "debug.log").exists() and (repo / "build/out.bin").exists()
    assert (repo / "build/later.bin").exists() and (repo / "agent.log").exists()
    assert (repo / ".gitignore").read_text() == "*.log\nbuild/\n"
    assert not (repo / "created.txt").exists()
    assert result.deleted == ("created.txt",)
    assert ".env" in (result.restored if fmt == "trees" else result.kept)


def test_file_ignored_by_an_unrestorable_rule_is_kept(repo: Path, cps: Path) -> None:
    exclude = repo / ".git/info/exclude"
    exclude.write_text("secret.key\n")
    write(repo / "secret.key", "k\n")
    capture_checkpoint(repo, cps, 1)
    exclude.write_text("")  # revert restores tracked files only, not .git/info/exclude

    result = revert_to_checkpoint(repo, cps, 1)

    assert (repo / "secret.key").exists() and "secret.key" in result.kept and result.deleted == ()


def test_files_the_agent_staged_are_handled(repo: Path, cps: Path) -> None:
    write(repo / ".env", "SECRET=1\n")
    capture_checkpoint(repo, cps, 1)
    write(repo / "staged_new.py", "new\n")
    git(repo, "add", "-f", "staged_new.py", ".env")

    result = revert_to_checkpoint(repo, cps, 1)

    assert not (repo / "staged_new.py").exists()
    assert (repo / ".env").read_text() == "SECRET=1\n"
    assert git(repo, "ls-files", "--", ".env", "staged_new.py") == ""
    assert "staged_new.py" in result.deleted and ".env" in result.kept


def test_staged_state_comes_back(repo: Path, cps: Path) -> None:
    write(repo / "src/app.py", "print('staged')\n")
    git(repo, "add", "src/app.py")
    write(repo / "src/app.py", "print('staged then edited')\n")
    write(repo / "added.py", "a = 1\n")
    git(repo, "add", "added.py")
    capture_checkpoint(repo, cps, 1)
    cached_before = git(repo, "diff", "--cached")
    git(repo, "reset", "-q", "--hard")
    write(repo / "README.md", "agent\n")

    revert_to_checkpoint(repo, cps, 1)

    assert git(repo, "diff", "--cached") == cached_before
    assert (repo / "src/app.py").read_text() == "print('staged then edited')\n"
    assert (repo / "added.py").read_text() == "a = 1\n"
    assert (repo / "README.md").read_text() == "hello\n"


def test_binary_changes_round_trip(repo: Path, cps: Path) -> None:
    blob = bytes(range(256)) * 64
    write(repo / "assets/logo.bin", blob)
    git(repo, "add", "assets/logo.bin")
    git(repo, "commit", "-q", "-m", "binary")
    changed = bytes(reversed(blob)) + b"\x00tail"
    write(repo / "assets/logo.bin", changed)
    write(repo / "assets/new.bin", b"\x00\xff" * 100)
    git(repo, "add", "assets/new.bin")
    capture_checkpoint(repo, cps, 1)
    write(repo / "assets/logo.bin", b"agent garbage")
    (repo / "assets/new.bin").unlink()

    revert_to_checkpoint(repo, cps, 1)

    assert (repo / "assets/logo.bin").read_bytes() == changed
    assert (repo / "assets/new.bin").read_bytes() == b"\x00\xff" * 100


def test_odd_path_names(repo: Path, cps: Path) -> None:
    names = ["with space.txt", "ünïcødé/файл.md", "new\nline.txt", "star*and?.txt", ":(glob)magic"]
    for name in names:
        write(repo / name, f"orig {name}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "odd names")
    write(repo / "with space.txt", "edited before\n")
    write(repo / "pre existing ü.txt", "keep me\n")
    capture_checkpoint(repo, cps, 1)
    for name in names:
        write(repo / name, "agent\n")
    write(repo / "agent made\nthis é.txt", "x\n")
    write(repo / "dir with space/é new.txt", "x\n")

    result = revert_to_checkpoint(repo, cps, 1)

    assert (repo / "with space.txt").read_text() == "edited before\n"
    for name in names[1:]:
        assert (repo / name).read_text() == f"orig {name}\n"
    assert (repo / "pre existing ü.txt").read_text() == "keep me\n"
    assert not (repo / "agent made\nthis é.txt").exists()
    assert not (repo / "dir with space").exists()
    assert set(result.deleted) == {"agent made\nthis é.txt", "dir with space/é new.txt"}


def test_undecodable_file_names(repo: Path, cps: Path) -> None:
    root = os.fsencode(repo)
    with open(root + b"/pre\xfe.txt", "wb") as handle:
        handle.write(b"keep\n")
    capture_checkpoint(repo, cps, 1)
    with open(root + b"/later\xff.txt", "wb") as handle:
        handle.write(b"x\n")

    result = revert_to_checkpoint(repo, cps, 1)

    assert os.path.exists(root + b"/pre\xfe.txt") and not os.path.exists(root + b"/later\xff.txt")
    assert result.deleted == (os.fsdecode(b"later\xff.txt"),)


def test_plan_lists_only_paths_that_are_not_as_at_the_checkpoint(repo: Path, cps: Path) -> None:
    write(repo / "README.md", "user wip\n")
    write(repo / "src/app.py", "print('user wip')\n")
    capture_checkpoint(repo, cps, 1)
    assert plan_revert(repo, cps, 1).restore == ()
    write(repo / "src/app.py", "agent\n")
    assert plan_revert(repo, cps, 1).restore == ("src/app.py",)
    git(repo, "add", "README.md")  # index differs from the checkpoint, file does not
    assert plan_revert(repo, cps, 1).restore == ("README.md", "src/app.py")
    revert_to_checkpoint(repo, cps, 1)
    assert plan_revert(repo, cps, 1).restore == ()
    assert git(repo, "diff", "--cached", "--name-only") == ""


def test_revert_before_2_after_iterations_2_and_3(repo: Path, cps: Path, fmt: str) -> None:
    capture_checkpoint(repo, cps, 1)
    write(repo / "README.md", "iteration 1\n")
    write(repo / "one.txt", "1\n")
    capture_checkpoint(repo, cps, 2)
    write(repo / "README.md", "iteration 2\n")
    write(repo / "two.txt", "2\n")
    (repo / "one.txt").write_text("changed in 2\n")
    capture_checkpoint(repo, cps, 3)
    write(repo / "README.md", "iteration 3\n")
    write(repo / "three.txt", "3\n")
    (repo / "src/app.py").unlink()

    result = revert_to_checkpoint(repo, cps, 2)

    assert (repo / "README.md").read_text() == "iteration 1\n"
    assert (repo / "src/app.py").read_text() == "print('v1')\n"
    # one.txt was untracked before iteration 2: a tree checkpoint kept its content, a patch one did not
    assert (repo / "one.txt").read_text() == ("1\n" if fmt == "trees" else "changed in 2\n")
    assert not (repo / "two.txt").exists() and not (repo / "three.txt").exists()
    assert set(result.deleted) == {"two.txt", "three.txt"}


def test_submodule_contents_are_untouched(tmp_path: Path, cps: Path) -> None:
    lib = make_repo(tmp_path / "lib", {"lib.py": "v = 1\n"})
    project = make_repo(tmp_path / "project")
    git(project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    git(project, "commit", "-q", "-m", "add submodule")
    capture_checkpoint(project, cps, 1)
    sub = project / "vendor/lib"
    write(sub / "lib.py", "v = 2  # edited in submodule\n")
    write(sub / "untracked_in_sub.py", "x\n")
    write(sub / "committed.py", "y\n")
    git(sub, "add", "committed.py")
    git(sub, "commit", "-q", "-m", "inner commit")
    write(project / "README.md", "agent\n")
    inner_head = git(sub, "rev-parse", "HEAD")

    plan = plan_revert(project, cps, 1)
    assert not any(path.startswith("vendor/lib") for path in plan.delete + plan.restore)
    revert_to_checkpoint(project, cps, 1)

    assert (project / "README.md").read_text() == "hello\n"
    assert (sub / "lib.py").read_text() == "v = 2  # edited in submodule\n"
    assert (sub / "untracked_in_sub.py").exists() and (sub / "committed.py").exists()
    assert git(sub, "rev-parse", "HEAD") == inner_head


def test_dirty_submodule_at_capture_is_left_out_of_the_patch(tmp_path: Path, cps: Path) -> None:
    lib = make_repo(tmp_path / "lib", {"lib.py": "v = 1\n"})
    project = make_repo(tmp_path / "project")
    git(project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    git(project, "commit", "-q", "-m", "add submodule")
    sub = project / "vendor/lib"
    write(sub / "lib.py", "v = 3\n")
    git(sub, "commit", "-q", "-am", "moved before the checkpoint")
    write(sub / "lib.py", "v = 4\n")
    write(project / "README.md", "wip\n")
    capture_checkpoint(project, cps, 1)
    assert "Subproject" not in read_checkpoint_patch(cps, 1, project)
    inner_head = git(sub, "rev-parse", "HEAD")
    write(project / "README.md", "agent\n")

    revert_to_checkpoint(project, cps, 1)

    assert (project / "README.md").read_text() == "wip\n"
    assert git(sub, "rev-parse", "HEAD") == inner_head and (sub / "lib.py").read_text() == "v = 4\n"


def test_nested_repository_created_later_is_kept(repo: Path, cps: Path) -> None:
    capture_checkpoint(repo, cps, 1)
    make_repo(repo / "cloned")
    result = revert_to_checkpoint(repo, cps, 1)
    assert (repo / "cloned/README.md").exists() and (repo / "cloned/.git").is_dir()
    assert "cloned/" in result.kept


def test_head_moved_refuses_unless_forced(repo: Path, cps: Path) -> None:
    write(repo / "README.md", "wip\n")
    capture_checkpoint(repo, cps, 1)
    write(repo / "committed_by_agent.py", "x\n")
    write(repo / "src/app.py", "print('v2')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "agent commit")
    head_after = git(repo, "rev-parse", "HEAD")
    before = status(repo)

    with pytest.raises(CheckpointError, match="HEAD moved"):
        revert_to_checkpoint(repo, cps, 1)
    assert status(repo) == before

    result = revert_to_checkpoint(repo, cps, 1, force=True)
    assert result.forced
    assert git(repo, "rev-parse", "HEAD") == head_after
    assert (repo / "README.md").read_text() == "wip\n"
    assert (repo / "src/app.py").read_text() == "print('v1')\n"
    assert not (repo / "committed_by_agent.py").exists()


def test_repository_without_commits(tmp_path: Path, cps: Path) -> None:
    project = tmp_path / "fresh"
    project.mkdir()
    git(project, "init", "-q")
    write(project / ".env", "KEY=1\n")
    write(project / "staged.txt", "staged\n")
    git(project, "add", "staged.txt")
    cp = capture_checkpoint(project, cps, 1)
    assert cp.head is None and cp.untracked == (".env",)
    write(project / "staged.txt", "agent\n")
    write(project / "later.txt", "new\n")

    result = revert_to_checkpoint(project, cps, 1)

    assert (project / "staged.txt").read_text() == "staged\n"
    assert git(project, "ls-files") == "staged.txt\n"
    assert (project / ".env").exists() and not (project / "later.txt").exists()
    assert result.deleted == ("later.txt",)


def test_project_in_a_subdirectory_stays_inside_it(tmp_path: Path, cps: Path) -> None:
    top = make_repo(tmp_path / "mono", {"outside.txt": "o\n", "pkg/inside.txt": "i\n"})
    project = top / "pkg"
    capture_checkpoint(project, cps, 1)
    write(top / "outside.txt", "edited outside\n")
    write(top / "outside_new.txt", "new outside\n")
    write(project / "inside.txt", "edited inside\n")
    write(project / "inside_new.txt", "new inside\n")

    result = revert_to_checkpoint(project, cps, 1)

    assert (project / "inside.txt").read_text() == "i\n" and not (project / "inside_new.txt").exists()
    assert (top / "outside.txt").read_text() == "edited outside\n" and (top / "outside_new.txt").exists()
    assert result.deleted == ("pkg/inside_new.txt",)


def test_plan_changes_nothing_and_matches_the_result(repo: Path, cps: Path) -> None:
    write(repo / ".env", "k\n")
    capture_checkpoint(repo, cps, 1)
    write(repo / "README.md", "agent\n")
    write(repo / "new.txt", "n\n")
    before = status(repo)

    plan = plan_revert(repo, cps, 1)

    assert status(repo) == before
    assert plan.restore == ("README.md",) and plan.delete == ("new.txt",) and ".env" in plan.keep
    assert not plan.head_moved
    result = revert_to_checkpoint(repo, cps, 1)
    assert (result.restored, result.deleted) == (plan.restore, plan.delete)


def test_corrupt_patch_fails_before_changing_anything(repo: Path, cps: Path, fmt: str) -> None:
    write(repo / "README.md", "before\n")
    capture_checkpoint(repo, cps, 1)
    if fmt == "trees":
        pytest.skip("format 1 only: format 2 has no patch file (see test_missing_tree_fails_…)")
    (cps / "iter-01.patch").write_text("diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
                                       "@@ -1 +1 @@\n-not what is there\n+x\n")
    write(repo / "README.md", "agent\n")
    write(repo / "new.txt", "n\n")
    with pytest.raises(CheckpointError, match="does not apply"):
        revert_to_checkpoint(repo, cps, 1)
    assert (repo / "README.md").read_text() == "agent\n" and (repo / "new.txt").exists()


def test_the_loops_own_folder_is_never_deleted(repo: Path, cps: Path) -> None:
    # No .kilocode-loop/.gitignore here: the protection must not depend on it.
    loop_cps = repo / ".kilocode-loop/runs/r1/checkpoints"
    capture_checkpoint(repo, loop_cps, 1)
    capture_checkpoint(repo, loop_cps, 2)
    write(repo / ".kilocode-loop/runs/r1/iterations/02-prompt.md", "prompt\n")
    write(repo / "agent.txt", "x\n")

    result = revert_to_checkpoint(repo, loop_cps, 1)

    assert (loop_cps / "iter-02.json").exists() and (repo / ".kilocode-loop/runs/r1/iterations/02-prompt.md").exists()
    assert result.deleted == ("agent.txt",)


def test_symlinks_are_removed_not_followed(repo: Path, cps: Path, tmp_path: Path) -> None:
    target = tmp_path / "outside_target.txt"
    target.write_text("precious\n")
    capture_checkpoint(repo, cps, 1)
    os.symlink(target, repo / "link.txt")
    result = revert_to_checkpoint(repo, cps, 1)
    assert not (repo / "link.txt").is_symlink() and target.read_text() == "precious\n"
    assert result.deleted == ("link.txt",)


# ------------------------------------------------------------------ pure logic


def test_is_safe_relpath() -> None:
    assert is_safe_relpath("a/b c/é.txt") and is_safe_relpath("new\nline")
    for bad in ["", "/etc/passwd", "../x", "a/../b", ".git/config", "sub/.GIT/x", "a//b", "./a"]:
        assert not is_safe_relpath(bad), bad


def test_existed_before_covers_directories() -> None:
    recorded = frozenset({".env", "build/", "node_modules/"})
    assert existed_before(".env", recorded)
    assert existed_before("build/deep/x.o", recorded)
    assert not existed_before("builder/x", recorded)
    assert not existed_before("src/.env", recorded)


def test_is_protected() -> None:
    gitlinks = frozenset({"vendor/lib"})
    assert is_protected("vendor/lib/x.py", gitlinks) and is_protected("vendor/lib", gitlinks)
    assert is_protected("nested/", gitlinks) and is_protected(".git/HEAD", gitlinks)
    assert not is_protected("vendor/library.py", gitlinks)


def test_choose_untracked_deletions() -> None:
    delete, keep = choose_untracked_deletions(
        ["new.py", ".env", "build/x", "vendor/lib/y", "repo/", "z/.git/config", "pkg/.kilocode-loop/runs/x"],
        recorded=frozenset({".env", "build/"}), roots=protected_roots("pkg/", ["vendor/lib"]),
    )
    assert delete == ("new.py",)
    assert keep == (".env", "build/x", "pkg/.kilocode-loop/runs/x", "repo/", "vendor/lib/y", "z/.git/config")


def test_classify_tracked() -> None:
    actions = classify_tracked(
        ["in_source.py", "added_at_cp.py", "agent_added.py", "env_added"],
        source_files=frozenset({"in_source.py"}),
        index_files=frozenset({"in_source.py", "added_at_cp.py", "agent_added.py", "env_added"}),
        recreated=frozenset({"added_at_cp.py"}),
        recorded=frozenset({"env_added"}),
    )
    assert actions.checkout == ("in_source.py",)
    assert actions.unstage == ("added_at_cp.py", "agent_added.py", "env_added")
    assert actions.clear == ("added_at_cp.py",)
    assert actions.delete == ("agent_added.py",) and actions.keep == ("env_added",)
