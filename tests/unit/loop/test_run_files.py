"""Atomic writes: a symlink is written through, a symlinked folder is written into, the mode is kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kilo_loop.run.files import read_json, write_bytes_atomic, write_json_atomic
from kilo_loop.run.layout import ProjectLayout
from kilo_loop.run.store import RunNotFound, load_for_resume, load_state


def test_a_symlink_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "real.md"
    target.write_text("old\n")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    write_bytes_atomic(link, b"new\n", durable=False)
    assert link.is_symlink() and target.read_text() == "new\n"


def test_a_symlinked_folder_is_written_into(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    write_json_atomic(tmp_path / "alias" / "state.json", {"a": 1})
    assert read_json(tmp_path / "real" / "state.json") == {"a": 1}
    assert [p.name for p in (tmp_path / "real").iterdir()] == ["state.json"]  # no temp file left


def test_the_mode_is_kept_and_a_new_file_gets_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "plan.md"
    path.write_text("x")
    path.chmod(0o640)
    write_bytes_atomic(path, b"y")
    assert path.stat().st_mode & 0o777 == 0o640
    umask = os.umask(0o022)
    try:
        write_bytes_atomic(tmp_path / "new.md", b"z", durable=False)
    finally:
        os.umask(umask)
    assert (tmp_path / "new.md").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("body, detail", [
    (b'{"bad', "not valid JSON (unexpected end of data"),
    (b"[]", "Input should be a valid dictionary or instance of RunState"),
    (b'{"project": "/p", "goalTitle": "G"}', "runId: Field required"),
])
def test_a_damaged_state_is_one_line_naming_the_file(tmp_path: Path, body: bytes, detail: str) -> None:
    run = ProjectLayout(tmp_path).run("r1")
    run.state.parent.mkdir(parents=True)
    run.state.write_bytes(body)
    for load in (load_state, load_for_resume):
        with pytest.raises(RunNotFound) as err:
            load(run)
        assert str(err.value).startswith(f"cannot read {run.state}: {detail}")
        assert "\n" not in str(err.value) and str(err.value).count(str(run.state)) == 1
