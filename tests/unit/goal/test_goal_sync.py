"""Writing progress back into goal files, byte for byte where it is markdown."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kilo_loop.goal.model import GoalError, Stage
from kilo_loop.goal.parse import load_goal, parse_markdown_goal
from kilo_loop.goal.sync import (
    mark_markdown_stage_done,
    set_all_done,
    set_stage_verify,
    with_verify_directive,
)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def only_difference(before: bytes, after: bytes) -> list[tuple[int, int, int]]:
    assert len(before) == len(after)
    return [(i, a, b) for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]


# ---------------------------------------------------------------- mark_markdown_stage_done


@pytest.mark.parametrize(
    "data",
    [
        b"# Plan\n\n- [ ] First\n- [ ] Second :: verify: true\n",
        b"# Plan\r\n\r\n- [ ] First\r\n- [ ] Second :: verify: true\r\n",
        b"# Plan\n\n- [ ] First\n- [ ] Second :: verify: true",
        "\ufeff# Plän ✓\n\n- [ ] First — ü\n- [ ] Second :: verify: echo 'é'  \n".encode(),
        b"# Plan\n\n- [ ] First\r\n- [ ] Second :: verify: true\n\n\n",
    ],
    ids=["lf", "crlf", "no-trailing-newline", "unicode-bom", "mixed-endings"],
)
def test_tick_changes_exactly_one_byte(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path / "plan.md", data)
    goal = load_goal(path)
    assert mark_markdown_stage_done(path, goal.stages[1]) is True
    after = path.read_bytes()
    [(offset, old, new)] = only_difference(data, after)
    assert (old, new) == (ord(" "), ord("x"))
    assert data[offset - 3 : offset + 2] == b"- [ ]"
    assert load_goal(path).stages[1].done is True
    assert load_goal(path).stages[0].done is False


def test_untick(tmp_path: Path) -> None:
    data = b"# P\n- [x] A\n- [X] B\n"
    path = write(tmp_path / "p.md", data)
    goal = load_goal(path)
    assert mark_markdown_stage_done(path, goal.stages[1], done=False)
    assert path.read_bytes() == b"# P\n- [x] A\n- [ ] B\n"


def test_no_change_does_not_rewrite(tmp_path: Path) -> None:
    path = write(tmp_path / "p.md", b"# P\n- [X] A\n")
    inode = path.stat().st_ino
    assert mark_markdown_stage_done(path, load_goal(path).stages[0], done=True)
    assert path.stat().st_ino == inode
    assert path.read_bytes() == b"# P\n- [X] A\n"


def test_title_moved_to_another_line_is_found(tmp_path: Path) -> None:
    path = write(tmp_path / "p.md", b"# P\n- [ ] A\n- [ ] B\n")
    stage_b = load_goal(path).stages[1]
    path.write_bytes(b"# P\n\nNew intro.\n\n- [ ] A\n- [ ] Inserted\n- [ ] B\n")
    assert mark_markdown_stage_done(path, stage_b)
    assert path.read_bytes() == b"# P\n\nNew intro.\n\n- [ ] A\n- [ ] Inserted\n- [x] B\n"


def test_renamed_stage_returns_false_and_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path / "p.md", b"# P\n- [ ] A\n- [ ] B\n")
    stage_b = load_goal(path).stages[1]
    edited = b"# P\n- [ ] A\n- [ ] B renamed\n"
    path.write_bytes(edited)
    inode = path.stat().st_ino
    assert mark_markdown_stage_done(path, stage_b) is False
    assert path.read_bytes() == edited and path.stat().st_ino == inode


def test_duplicate_titles_pick_the_item_nearest_the_recorded_line(tmp_path: Path) -> None:
    path = write(tmp_path / "p.md", b"# P\n- [ ] Test\n- [ ] Other\n- [ ] Test\n")
    second = load_goal(path).stages[2]
    assert mark_markdown_stage_done(path, second)
    assert path.read_bytes() == b"# P\n- [ ] Test\n- [ ] Other\n- [x] Test\n"


def test_item_in_a_code_fence_is_never_ticked(tmp_path: Path) -> None:
    path = write(tmp_path / "p.md", b"# P\n```\n- [ ] A\n```\n")
    stage = Stage(id="stage-1", title="A", line=3)
    assert mark_markdown_stage_done(path, stage) is False
    assert path.read_bytes() == b"# P\n```\n- [ ] A\n```\n"


def test_tick_keeps_mode_and_writes_through_symlinks(tmp_path: Path) -> None:
    real = write(tmp_path / "real.md", b"# P\n- [ ] A\n")
    os.chmod(real, 0o640)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    assert mark_markdown_stage_done(link, load_goal(link).stages[0])
    assert link.is_symlink()
    assert real.read_bytes() == b"# P\n- [x] A\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_tick_tolerates_a_broken_directive_elsewhere(tmp_path: Path) -> None:
    path = write(tmp_path / "p.md", b"# P\n- [ ] A\n- [ ] B :: bogus: 1\n")
    assert mark_markdown_stage_done(path, Stage(id="stage-1", title="A", line=2))
    assert path.read_bytes() == b"# P\n- [x] A\n- [ ] B :: bogus: 1\n"


def test_tick_unreadable_file_is_a_goal_error(tmp_path: Path) -> None:
    with pytest.raises(GoalError, match="file not found"):
        mark_markdown_stage_done(tmp_path / "gone.md", Stage(id="s", title="A", line=1))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.text(alphabet="ab é✓-", min_size=1).filter(str.strip)),
             min_size=1, max_size=6, unique_by=lambda item: item[1].strip()),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
    st.data(),
)
def test_tick_property(
    items: list[tuple[bool, str]], newline: str, trailing: bool, data: st.DataObject,
) -> None:
    import tempfile

    body = newline.join(["# P", *(f"- [{'x' if done else ' '}] {title}" for done, title in items)])
    raw = (body + (newline if trailing else "")).encode()
    index = data.draw(st.integers(0, len(items) - 1))
    target = data.draw(st.booleans())
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp, "p.md"), raw)
        stage = load_goal(path).stages[index]
        assert mark_markdown_stage_done(path, stage, done=target)
        after = path.read_bytes()
        changes = only_difference(raw, after)
        assert len(changes) == (0 if items[index][0] == target else 1)
        assert [s.done for s in load_goal(path).stages] == [
            target if i == index else done for i, (done, _) in enumerate(items)
        ]


# ---------------------------------------------------------------- set_all_done


def test_set_all_done_markdown(tmp_path: Path) -> None:
    data = b"# P\r\n- [ ] A\r\n  - [x] B\r\n```\r\n- [ ] code\r\n```\r\n* [ ] C"
    path = write(tmp_path / "p.md", data)
    assert set_all_done(path, True) == 2
    assert path.read_bytes() == data.replace(b"- [ ] A", b"- [x] A").replace(b"* [ ] C", b"* [x] C")
    assert set_all_done(path, True) == 0
    assert set_all_done(path, False) == 3
    assert [s.done for s in load_goal(path).stages] == [False, False, False]


def test_set_all_done_json_keeps_fields_order_and_formatting(tmp_path: Path) -> None:
    original = {
        "title": "Ünï",
        "description": "d",
        "stages": [
            {"id": "a", "title": "A", "done": False, "verify": "true", "model": "m/x"},
            {"title": "B", "details": "x", "done": True},
            {"title": "C", "acceptance": "ok"},
        ],
    }
    data = json.dumps(original).encode()
    path = write(tmp_path / "g.json", data)
    assert set_all_done(path, True) == 2
    text = path.read_text(encoding="utf-8")
    assert text == data.decode().replace('"done": false', '"done": true').replace(
        '"acceptance": "ok"}', '"acceptance": "ok", "done": true}'
    )  # a one-line document stays one line: only the values change
    result = json.loads(text)
    assert list(result["stages"][0]) == ["id", "title", "done", "verify", "model"]
    assert list(result["stages"][2]) == ["title", "acceptance", "done"]
    assert [s["done"] for s in result["stages"]] == [True, True, True]
    assert set_all_done(path, False) == 3
    assert set_all_done(path, False) == 0
    assert [s["done"] for s in json.loads(path.read_text())["stages"]] == [False, False, False]


def test_set_all_done_json_keeps_crlf(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", b'{\r\n"stages": [{"title": "A"}]\r\n}\r\n')
    set_all_done(path, True)
    assert b"\r\n" in path.read_bytes() and b"\n" not in path.read_bytes().replace(b"\r\n", b"")


def test_set_all_done_refuses_a_broken_json_goal(tmp_path: Path) -> None:
    data = b'{"stages": [{"title": "A", "done": "yes"}]}'
    path = write(tmp_path / "g.json", data)
    with pytest.raises(GoalError, match='"done" must be true or false'):
        set_all_done(path, True)
    assert path.read_bytes() == data


def test_set_all_done_unsupported_type(tmp_path: Path) -> None:
    path = write(tmp_path / "g.txt", b"- [ ] A\n")
    with pytest.raises(GoalError, match="unsupported"):
        set_all_done(path, True)


# ---------------------------------------------------------------- set_stage_verify


def test_set_verify_markdown_add_replace_remove(tmp_path: Path) -> None:
    path = write(tmp_path / "p.md", b"# P\r\n- [ ] A  \r\n- [ ] B :: acceptance: ok :: model: m\r\n")
    set_stage_verify(path, 0, "pnpm test")
    assert path.read_bytes() == b"# P\r\n- [ ] A :: verify: pnpm test  \r\n- [ ] B :: acceptance: ok :: model: m\r\n"
    set_stage_verify(path, 1, "  make check ")
    assert path.read_bytes().endswith(b"- [ ] B :: acceptance: ok :: model: m :: verify: make check\r\n")
    set_stage_verify(path, 0, "pytest -q")
    assert b"- [ ] A :: verify: pytest -q  \r\n" in path.read_bytes()
    set_stage_verify(path, 0, "")
    assert path.read_bytes() == (
        b"# P\r\n- [ ] A  \r\n- [ ] B :: acceptance: ok :: model: m :: verify: make check\r\n"
    )
    goal = load_goal(path)
    assert [(s.verify, s.acceptance, s.model) for s in goal.stages] == [
        (None, None, None), ("make check", "ok", "m"),
    ]


def test_set_verify_markdown_replaces_in_place_and_drops_duplicates() -> None:
    assert with_verify_directive("A :: verify: old :: acceptance: x", "new") == "A :: verify: new :: acceptance: x"
    assert with_verify_directive("A ::  Verify: a :: verify: b", "c") == "A ::  verify: c"
    assert with_verify_directive("A :: verify: a :: model: m", "") == "A :: model: m"
    assert with_verify_directive("Fix foo::bar", "cargo test") == "Fix foo::bar :: verify: cargo test"
    assert with_verify_directive("A\r", "x") == "A :: verify: x\r"


def test_set_verify_markdown_untouched_when_unchanged(tmp_path: Path) -> None:
    path = write(tmp_path / "p.md", b"# P\n- [ ] A :: verify: x\n")
    inode = path.stat().st_ino
    set_stage_verify(path, 0, "x")
    assert path.stat().st_ino == inode


@pytest.mark.parametrize(
    ("index", "command", "fragment"),
    [
        (None, "x", "no plan-wide verify"),
        (2, "x", "stage index 2 is out of range"),
        (-1, "x", "out of range"),
        (0, "a\nb", "one line"),
        (0, "a :: b", "cannot contain ' :: '"),
    ],
)
def test_set_verify_markdown_errors(tmp_path: Path, index: int | None, command: str, fragment: str) -> None:
    data = b"# P\n- [ ] A\n- [ ] B\n"
    path = write(tmp_path / "p.md", data)
    with pytest.raises(GoalError, match=fragment.replace("(", r"\(")):
        set_stage_verify(path, index, command)
    assert path.read_bytes() == data


def test_set_verify_json_stage_and_global(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", b'{"title": "T", "stages": [{"title": "A"}, {"title": "B", "verify": "v"}]}')
    set_stage_verify(path, 0, "pnpm test")
    set_stage_verify(path, None, "make check")
    set_stage_verify(path, 1, "")
    result = json.loads(path.read_text(encoding="utf-8"))
    assert result == {
        "title": "T",
        "stages": [{"title": "A", "verify": "pnpm test"}, {"title": "B"}],
        "verify": "make check",
    }
    goal = load_goal(path)
    assert goal.verify == "make check" and goal.stages[0].verify == "pnpm test"
    set_stage_verify(path, None, "")
    assert "verify" not in json.loads(path.read_text(encoding="utf-8"))


def test_set_verify_json_bad_index(tmp_path: Path) -> None:
    data = b'{"stages": [{"title": "A"}]}'
    path = write(tmp_path / "g.json", data)
    with pytest.raises(GoalError, match="stage index 1 is out of range"):
        set_stage_verify(path, 1, "x")
    assert path.read_bytes() == data


def test_set_verify_result_parses(tmp_path: Path) -> None:
    path = write(tmp_path / "p.md", "# P\n- [ ] Größe\n".encode())
    set_stage_verify(path, 0, "echo 'ü'")
    assert parse_markdown_goal(path.read_text(encoding="utf-8")).stages[0].verify == "echo 'ü'"
