"""The pre-execution layer: deny rules merged into the child CLI's inline config."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kilo_loop.safety.guard_config import (
    allow_exceptions,
    bash_rules,
    deny_patterns,
    inline_config_env,
    loads_jsonc,
    project_sets_scalar_bash_permission,
)


def wildcard(pattern: str) -> re.Pattern[str]:
    """The CLIs' permission wildcard: `*` any run, `?` one character, the rest literal, whole string."""
    body = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.compile(body, re.DOTALL)


def action(rules: dict[str, Any], command: str) -> str:
    """Last matching rule wins, as in kilo/opencode."""
    matched = [value for pattern, value in rules.items() if wildcard(pattern).fullmatch(command)]
    return matched[-1] if matched else "ask"


def injected(env: dict[str, str], key: str = "KILO_CONFIG_CONTENT") -> dict[str, Any]:
    config = json.loads(env[key])
    assert isinstance(config, dict)
    return config


@pytest.mark.parametrize("command", [
    "git commit -m 'x'", "git commit --amend", "git push", "git push origin main", "git push --force",
    "git reset --hard", "git reset --hard HEAD~2", "git clean -f", "git clean -fdx", "git clean --force",
    "npm publish", "npm publish --access public", "pnpm publish", "pnpm -r publish",
    "git filter-branch --tree-filter x HEAD", "git filter-repo --invert-paths", "git reflog expire --all",
    "dd if=/dev/zero of=/dev/sda", "dd if=x.img of=/dev/nvme0n1 bs=4M", "mkfs.ext4 /dev/sdb1", "mkfs -t xfs x",
    "echo x > /dev/sda",
    "rm -rf ~", "rm -rf ~/", "rm -rf ~/projects", "rm -rf $HOME", "rm -rf $HOME/x", "rm -fr /home/me",
    "rm -rf /etc", "rm -rf /etc/nginx", "rm -r /usr/local", "rm -Rf /opt/app", "rm -rf /root", "rm -rf /boot",
    "rm -rf /srv/www", "rm -rf .git", "rm -rf .git/", "rm -rf ./.git", "rm -r -f /", "rm --recursive /etc",
    "rm -rf build /etc", "sudo rm -rf /", "sudo rm -rf ~", "sudo git push",
    "git checkout -- .", "git restore .", "kubectl delete pod x", "terraform destroy", "docker system prune -af",
    "lerna publish", "changeset publish", "shutdown -h now", "reboot", "kill -9 -1", "dropdb prod",
])
def test_destructive_commands_are_denied_by_the_cli_rules(command: str) -> None:
    assert action(bash_rules(), command) == "deny"


@pytest.mark.parametrize("command", [
    "git status", "git log --oneline", "git diff", "git add -A", "git checkout -b x", "git clean -n",
    "npm install", "npm test", "pnpm build", "ls ~", "cat /etc/hosts", "rm -rf /tmp/build", "rm -rf node_modules",
    "rm -rf build/.git", "rm -f .gitignore", "rm file.txt", "dd if=/dev/zero of=/dev/null count=1",
    "echo x > /dev/null", "rm -rf /tmp/home-copy",
    "npm publish --dry-run", "cargo publish --dry-run", "git checkout main", "kubectl get pods", "terraform plan",
])
def test_ordinary_commands_stay_allowed(command: str) -> None:
    assert action(bash_rules(), command) == "allow"


def test_catch_all_comes_first_and_denies_after() -> None:
    rules = bash_rules()
    keys = list(rules)
    assert keys[0] == "*" and rules["*"] == "allow"
    denies = list(deny_patterns())
    assert keys[1:len(denies) + 1] == denies and all(rules[k] == "deny" for k in denies)
    assert keys[len(denies) + 1:] == list(allow_exceptions()) and all(rules[k] == "allow" for k in keys[len(denies) + 1:])


def test_existing_rules_are_kept_in_order_and_ours_appended() -> None:
    rules = bash_rules({"*": "ask", "npm *": "allow", "git push*": "allow"})
    assert list(rules)[:2] == ["*", "npm *"] and rules["*"] == "ask"
    assert rules["git push*"] == "deny" and list(rules).index("git push*") > 1
    assert action(rules, "ls") == "ask" and action(rules, "npm test") == "allow"
    assert action(rules, "git push origin x") == "deny"
    assert "*" not in bash_rules(catch_all=False)


# ----------------------------------------------------------------------------- the env entry
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
