"""The hook's pydantic-free reader of guardDeny/guardAllow agrees with load_settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kilo_loop.errors import ConfigError, KiloLoopError
from kilo_loop.guard.patterns import GuardPatterns, project_guard_patterns
from kilo_loop.settings import load_settings

CASES: list[tuple[dict[str, object] | None, dict[str, str]]] = [
    (None, {}),
    ({"guardDeny": ["^make deploy", "drop table"], "guardAllow": "^ls, ^pwd"}, {}),
    ({"guard_deny": "a b,c"}, {}),
    ({"guardDeny": ["x"]}, {"KILO_LOOP_GUARD_DENY": '["from-env"]'}),
    ({"guardAllow": ["y"]}, {"kilo_loop_guard_allow": '"one two"'}),
    (None, {"KILO_LOOP_GUARD_DENY": "[]", "KILO_LOOP_GUARD_ALLOW": '["^ok"]'}),
]


def _project(tmp_path: Path, config: dict[str, object] | None) -> Path:
    if config is not None:
        (tmp_path / ".kilocode-loop").mkdir()
        (tmp_path / ".kilocode-loop" / "config.json").write_text(json.dumps(config))
    return tmp_path


@pytest.mark.parametrize(("config", "env"), CASES)
def test_agrees_with_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              config: dict[str, object] | None, env: dict[str, str]) -> None:
    for name in ("KILO_LOOP_GUARD_DENY", "KILO_LOOP_GUARD_ALLOW"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    project = _project(tmp_path, config)
    settings = load_settings({}, project)
    assert project_guard_patterns(project) == GuardPatterns(tuple(settings.guard_deny), tuple(settings.guard_allow))


@pytest.mark.parametrize(("config", "env"), [
    ({"guardDeny": 3}, {}),
    ({"guardDeny": ["ok", 4]}, {}),
    (None, {"KILO_LOOP_GUARD_DENY": "not json"}),
])
def test_malformed_values_are_config_errors(tmp_path: Path, config: dict[str, object] | None,
                                            env: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as caught:
        project_guard_patterns(_project(tmp_path, config), env)
    assert isinstance(caught.value, KiloLoopError)
    assert caught.value.exit_code == 2


def test_broken_config_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / ".kilocode-loop").mkdir()
    (tmp_path / ".kilocode-loop" / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"config\.json"):
        project_guard_patterns(tmp_path, {})


def test_other_keys_are_not_read(tmp_path: Path) -> None:
    project = _project(tmp_path, {"iterations": "many", "guardDeny": ["^x"]})
    assert project_guard_patterns(project, {}) == GuardPatterns(("^x",), ())
