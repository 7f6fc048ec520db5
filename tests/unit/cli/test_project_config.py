"""One reader of `.kilocode-loop/config.json`: the settings, the guard's own patterns, the dashboard's
launcher and `kilo-loop init` meet a malformed file as the same error, naming the file and what to do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kilo_loop.commands.init import _existing_config
from kilo_loop.errors import ConfigError
from kilo_loop.guard.patterns import project_guard_patterns
from kilo_loop.project_config import ConfigFileError, config_path, read_project_config
from kilo_loop.settings import load_settings
from kilo_loop.web.errors import domain_status
from kilo_loop.web.launcher import set_global_verify

BROKEN: list[tuple[bytes | None, str, str]] = [
    (b"{not json", "not valid JSON", "fix it, or move it out of the way"),
    (b"[1, 2]", "expected a JSON object of settings", "got an array"),
    (b'"verify"', "expected a JSON object of settings", "got a string"),
    (None, "is not a file", "move it out of the way"),  # a directory where the file should be
]
READERS: dict[str, Callable[[Path], Any]] = {
    "settings": lambda project: load_settings({}, project),
    "guard patterns": lambda project: project_guard_patterns(project, {}),
    "launcher": lambda project: set_global_verify(project, "make"),
}


def _write(project: Path, body: bytes | None) -> Path:
    path = config_path(project)
    if body is None:
        path.mkdir(parents=True)
    else:
        path.parent.mkdir(parents=True)
        path.write_bytes(body)
    return path


def test_no_file_is_an_empty_config(tmp_path: Path) -> None:
    assert read_project_config(tmp_path) == {}


def test_the_object_is_handed_over_as_is(tmp_path: Path) -> None:
    _write(tmp_path, b'{"iterations": 3, "guardDeny": ["^x"]}')
    assert read_project_config(tmp_path) == {"iterations": 3, "guardDeny": ["^x"]}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize(("body", "what", "todo"), BROKEN)
def test_every_reader_names_the_file_and_what_to_do(tmp_path: Path, reader: str, body: bytes | None, what: str,
                                                     todo: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(ConfigFileError) as caught:
        READERS[reader](tmp_path)
    message = str(caught.value)
    assert str(path) in message and what in message and todo in message
    assert isinstance(caught.value, ConfigError) and caught.value.exit_code == 2


def test_the_launcher_leaves_a_broken_file_alone_and_the_dashboard_says_conflict(tmp_path: Path) -> None:
    path = _write(tmp_path, b"{not json")
    with pytest.raises(ConfigFileError) as caught:
        set_global_verify(tmp_path, "make")
    assert path.read_bytes() == b"{not json"
    assert domain_status(caught.value)[0] == 409


def test_init_replaces_a_broken_file_under_force(tmp_path: Path) -> None:
    assert _existing_config(_write(tmp_path, b"[1]")) is None
