"""Format 2 checkpoints: trees in git's object store, kept by refs, de-duplicated; old runs still read."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kilo_loop.checkpoint.store import (
    FORMAT_VERSION,
    PATCH_FORMAT,
    CheckpointError,
    capture_checkpoint,
    capture_patch_checkpoint,
    checkpoint_ref,
    list_checkpoints,
    load_checkpoint,
    parse_status,
    plan_revert,
    read_checkpoint_patch,
    ref_component,
    revert_to_checkpoint,
)
from tests.integration import test_checkpoint as checkpoint_tests
from tests.integration.test_checkpoint import git, make_repo, status, write

isolated_git = checkpoint_tests.isolated_git  # the same git config for every test here (autouse)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {f"pkg/mod{i}.py": f"v = {i}\n" for i in range(20)}
    return make_repo(tmp_path / "project", {"README.md": "hello\n", ".gitignore": "*.log\n", **files})


@pytest.fixture
def cps(repo: Path) -> Path:
    return repo / ".kilocode-loop" / "runs" / "run-7" / "checkpoints"


def objects(repo: Path) -> int:
    counts = dict(line.split(": ") for line in git(repo, "count-objects", "-v").splitlines())
    return int(counts["count"]) + int(counts["in-pack"])


def test_unchanged_content_is_stored_once(repo: Path, cps: Path) -> None:
    write(repo / "README.md", "hello\nline 1\n")
    first = capture_checkpoint(repo, cps, 1)
    again = capture_checkpoint(repo, cps, 2)
    assert first.tree == again.tree and first.tree is not None
    before = objects(repo)
    for iteration in range(3, 13):  # a diff that grows: one more line every iteration
        write(repo / "README.md", "hello\n" + "".join(f"line {n}\n" for n in range(1, iteration)))
        capture_checkpoint(repo, cps, iteration)
        # what changed (one blob) and the one tree above it: never the cumulative diff again
        assert objects(repo) - before == 2 * (iteration - 2)
    assert not list(cps.glob("*.patch"))
    assert max(path.stat().st_size for path in cps.glob("iter-*.json")) < 2_000


def test_clean_checkpoint_stores_nothing(repo: Path, cps: Path) -> None:
    before = objects(repo)
    checkpoint = capture_checkpoint(repo, cps, 1)
    assert (checkpoint.tree, checkpoint.index_tree, checkpoint.dirty) == (None, None, False)
    assert objects(repo) == before
    assert git(repo, "for-each-ref", "refs/kilo-loop") == ""


def test_refs_keep_the_trees_through_gc(repo: Path, cps: Path) -> None:
    write(repo / "pkg/mod3.py", "v = 'checkpointed'\n")
    write(repo / "pkg/mod4.py", "v = 'staged'\n")
    git(repo, "add", "pkg/mod4.py")
    checkpoint = capture_checkpoint(repo, cps, 1)
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname) %(objecttype)", "refs/kilo-loop")
    assert refs.splitlines() == [f"{checkpoint_ref('run-7', 1)} {checkpoint.tree} tree",
                                 f"{checkpoint_ref('run-7', 1, index=True)} {checkpoint.index_tree} tree"]
    write(repo / "pkg/mod3.py", "v = 'agent'\n")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")

    revert_to_checkpoint(repo, cps, 1)

    assert (repo / "pkg/mod3.py").read_text() == "v = 'checkpointed'\n"
    assert git(repo, "diff", "--cached", "--name-only") == "pkg/mod4.py\n"


def test_patch_for_the_dashboard_is_derived_from_the_tree(repo: Path, cps: Path) -> None:
    write(repo / "README.md", "hello\nmore\n")
    capture_checkpoint(repo, cps, 1)
    patch = read_checkpoint_patch(cps, 1)  # the project is found from the run directory
    assert patch.startswith("diff --git a/README.md b/README.md") and "+more" in patch
    assert load_checkpoint(cps, 1).patch_bytes == len("hello\nmore\n")


def test_missing_tree_fails_before_changing_anything(repo: Path, cps: Path) -> None:
    write(repo / "README.md", "before\n")
    capture_checkpoint(repo, cps, 1)
    data = json.loads((cps / "iter-01.json").read_text())
    data["tree"] = "0" * 40
    (cps / "iter-01.json").write_text(json.dumps(data))
    write(repo / "README.md", "agent\n")
    write(repo / "new.txt", "n\n")
    before = status(repo)
    with pytest.raises(CheckpointError, match="cannot be read from the repository"):
        revert_to_checkpoint(repo, cps, 1)
    assert status(repo) == before and (repo / "README.md").read_text() == "agent\n"


@pytest.mark.parametrize(("key", "value", "message"), [
    ("tree", "--output=/tmp/x", "not an object id"),
    ("indexTree", 7, "not an object id"),
    ("version", 3, "format version 3"),
])
def test_tampered_json_is_rejected(repo: Path, cps: Path, key: str, value: object, message: str) -> None:
    write(repo / "README.md", "x\n")
    capture_checkpoint(repo, cps, 1)
    data = json.loads((cps / "iter-01.json").read_text())
    data[key] = value
    (cps / "iter-01.json").write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=message):
        plan_revert(repo, cps, 1)


def test_a_run_recorded_in_the_old_format_mixed_with_the_new(repo: Path, cps: Path) -> None:
    write(repo / "README.md", "one\n")
    old = capture_patch_checkpoint(repo, cps, 1)
    write(repo / "README.md", "two\n")
    new = capture_checkpoint(repo, cps, 2)
    assert (old.version, new.version) == (PATCH_FORMAT, FORMAT_VERSION)
    assert [cp.version for cp in list_checkpoints(cps)] == [PATCH_FORMAT, FORMAT_VERSION]
    write(repo / "README.md", "agent\n")
    revert_to_checkpoint(repo, cps, 1)
    assert (repo / "README.md").read_text() == "one\n"
    revert_to_checkpoint(repo, cps, 2)
    assert (repo / "README.md").read_text() == "two\n"
    capture_checkpoint(repo, cps, 1)  # capturing iteration 1 again replaces the old format's files
    assert not (cps / "iter-01.patch").exists() and load_checkpoint(cps, 1).version == FORMAT_VERSION


def test_a_conflicted_index_is_captured_as_patches(repo: Path, cps: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    write(repo / "README.md", "side\n")
    git(repo, "commit", "-qam", "side")
    git(repo, "checkout", "-q", "main")
    write(repo / "README.md", "main\n")
    git(repo, "commit", "-qam", "main")
    subprocess.run(["git", "merge", "-q", "side"], cwd=repo, capture_output=True, check=False)
    assert "UU README.md" in git(repo, "status", "--porcelain")
    checkpoint = capture_checkpoint(repo, cps, 1)
    assert checkpoint.version == PATCH_FORMAT and (cps / "iter-01.patch").is_file()


@pytest.mark.parametrize("run_id", ["run-1", "2026.11.30_x", "a..b", "ends.", "x.lock", "-dash"])
def test_run_ids_make_valid_ref_names(tmp_path: Path, run_id: str) -> None:
    ref = checkpoint_ref(run_id, 3)
    checked = subprocess.run(["git", "check-ref-format", ref], capture_output=True, check=False)
    assert checked.returncode == 0, ref
    assert (ref_component(run_id) == run_id) == (run_id in {"run-1", "2026.11.30_x", "-dash"})


def test_subdirectory_project_trees_cover_only_its_scope(tmp_path: Path) -> None:
    top = make_repo(tmp_path / "mono", {"outside.txt": "o\n", "pkg/inside.txt": "i\n"})
    project = top / "pkg"
    checkpoints = project / ".kilocode-loop/runs/r/checkpoints"
    write(top / "outside.txt", "edited outside before\n")
    write(project / "inside.txt", "edited inside before\n")
    checkpoint = capture_checkpoint(project, checkpoints, 1)
    assert checkpoint.changed == ("pkg/inside.txt",)
    assert "outside" not in read_checkpoint_patch(checkpoints, 1)
    write(top / "outside.txt", "agent outside\n")
    write(project / "inside.txt", "agent inside\n")
    revert_to_checkpoint(project, checkpoints, 1)
    assert (project / "inside.txt").read_text() == "edited inside before\n"
    assert (top / "outside.txt").read_text() == "agent outside\n"


def test_parse_status_v2() -> None:
    oid = "a" * 40
    data = b"\0".join([
        f"# branch.oid {oid}".encode(), b"# branch.head main",
        b"1 .M N... 100644 100644 100644 " + b"1" * 40 + b" " + b"1" * 40 + b" with space/f.txt",
        b"1 A. N... 000000 100644 100644 " + b"0" * 40 + b" " + b"2" * 40 + b" added.py",
        b"2 R. N... 100644 100644 100644 " + b"3" * 40 + b" " + b"3" * 40 + b" R100 new name.txt", b"old name.txt",
        b"? new\nline.txt", b"",
    ])
    head, lists = parse_status(data)
    assert head == oid
    assert lists.changed == {"with space/f.txt", "added.py", "new name.txt"}
    assert lists.untracked == {"new\nline.txt"}
    assert lists.staged and not lists.unmerged
    unborn, conflicted = parse_status(b"# branch.oid (initial)\0u UU N... 100644 100644 100644 100644 "
                                      + b" ".join([b"4" * 40] * 3) + b" c.txt\0")
    assert unborn is None and conflicted.unmerged and conflicted.changed == {"c.txt"}
