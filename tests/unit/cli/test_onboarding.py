"""`kilo-loop init`'s pure decisions: the config it writes, the command it prints, how a CLI's login
is read from what the CLI says."""

from __future__ import annotations

from pathlib import Path

from kilo_loop.onboarding.choices import (
    Choices,
    config_document,
    conflicts,
    default_runtime,
    first_run_command,
)
from kilo_loop.onboarding.login import credentials_listed, from_auth_list, from_environment, from_exit_status

# `kilo auth list` as kilo 7.7.7 prints it with no login (colour codes included).
KILO_AUTH_LIST_EMPTY = "\x1b[0m\n┌  Credentials \x1b[90m~/.local/share/kilo/auth.json\n│\n└  0 credentials\n"


def test_the_first_installed_cli_is_the_default_and_kilo_when_none_is() -> None:
    assert default_runtime(["gemini", "claude"]) == "claude"
    assert default_runtime([]) == "kilo"


def test_config_holds_the_choices_and_keeps_other_keys() -> None:
    chosen = Choices(runtime="claude", model="sonnet", max_cost=5.0, dashboard=False)
    assert config_document(chosen) == {"runtime": "claude", "model": "sonnet", "maxCost": 5.0, "dashboard": False}
    kept = config_document(Choices(runtime="kilo"), {"verify": "pytest -q", "model": "old", "maxCost": 2})
    assert kept == {"verify": "pytest -q", "runtime": "kilo", "dashboard": True}


def test_the_printed_command(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    assert first_run_command(".kilo/plans/x.md", tmp_path, tmp_path, "kilo", False, False) == \
        "kilo-loop --goal .kilo/plans/x.md"
    assert first_run_command(".kilo/plans/x.md", tmp_path, other, "kilo", False, False) == \
        f"kilo-loop -C {tmp_path} --goal .kilo/plans/x.md"
    assert first_run_command("p.md", tmp_path, tmp_path, "claude", True, False).startswith("IS_SANDBOX=1 kilo-loop")
    assert not first_run_command("p.md", tmp_path, tmp_path, "claude", True, True).startswith("IS_SANDBOX")
    assert "--goal-text" in first_run_command(None, tmp_path, tmp_path, "kilo", False, False)


def test_existing_files_conflict_unless_forced(tmp_path: Path) -> None:
    there, absent = tmp_path / "config.json", tmp_path / "plan.md"
    there.write_text("{}")
    assert conflicts([there, absent], force=False) == [there]
    assert conflicts([there, absent], force=True) == []


def test_kilo_auth_list_is_read() -> None:
    assert credentials_listed(KILO_AUTH_LIST_EMPTY) == 0
    assert from_auth_list(KILO_AUTH_LIST_EMPTY).status == "missing"
    assert from_auth_list("└  2 credentials\n").status == "ok"
    assert from_auth_list(None).status == "unknown"


def test_a_key_or_endpoint_in_the_environment_is_enough() -> None:
    state = from_environment("kilo", {"KILO_LOOP_OPENAI_BASE_URL": "http://127.0.0.1:1/v1"})
    assert state is not None and state.status == "ok" and "KILO_LOOP_OPENAI_BASE_URL" in state.detail
    assert from_environment("claude", {"OPENAI_API_KEY": "x"}) is None


def test_exit_status_logins() -> None:
    assert from_exit_status(True, "auth status").status == "ok"
    missing = from_exit_status(False, "auth status")
    assert missing.status == "missing" and "claude auth login" in missing.fix("claude")
    assert from_exit_status(None, "login status").status == "unknown"
