"""The three thresholds: defaults, config.json keys, flags, and a wrong value said plainly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.cli import main
from kilo_loop.errors import ConfigError
from kilo_loop.settings import load_settings


def test_defaults_and_config_keys(tmp_path: Path) -> None:
    defaults = load_settings({}, tmp_path)
    assert (defaults.max_same_failure, defaults.max_repeat_calls, defaults.max_failed_calls) == (3, 8, 12)
    (tmp_path / ".kilocode-loop").mkdir()
    (tmp_path / ".kilocode-loop" / "config.json").write_text(json.dumps(
        {"maxSameFailure": 5, "maxRepeatCalls": 0, "maxFailedCalls": 20}))
    loaded = load_settings({}, tmp_path)
    assert (loaded.max_same_failure, loaded.max_repeat_calls, loaded.max_failed_calls) == (5, 0, 20)
    assert load_settings({"max_same_failure": 2}, tmp_path).max_same_failure == 2


def test_a_negative_threshold_is_refused_with_the_flag_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--max-repeat-calls: must be at least 0"):
        load_settings({"max_repeat_calls": -1}, tmp_path)


def test_the_flags_are_in_the_help_budgets_panel() -> None:
    out = CliRunner().invoke(main, ["--help"], terminal_width=200).output
    budgets = out.split("Budgets", 1)[1].split("Review and questions", 1)[0]
    for flag in ("--max-same-failure", "--max-repeat-calls", "--max-failed-calls"):
        assert flag in budgets
