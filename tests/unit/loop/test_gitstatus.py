"""The one `git status` read an iteration shares: parsing porcelain v2 and merging a refreshed path."""

from __future__ import annotations

from pathlib import Path

from kilo_loop.gitstatus import Entry, TreeStatus, after_write, blob_oid, parse, snapshot

OID = "a" * 40
HASHES = b" ".join([b"1" * 40] * 2)


def test_parse_reads_every_kind_of_entry() -> None:
    data = b"\0".join([
        f"# branch.oid {OID}".encode(), b"# branch.head main",
        b"1 .M N... 100644 100644 100644 " + HASHES + b" with space/f.txt",
        b"1 A. N... 000000 100644 100644 " + HASHES + b" added.py",
        b"1 .M SC.. 160000 160000 160000 " + HASHES + b" vendor/lib",
        b"2 R. N... 100644 100644 100644 " + HASHES + b" R100 new name.txt", b"old name.txt",
        b"? new\nline.txt", b"! build/", b"! debug.log", b"",
    ])
    status = parse(data)
    assert status.head == OID
    assert status.entries["with space/f.txt"] == Entry(" M", index_oid="1" * 40)
    assert status.entries["added.py"] == Entry("A ", staged=True, index_oid="1" * 40)
    assert status.entries["vendor/lib"].submodule
    assert "old name.txt" not in status.entries  # a rename's source is not an entry of its own
    assert status.changed() == {"with space/f.txt", "added.py", "new name.txt"}
    assert status.changed(submodules=True) == status.changed() | {"vendor/lib"}
    assert status.untracked == {"new\nline.txt"}
    assert status.ignored == {"build/", "debug.log"}
    assert status.staged and not status.unmerged


def test_parse_an_unborn_branch_and_a_conflict() -> None:
    status = parse(b"# branch.oid (initial)\0u UU N... 100644 100644 100644 100644 "
                   + b" ".join([b"4" * 40] * 3) + b" c.txt\0")
    assert status.head is None and status.unmerged and status.changed() == {"c.txt"}


def test_a_staged_submodule_does_not_make_the_index_staged() -> None:
    status = parse(b"1 M. SC.. 160000 160000 160000 " + HASHES + b" vendor/lib\0")
    assert not status.staged


def test_merged_replaces_only_the_refreshed_paths() -> None:
    before = TreeStatus(OID, {"PLAN.md": Entry(" M"), "a.txt": Entry("??"), "docs/x.md": Entry(" M")})
    refreshed = TreeStatus(OID, {})  # the goal file is clean again
    after = before.merged(refreshed, ["PLAN.md"])
    assert after.entries == {"a.txt": Entry("??"), "docs/x.md": Entry(" M")}
    assert before.merged(TreeStatus(OID, {"docs/y.md": Entry("??")}), ["docs"]).entries == {
        "PLAN.md": Entry(" M"), "a.txt": Entry("??"), "docs/y.md": Entry("??")}


def test_snapshot_stats_changed_paths_and_leaves_out_ignored_and_the_loop_folder(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("four")
    status = TreeStatus(OID, {"a.txt": Entry("??"), "gone.txt": Entry(" D"), "debug.log": Entry("!!"),
                              ".kilocode-loop/x": Entry("??"), ".kilocode-loop": Entry("??")})
    found = snapshot(tmp_path, status, ".kilocode-loop")
    assert set(found) == {"a.txt", "gone.txt"}
    assert found["a.txt"][0] == "??" and found["a.txt"][2] == 4
    assert found["gone.txt"] == (" D", -1, -1)


def test_blob_oid_is_gits() -> None:
    # `printf 'hello\n' | git hash-object --stdin`
    assert blob_oid(b"hello\n", OID) == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert len(blob_oid(b"hello\n", "b" * 64)) == 64


def test_after_write_works_out_what_it_can_and_leaves_the_rest_to_git() -> None:
    clean = TreeStatus(OID, {})
    ticked = after_write(clean, "PLAN.md", b"- [ ] a\n", b"- [x] a\n")
    assert ticked is not None and ticked.entries["PLAN.md"] == Entry(" M", index_oid=blob_oid(b"- [ ] a\n", OID))
    back = after_write(ticked, "PLAN.md", b"- [x] a\n", b"- [ ] a\n")
    assert back is not None and back.entries == {}
    untracked = TreeStatus(OID, {"PLAN.md": Entry("??")})
    assert after_write(untracked, "PLAN.md", b"a", b"b") is untracked
    for status in (TreeStatus(OID, {"docs/": Entry("!!")}), TreeStatus(OID, {"PLAN.md": Entry("UU", unmerged=True)}),
                   TreeStatus(OID, {"PLAN.md": Entry(" M")})):  # an ignored folder; a conflict; no index blob
        assert after_write(status, "docs/PLAN.md" if "docs/" in status.entries else "PLAN.md", b"a", b"b") is None
    assert after_write(clean, "PLAN.md", b"a\r\n", b"b\r\n") is None  # line ends git may convert
