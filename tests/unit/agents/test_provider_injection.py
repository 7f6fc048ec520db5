"""Provider injection: an OpenAI-compatible endpoint reaches kilo/opencode as `{env:}` references,
never as the key itself (seed 001)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kilo_loop.agent.kilo.backend import KiloBackend
from kilo_loop.agent.kilo.config import child_config_env
from kilo_loop.agent.kilo.provider import endpoint_from, model_ids, provider_injection
from kilo_loop.agent.kilo.runtime import KILO, OPENCODE
from kilo_loop.agent.protocol import AgentPolicy, AgentRequest
from kilo_loop.settings import load_settings

KEY = "sk-test-provider-injection-0123456789"
GLOBAL_KEY = "sk-global-provider-injection-9876543210"


def test_worker_specific_values_win_over_the_global_ones() -> None:
    environ = {"KILO_LOOP_OPENAI_BASE_URL": "http://a/v1", "KILO_LOOP_OPENAI_API_KEY": KEY,
               "OPENAI_BASE_URL": "http://b/v1", "OPENAI_API_KEY": GLOBAL_KEY}
    endpoint = endpoint_from(environ)
    assert endpoint is not None and (endpoint.base_url, endpoint.api_key) == ("http://a/v1", KEY)


def test_global_values_are_the_fallback_and_no_base_url_means_no_endpoint() -> None:
    endpoint = endpoint_from({"OPENAI_BASE_URL": "http://b/v1", "OPENAI_API_KEY": GLOBAL_KEY})
    assert endpoint is not None and (endpoint.base_url, endpoint.api_key) == ("http://b/v1", GLOBAL_KEY)
    assert endpoint_from({"OPENAI_API_KEY": GLOBAL_KEY}) is None
    assert endpoint_from({"KILO_LOOP_OPENAI_BASE_URL": ""}) is None


def test_model_ids_are_the_loop_providers_models_once_each() -> None:
    assert model_ids(["loop/a", None, "other/b", "loop/a", "loop/c"]) == ["a", "c"]


@pytest.mark.parametrize("runtime", [KILO, OPENCODE])
def test_auto_puts_env_references_in_the_inline_config_and_never_the_key(tmp_path: Path, runtime: object) -> None:
    environ = {"KILO_LOOP_OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "KILO_LOOP_OPENAI_API_KEY": KEY}
    name = KILO.name if runtime is KILO else OPENCODE.name
    config = child_config_env(name, tmp_path, environ, guard=True, models=("loop/m1",))
    raw = config.env[KILO.config_env if runtime is KILO else OPENCODE.config_env]
    assert KEY not in raw and "127.0.0.1:9" not in raw
    provider = json.loads(raw)["provider"]["loop"]
    assert provider["options"] == {"baseURL": "{env:KILO_LOOP_OPENAI_BASE_URL}",
                                   "apiKey": "{env:KILO_LOOP_OPENAI_API_KEY}"}
    assert list(provider["models"]) == ["m1"]
    assert "bash" in json.loads(raw)["permission"]  # the guard's rules are still there
    assert KEY not in json.dumps(config.env)  # inherited: the loop's own names are already set


def test_global_values_are_handed_to_the_child_under_the_loop_names_only_in_its_env(tmp_path: Path) -> None:
    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": GLOBAL_KEY}
    config = child_config_env("kilo", tmp_path, environ, guard=False)
    assert config.env["KILO_LOOP_OPENAI_API_KEY"] == GLOBAL_KEY
    assert config.env["KILO_LOOP_OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert GLOBAL_KEY not in config.env["KILO_CONFIG_CONTENT"]


def test_the_users_inline_config_is_merged_and_their_own_loop_provider_kept(tmp_path: Path) -> None:
    user = {"model": "x/y", "provider": {"mine": {"npm": "p"}, "loop": {"npm": "theirs"}}}
    environ = {"KILO_CONFIG_CONTENT": json.dumps(user), "KILO_LOOP_OPENAI_BASE_URL": "http://h/v1"}
    merged = json.loads(child_config_env("kilo", tmp_path, environ, guard=False).env["KILO_CONFIG_CONTENT"])
    assert merged["model"] == "x/y" and merged["snapshot"] is False
    assert merged["provider"] == {"mine": {"npm": "p"}, "loop": {"npm": "theirs"}}


def test_a_broken_user_inline_config_is_left_alone_with_a_note(tmp_path: Path) -> None:
    environ = {"KILO_CONFIG_CONTENT": "{nope", "KILO_LOOP_OPENAI_BASE_URL": "http://h/v1"}
    config = child_config_env("kilo", tmp_path, environ, guard=False)
    assert "KILO_CONFIG_CONTENT" not in config.env
    assert any("provider was not injected" in note for note in config.notes)


def test_no_base_url_injects_no_provider(tmp_path: Path) -> None:
    config = child_config_env("kilo", tmp_path, {"OPENAI_API_KEY": KEY}, guard=False)
    assert "provider" not in json.loads(config.env["KILO_CONFIG_CONTENT"])


def test_legacy_env_sets_the_old_variables_and_no_provider(tmp_path: Path) -> None:
    environ = {"KILO_LOOP_OPENAI_BASE_URL": "http://h/v1", "KILO_LOOP_OPENAI_API_KEY": KEY}
    config = child_config_env("kilo", tmp_path, environ, guard=False, provider_mode="legacy_env")
    assert config.env["KILO_PROVIDER_TYPE"] == "openai"
    assert (config.env["KILO_OPENAI_BASE_URL"], config.env["KILO_OPENAI_API_KEY"]) == ("http://h/v1", KEY)
    assert "provider" not in json.loads(config.env["KILO_CONFIG_CONTENT"])
    assert provider_injection("legacy_env", "opencode", environ).note  # says opencode gets nothing


def test_none_injects_nothing(tmp_path: Path) -> None:
    environ = {"KILO_LOOP_OPENAI_BASE_URL": "http://h/v1", "KILO_LOOP_OPENAI_API_KEY": KEY}
    config = child_config_env("kilo", tmp_path, environ, guard=False, provider_mode="none")
    assert "provider" not in json.loads(config.env["KILO_CONFIG_CONTENT"])
    assert not any(name.startswith(("KILO_OPENAI", "KILO_LOOP_OPENAI")) for name in config.env)


def test_a_base_url_without_a_key_is_a_note() -> None:
    assert provider_injection("auto", "kilo", {"OPENAI_BASE_URL": "http://h/v1"}).note


def test_the_backend_puts_the_key_only_in_the_childs_environment(tmp_path: Path) -> None:
    backend = KiloBackend("kilo", KILO)
    environ = {"OPENAI_BASE_URL": "http://h/v1", "OPENAI_API_KEY": GLOBAL_KEY}
    prepared = backend.prepare(AgentPolicy(project=tmp_path, environ=environ, models=("loop/m",)))
    invocation = backend.invocation(AgentRequest(prompt="p", cwd=tmp_path, title="t", model="loop/m"))
    assert invocation.env["KILO_LOOP_OPENAI_API_KEY"] == GLOBAL_KEY
    assert GLOBAL_KEY not in invocation.env["KILO_CONFIG_CONTENT"]
    assert GLOBAL_KEY not in " ".join(invocation.command) and not any(GLOBAL_KEY in n for n in prepared.notes)


def test_the_mode_is_a_setting_flag_and_env_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILO_LOOP_PROVIDER_CONFIG_MODE", "legacy_env")
    assert load_settings({}, tmp_path).provider_config_mode == "legacy_env"
    assert load_settings({"provider_config_mode": "none"}, tmp_path).provider_config_mode == "none"
    monkeypatch.setenv("KILO_LOOP_PROVIDER_CONFIG_MODE", "bogus")
    with pytest.raises(Exception, match=r"KILO_LOOP_PROVIDER_CONFIG_MODE: Input should be 'auto'"):
        load_settings({}, tmp_path)
