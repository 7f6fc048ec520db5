"""Seed 001's last items: the provider's API spec is selectable with the seed's fallback (the loop's
variable, then the global one), and KILO_LOOP_MODE / config `mode` are the agent's old names, with a
disagreement named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kilo_loop.agent.kilo.provider import DEFAULT_PACKAGE, api_spec_package, provider_injection
from kilo_loop.settings import load_settings, mode_alias

BASE = {"KILO_LOOP_OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "KILO_LOOP_OPENAI_API_KEY": "k"}


@pytest.mark.parametrize(("environ", "package"), [
    ({}, DEFAULT_PACKAGE),
    ({"KILO_LOOP_OPENAI_API_SPEC": "responses"}, "@ai-sdk/openai"),
    ({"OPENAI_API_SPEC": "responses"}, "@ai-sdk/openai"),  # the global value is the fallback
    ({"KILO_LOOP_OPENAI_API_SPEC": "chat_completions", "OPENAI_API_SPEC": "responses"}, DEFAULT_PACKAGE),
    ({"KILO_LOOP_OPENAI_API_SPEC": "chat-completions"}, DEFAULT_PACKAGE),
    ({"KILO_LOOP_OPENAI_API_SPEC": "@acme/ai-provider"}, "@acme/ai-provider"),
])
def test_the_api_spec_picks_the_provider_package(environ: dict[str, str], package: str) -> None:
    assert api_spec_package(environ) == (package, None)
    injected = provider_injection("auto", "kilo", {**BASE, **environ}, ("loop/m",))
    assert injected.config["provider"]["loop"]["npm"] == package


def test_an_unknown_api_spec_falls_back_with_a_note_naming_the_variable() -> None:
    package, note = api_spec_package({"OPENAI_API_SPEC": "soap"})
    assert package == DEFAULT_PACKAGE and note is not None and "OPENAI_API_SPEC='soap'" in note
    injected = provider_injection("auto", "kilo", {**BASE, "OPENAI_API_SPEC": "soap"})
    assert injected.note is not None and "chat_completions" in injected.note


def test_kilo_loop_mode_is_the_old_name_of_kilo_loop_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KILO_LOOP_AGENT", raising=False)
    monkeypatch.setenv("KILO_LOOP_MODE", "architect")
    warnings: list[str] = []
    assert load_settings({}, tmp_path, warn=warnings.append).agent == "architect" and warnings == []
    assert load_settings({"agent": "code"}, tmp_path, warn=warnings.append).agent == "code"  # the flag wins


def test_mode_over_config_json_as_the_environment_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".kilocode-loop").mkdir()
    (tmp_path / ".kilocode-loop" / "config.json").write_text(json.dumps({"agent": "from-config"}))
    monkeypatch.delenv("KILO_LOOP_AGENT", raising=False)
    monkeypatch.setenv("KILO_LOOP_MODE", "from-env")
    assert load_settings({}, tmp_path, warn=lambda _line: None).agent == "from-env"


def test_mode_and_agent_that_disagree_are_named_and_agent_wins(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILO_LOOP_MODE", "old")
    monkeypatch.setenv("KILO_LOOP_AGENT", "new")
    warnings: list[str] = []
    assert load_settings({}, tmp_path, warn=warnings.append).agent == "new"
    assert warnings == ["kilo-loop: warning: KILO_LOOP_MODE='old' and KILO_LOOP_AGENT='new' disagree; "
                        "KILO_LOOP_AGENT wins (KILO_LOOP_MODE is its old name: unset it)"]
    assert mode_alias({"KILO_LOOP_MODE": "same", "KILO_LOOP_AGENT": "same"}) == (None, None)


@pytest.mark.parametrize("order", [("mode", "agent"), ("agent", "mode")])
def test_config_keys_mode_and_agent_that_disagree_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            order: tuple[str, str]) -> None:
    monkeypatch.delenv("KILO_LOOP_MODE", raising=False)
    monkeypatch.delenv("KILO_LOOP_AGENT", raising=False)
    (tmp_path / ".kilocode-loop").mkdir()
    values = {"mode": "old", "agent": "new"}
    (tmp_path / ".kilocode-loop" / "config.json").write_text(json.dumps({k: values[k] for k in order}))
    warnings: list[str] = []
    assert load_settings({}, tmp_path, warn=warnings.append).agent == "new"
    assert len(warnings) == 1 and "keys 'mode' ('old') and 'agent' ('new') disagree; 'agent' wins" in warnings[0]
