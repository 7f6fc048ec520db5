"""The kilo/opencode inline config: the guard's deny rules merged into the child's config, snapshots off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kilo_loop.agent.kilo.config import (
    child_config_env,
    inline_config_env,
    loads_jsonc,
    project_sets_scalar_bash_permission,
    snapshots_off,
)


def injected(env: dict[str, str], key: str = "KILO_CONFIG_CONTENT") -> dict[str, Any]:
    config = json.loads(env[key])
    assert isinstance(config, dict)
    return config


def test_no_user_config_injects_rules(tmp_path: Path) -> None:
    result = inline_config_env("kilo", tmp_path, {})
    assert result.injected and result.note is None
    assert list(result.env) == ["KILO_CONFIG_CONTENT"]
    bash = injected(result.env)["permission"]["bash"]
    assert next(iter(bash.items())) == ("*", "allow") and bash["git push*"] == "deny"


def test_opencode_uses_its_own_variable(tmp_path: Path) -> None:
    result = inline_config_env("opencode", tmp_path, {"KILO_CONFIG_CONTENT": "{}"})
    assert list(result.env) == ["OPENCODE_CONFIG_CONTENT"]
    assert injected(result.env, "OPENCODE_CONFIG_CONTENT")["permission"]["bash"]["git commit*"] == "deny"


def test_user_inline_config_is_merged_not_dropped(tmp_path: Path) -> None:
    user = {"model": "anthropic/x", "permission": {"edit": "deny", "bash": {"*": "ask", "git status": "allow"}},
            "provider": {"p": {"options": {"baseURL": "http://127.0.0.1:1"}}}}
    result = inline_config_env("kilo", tmp_path, {"KILO_CONFIG_CONTENT": json.dumps(user)})
    merged = injected(result.env)
    assert merged["model"] == "anthropic/x" and merged["provider"] == user["provider"]
    assert merged["permission"]["edit"] == "deny"
    bash = merged["permission"]["bash"]
    assert list(bash)[:2] == ["*", "git status"] and bash["*"] == "ask"
    assert bash["npm publish*"] == "deny"


def test_user_inline_config_may_be_jsonc(tmp_path: Path) -> None:
    raw = '{\n // the model\n "model": "m", /* block */ "permission": {"edit": "ask",},\n}'
    merged = injected(inline_config_env("kilo", tmp_path, {"KILO_CONFIG_CONTENT": raw}).env)
    assert merged["model"] == "m" and merged["permission"]["edit"] == "ask"


@pytest.mark.parametrize(("raw", "why"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"permission": "allow"}', "scalar"),
    ('{"permission": {"bash": "ask"}}', "scalar"),
    ('{"permission": {"bash": ["x"]}}', "not a map"),
])
def test_user_config_we_cannot_extend_is_passed_on_unchanged(tmp_path: Path, raw: str, why: str) -> None:
    result = inline_config_env("kilo", tmp_path, {"KILO_CONFIG_CONTENT": raw})
    assert result.env == {"KILO_CONFIG_CONTENT": raw}
    assert not result.injected
    assert result.note is not None and "KILO_CONFIG_CONTENT" in result.note and why in result.note


@pytest.mark.parametrize(("runtime", "name", "content"), [
    ("kilo", "kilo.json", {"permission": {"bash": "ask"}}),
    ("kilo", ".kilo/kilo.json", {"permission": {"bash": "deny"}}),
    ("kilo", "kilo.json", {"permission": "ask"}),
    ("opencode", "opencode.json", {"permission": {"bash": "allow"}}),
    ("opencode", ".opencode/opencode.json", {"permission": {"bash": "ask"}}),
])
def test_project_scalar_bash_permission_skips_injection(tmp_path: Path, runtime: str, name: str,
                                                         content: dict[str, Any]) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content), encoding="utf-8")
    assert project_sets_scalar_bash_permission(runtime, tmp_path)  # type: ignore[arg-type]
    result = inline_config_env(runtime, tmp_path, {})  # type: ignore[arg-type]
    assert result.env == {} and not result.injected
    assert result.note is not None and str(path) in result.note
    user = '{"model": "m"}'
    key = "KILO_CONFIG_CONTENT" if runtime == "kilo" else "OPENCODE_CONFIG_CONTENT"
    assert inline_config_env(runtime, tmp_path, {key: user}).env == {key: user}  # type: ignore[arg-type]


def test_other_runtime_files_do_not_count(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_text('{"permission": {"bash": "ask"}}', encoding="utf-8")
    assert not project_sets_scalar_bash_permission("kilo", tmp_path)
    assert inline_config_env("kilo", tmp_path, {}).injected


def test_project_bash_map_with_catch_all_keeps_its_catch_all(tmp_path: Path) -> None:
    (tmp_path / "kilo.json").write_text('// project\n{"permission": {"bash": {"*": "ask", "ls": "allow",},}}',
                                        encoding="utf-8")
    assert not project_sets_scalar_bash_permission("kilo", tmp_path)
    bash = injected(inline_config_env("kilo", tmp_path, {}).env)["permission"]["bash"]
    assert "*" not in bash and bash["git push*"] == "deny"


def test_unreadable_project_config_injects_without_catch_all(tmp_path: Path) -> None:
    (tmp_path / "kilo.json").write_text("{broken", encoding="utf-8")
    result = inline_config_env("kilo", tmp_path, {})
    assert result.injected and result.note is not None and "kilo.json" in result.note
    assert "*" not in injected(result.env)["permission"]["bash"]


def test_loads_jsonc_keeps_comment_markers_inside_strings() -> None:
    assert loads_jsonc('{"url": "http://x/*y*/", "a": [1, 2,], // c\n "b": "\\"//"}') == {
        "url": "http://x/*y*/", "a": [1, 2], "b": '"//'}
    with pytest.raises(ValueError):
        loads_jsonc("{")


def test_loads_jsonc_reads_plain_json_without_the_slow_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    import json5

    text = json.dumps({"permission": {"bash": {"rm -rf *": "deny", "*": "allow"}}, "n": [1.5, None, True]})
    expected = json5.loads(text)
    monkeypatch.setattr(json5, "loads", lambda _text: pytest.fail("json5 used for plain JSON"))
    assert loads_jsonc(text) == expected


def test_kilo_snapshots_are_turned_off_unless_the_user_chose() -> None:
    merged = snapshots_off("kilo", {"KILO_CONFIG_CONTENT": '{"permission": {"bash": {"*": "allow"}}}'}, {})
    assert json.loads(merged["KILO_CONFIG_CONTENT"]) == {"permission": {"bash": {"*": "allow"}}, "snapshot": False}
    user = {"KILO_CONFIG_CONTENT": '{"snapshot": true}'}
    assert snapshots_off("kilo", {}, user) == {}
    assert json.loads(snapshots_off("kilo", {}, {})["KILO_CONFIG_CONTENT"]) == {"snapshot": False}
    assert snapshots_off("opencode", {}, {}) == {}
    assert snapshots_off("kilo", {}, {"KILO_CONFIG_CONTENT": "{broken"}) == {}


def test_child_config_with_the_guard_off_only_turns_snapshots_off(tmp_path: Path) -> None:
    off = child_config_env("kilo", tmp_path, {}, guard=False)
    assert json.loads(off.env["KILO_CONFIG_CONTENT"]) == {"snapshot": False} and off.notes == ()
    assert child_config_env("opencode", tmp_path, {}, guard=False).env == {}
    on = child_config_env("kilo", tmp_path, {}, guard=True)
    config = json.loads(on.env["KILO_CONFIG_CONTENT"])
    assert config["snapshot"] is False and config["permission"]["bash"]["git push*"] == "deny"


def test_child_config_carries_the_injection_note(tmp_path: Path) -> None:
    (tmp_path / "kilo.json").write_text('{"permission": "ask"}', encoding="utf-8")
    result = child_config_env("kilo", tmp_path, {}, guard=True)
    assert result.notes and "kilo.json" in result.notes[0]
    assert json.loads(result.env["KILO_CONFIG_CONTENT"]) == {"snapshot": False}
