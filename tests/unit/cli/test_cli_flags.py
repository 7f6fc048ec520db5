"""A flag typed on a one-plan command line that the run cannot act on is named, not swallowed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.cli import ignored_flags, main
from kilo_loop.settings import load_settings


def warnings_for(typed: set[str], values: dict[str, object], project: Path) -> list[str]:
    return [line.removeprefix("kilo-loop: warning: ") for line in ignored_flags(typed, load_settings(values, project))]


def test_flags_whose_feature_is_off_are_named(tmp_path: Path) -> None:
    typed = {"review_agent", "max_retries", "retry_delay", "guard_stop", "max_guard_blocks", "host", "keep_open"}
    values = {"review_agent": "critic", "max_retries": 5, "retry_delay": 10, "guard_stop": True, "max_guard_blocks": 2,
              "host": "127.0.0.1", "keep_open": True, "retry": False, "guard": False, "dashboard": False}
    assert warnings_for(typed | {"retry", "guard", "dashboard"}, values, tmp_path) == [
        "--host has no effect with the dashboard off",
        "--keep-open has no effect with the dashboard off",
        "--review-agent has no effect without --review or --review-wave",
        "--max-retries has no effect with --no-retry",
        "--retry-delay has no effect with --no-retry",
        "--guard-stop has no effect with --no-guard",
        "--max-guard-blocks has no effect with --no-guard",
    ]


def test_nothing_is_said_when_the_feature_is_on_or_the_flag_was_not_typed(tmp_path: Path) -> None:
    typed = {"review_agent", "max_retries", "guard_stop", "port"}
    values = {"review_agent": "critic", "review_wave": True, "max_retries": 5, "guard_stop": True, "port": 8000}
    assert warnings_for(typed, values, tmp_path) == []
    assert warnings_for(set(), {"retry": False, "guard": False, "dashboard": False}, tmp_path) == []
    (tmp_path / ".kilocode-loop").mkdir()
    (tmp_path / ".kilocode-loop" / "config.json").write_text('{"review": true}')
    assert warnings_for({"review_gate"}, {"review_gate": "off"}, tmp_path) == []


def test_merge_on_one_plan_is_named(tmp_path: Path) -> None:
    assert warnings_for({"merge"}, {}, tmp_path) == [
        "--merge has no effect on one plan (it applies to several --goal or --parallel)"]


@pytest.mark.parametrize("args", [
    ["doctor", "-C", "{missing}"], ["report", "-C", "{missing}"], ["revert", "last", "--before", "1", "-C", "{missing}"],
    ["guard", "packs", "--cwd", "{missing}"],
])
def test_a_project_directory_that_is_not_there_is_refused(tmp_path: Path, args: list[str]) -> None:
    missing = str(tmp_path / "nope")
    result = CliRunner().invoke(main, [arg.format(missing=missing) for arg in args])
    assert result.exit_code == 2, result.output
    assert f"Directory '{missing}' does not exist" in result.output


def test_a_flag_that_loses_to_another_typed_with_it_is_named(tmp_path: Path) -> None:
    values = {"keep_open": True, "keep_open_for": "10m", "lan": True, "local": True, "resume": "last",
              "run_id": "mine"}
    assert warnings_for(set(values), values, tmp_path) == [
        "--keep-open-for has no effect with --keep-open, which keeps the dashboard up until Ctrl+C",
        "--lan has no effect with --local, which binds loopback only",
        "--run-id has no effect with --resume, which keeps the resumed run's id",
    ]
    off = {**values, "dashboard": False}  # said once: the dashboard's own flags do nothing at all
    assert warnings_for(set(off), off, tmp_path) == [
        *(f"--{name} has no effect with the dashboard off" for name in ("lan", "local", "keep-open", "keep-open-for")),
        "--run-id has no effect with --resume, which keeps the resumed run's id",
    ]
    assert warnings_for({"keep_open_for", "lan"}, {"keep_open_for": "10m", "lan": True}, tmp_path) == []
    host = {"host": "127.0.0.1", "lan": True}
    assert warnings_for(set(host), host, tmp_path) == ["--lan has no effect with --host, which names the address to bind"]
    assert warnings_for({"session_mode", "shared_context", "mode", "agent"},
                        {"shared_context": False, "agent": "build"}, tmp_path) == [
        "--session-mode has no effect with --no-shared-context, its newer name",
        "--mode has no effect with --agent, its newer name",
    ]
    assert warnings_for({*host, "local"}, {**host, "local": True}, tmp_path) == [
        "--lan has no effect with --local, which binds loopback only",
        "--host has no effect with --local, which binds loopback only",
    ]


def test_flags_only_a_real_agent_acts_on_are_named_in_a_dry_run(tmp_path: Path) -> None:
    values = {"verify": "pytest -q", "verify_timeout_minutes": 2.0, "runtime": "claude", "transport": "run",
              "isolate_home": True, "usage_db": False, "provider_config_mode": "none", "thinking": True, "auto": False}
    assert warnings_for(set(values), {**values, "dry_run": True}, tmp_path) == [
        f"--{name} has no effect in a dry run (the simulated agent runs no command)"
        for name in ("verify", "verify-timeout-minutes", "runtime", "transport", "isolate-home", "no-usage-db",
                     "provider-config-mode", "thinking", "no-auto")]
    assert warnings_for(set(values), values, tmp_path) == []


@pytest.mark.parametrize("word", ["plan.md", "goal.json"])
def test_a_goal_file_typed_without_goal_says_to_name_it_with_goal(word: str) -> None:
    result = CliRunner().invoke(main, [word, "--dry-run"])
    assert result.exit_code == 2, result.output
    assert f"No such command '{word}'; to run a plan, name it with --goal: kilo-loop --goal {word}" in result.output
    other = CliRunner().invoke(main, ["reprot"])
    assert other.exit_code == 2 and "No such command 'reprot'." in other.output
