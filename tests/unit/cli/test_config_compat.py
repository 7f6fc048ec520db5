"""config.json written for the original tool: unknown keys warn, its key names are aliases,
wrong types for known keys stay errors — unit level and through the real command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kilo_loop.durations import format_duration, parse_duration
from kilo_loop.settings import ConfigError, load_settings


def write_config(project: Path, values: dict[str, object]) -> Path:
    config = project / ".kilocode-loop" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps(values, indent=2))
    return config


def test_unknown_keys_are_one_line_warnings_naming_key_and_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"iterations": 3, "telemetry": True, "uiTheme": "dark"})
    warnings: list[str] = []
    settings = load_settings({}, tmp_path, warn=warnings.append)
    assert settings.iterations == 3
    assert warnings == [
        f"kilo-loop: warning: {config}: unknown key 'telemetry' ignored (not a kilo-loop setting)",
        f"kilo-loop: warning: {config}: unknown key 'uiTheme' ignored (not a kilo-loop setting)",
    ]
    assert all("\n" not in line for line in warnings)


@pytest.mark.parametrize(
    "key, value, field, expected",
    [
        ("contextThreshold", 90000, "context_warn_tokens", 90000),
        ("contextWarnThreshold", 80000, "context_warn_tokens", 80000),
        ("defaultVerify", "npm test", "verify", "npm test"),
        ("verifyCommand", "make check", "verify", "make check"),
        ("sessionMode", "continue", "shared_context", True),
        ("maxCostUsd", 2.5, "max_cost", 2.5),
        ("contextWarnTokens", 1000, "context_warn_tokens", 1000),
    ],
)
def test_the_original_tools_key_names_are_aliases(
    tmp_path: Path, key: str, value: object, field: str, expected: object
) -> None:
    write_config(tmp_path, {key: value})
    warnings: list[str] = []
    assert getattr(load_settings({}, tmp_path, warn=warnings.append), field) == expected
    assert warnings == []


@pytest.mark.parametrize(
    "values, needle",
    [({"contextThreshold": "lots"}, "'contextThreshold'"), ({"iterations": "many", "x": 1}, "'iterations'")],
)
def test_a_wrong_type_for_a_known_key_is_still_an_error(
    tmp_path: Path, values: dict[str, object], needle: str
) -> None:
    config = write_config(tmp_path, values)
    with pytest.raises(ConfigError) as err:
        load_settings({}, tmp_path, warn=lambda _: None)
    assert str(config) in str(err.value) and needle in str(err.value)


def test_the_command_line_runs_with_a_warning_not_exit_2(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "plans").mkdir()
    (project / "plans" / "a.md").write_text("# A plan\n\n- [ ] One\n")
    config = write_config(project, {"iterations": 2, "dashboardTheme": "dark", "contextThreshold": 50000})
    done = subprocess.run(
        [sys.executable, "-m", "kilo_loop", "--list-goals", "--project", str(project)],
        check=False, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "A plan" in done.stdout
    assert done.stderr.strip() == (
        f"kilo-loop: warning: {config}: unknown key 'dashboardTheme' ignored (not a kilo-loop setting)"
    )
    broken = write_config(project, {"iterations": "two"})
    failed = subprocess.run(
        [sys.executable, "-m", "kilo_loop", "--list-goals", "--project", str(project)],
        check=False, capture_output=True, text=True, timeout=60,
    )
    assert failed.returncode == 2 and str(broken) in failed.stderr and "'iterations'" in failed.stderr


@pytest.mark.parametrize(
    "text, seconds", [("90", 90.0), ("90s", 90.0), ("10m", 600.0), ("1h30m", 5400.0), ("500ms", 0.5), (" 2 m ", 120.0)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "10 minutes", "1w", "m"])
def test_a_duration_that_does_not_parse_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"not a duration|empty duration"):
        parse_duration(text)


def test_keep_open_for_from_config_and_flag(tmp_path: Path) -> None:
    write_config(tmp_path, {"keepOpenFor": "2m"})
    assert load_settings({}, tmp_path).keep_open_for == 120.0
    assert load_settings({"keep_open_for": "45s"}, tmp_path).keep_open_for == 45.0
    config = write_config(tmp_path, {"keepOpenFor": "a while"})
    with pytest.raises(ConfigError) as err:
        load_settings({}, tmp_path)
    assert str(config) in str(err.value) and "'keepOpenFor'" in str(err.value) and "not a duration" in str(err.value)
    assert format_duration(45) == "45s" and format_duration(600) == "10m" and format_duration(5400) == "1h 30m"


@pytest.mark.parametrize(
    "key, field, text, seconds",
    [("answerTimeout", "answer_timeout", "10m", 600.0), ("maxQuotaWait", "max_quota_wait", "6h", 21600.0),
     ("answerTimeout", "answer_timeout", "off", None), ("maxQuotaWait", "max_quota_wait", 90, 90.0)],
)
def test_every_duration_key_takes_the_flags_durations_in_config(
    tmp_path: Path, key: str, field: str, text: str | int, seconds: float | None
) -> None:
    write_config(tmp_path, {key: text})
    assert getattr(load_settings({}, tmp_path), field) == seconds
    config = write_config(tmp_path, {key: "a while"})
    with pytest.raises(ConfigError) as err:
        load_settings({}, tmp_path)
    assert str(config) in str(err.value) and f"'{key}'" in str(err.value) and "not a duration" in str(err.value)


def test_a_guard_pattern_re2_refuses_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"guardDeny": ["(unclosed"]})
    with pytest.raises(ConfigError) as err:
        load_settings({}, tmp_path)
    assert f"{config}: key 'guardDeny'" in str(err.value) and "not a valid RE2" in str(err.value)
    write_config(tmp_path, {"guardAllow": [""]})
    with pytest.raises(ConfigError, match=r"'guardAllow'.*non-empty"):
        load_settings({}, tmp_path)


def test_a_refused_value_names_the_flag_or_the_variable_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=r"^--iterations: Input should be greater than or equal to 1$"):
        load_settings({"iterations": 0}, tmp_path)
    with pytest.raises(ConfigError, match=r"^--answer-timeout: not a duration"):
        load_settings({"answer_timeout": "soon"}, tmp_path)
    monkeypatch.setenv("KILO_LOOP_MAX_GUARD_BLOCKS", "0")
    with pytest.raises(ConfigError, match=r"^KILO_LOOP_MAX_GUARD_BLOCKS: "):
        load_settings({}, tmp_path)


@pytest.mark.parametrize("variable", ["KILO_LOOP_NOTIFY", "KILO_LOOP_GUARD_DENY", "KILO_LOOP_GUARD_PACKS"])
def test_a_list_or_object_variable_that_is_not_json_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "https://ntfy.sh/topic")
    with pytest.raises(ConfigError, match=rf"^{variable}: expected a JSON value"):
        load_settings({}, tmp_path)
    monkeypatch.delenv(variable)
    monkeypatch.setenv("KILO_LOOP_NOTIFY", '"https://ntfy.sh/a https://ntfy.sh/b"')
    assert load_settings({}, tmp_path).notify == ["https://ntfy.sh/a", "https://ntfy.sh/b"]


def test_a_bad_guard_pattern_stops_the_command_line_before_a_run_directory_exists(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    write_config(project, {"guardDeny": ["(unclosed"]})
    done = subprocess.run(
        [sys.executable, "-m", "kilo_loop", "--dry-run", "--no-confirm", "--no-dashboard", "--hitl", "off",
         "--goal-text", "x", "-n", "1", "-C", str(project)],
        check=False, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "'guardDeny'" in done.stderr
    assert not (project / ".kilocode-loop" / "runs").exists()


@pytest.mark.parametrize("key, value", [("port", 70000), ("iterations", 0), ("maxGuardBlocks", 0)])
def test_an_out_of_range_config_value_names_file_and_key(tmp_path: Path, key: str, value: int) -> None:
    config = write_config(tmp_path, {key: value})
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(config))}: key '{key}': Input should be"):
        load_settings({}, tmp_path)


def test_a_config_json_that_is_a_directory_is_an_error_not_ignored(tmp_path: Path) -> None:
    (tmp_path / ".kilocode-loop" / "config.json").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"config\.json is not a file: move it out of the way"):
        load_settings({}, tmp_path)
