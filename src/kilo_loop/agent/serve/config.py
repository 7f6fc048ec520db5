"""The serve transport's configuration for the child server: permissions that make it ask.

The server reads the same inline config variable as `run` (`KILO_CONFIG_CONTENT` /
`OPENCODE_CONFIG_CONTENT`). The loop rewrites its `permission` so that every
bash call asks (every `allow` becomes `ask`; `"*": "ask"` comes first, since the
last matching rule wins), the user's and the loop's deny rules stay deny (the
glob net of the `run` transport, kept as a second net), and a path outside the
project asks (`external_directory`). When the run has `protect` globs, every edit asks as well,
so a protected file is refused before it is written. Each ask is then decided by the loop
(`broker.PermissionBroker`).

The user's own deny rules — in the project's kilo.json / opencode.json or their
inline config — are collected for the broker too: the CLI merges the project
file under the inline config, which can put our `"*"` after their rules.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kilo_loop.agent.kilo.config import loads_jsonc
from kilo_loop.agent.kilo.runtime import RUNTIMES
from kilo_loop.agent.kilo.runtime import RuntimeName as Runtime

BashRules = tuple[tuple[str, str], ...]


def _rule_map(permission: Any, key: str = "bash") -> dict[str, Any] | str | None:
    """The user's rules for one permission (`bash`, `edit`): a map of pattern → action, or one action."""
    if isinstance(permission, str):
        return permission
    if not isinstance(permission, dict):
        return None
    rules = permission.get(key)
    return rules if isinstance(rules, (dict, str)) else None


def _bash_map(permission: Any) -> dict[str, Any] | str | None:
    return _rule_map(permission, "bash")


def asking_bash_rules(bash: dict[str, Any] | str | None) -> dict[str, str] | str:
    """`"*": "ask"` first, then the existing rules with allow → ask (deny and ask kept).
    The same rewrite serves `edit` (kilo and opencode take a pattern map there too)."""
    if bash == "deny":
        return "deny"  # the user forbids bash altogether; keep it so
    rules: dict[str, str] = {"*": "ask"}
    for pattern, action in (bash.items() if isinstance(bash, dict) else ()):
        if pattern != "*":
            rules[str(pattern)] = "deny" if action == "deny" else "ask"
    if isinstance(bash, dict) and bash.get("*") == "deny":
        rules["*"] = "deny"
    return rules


def serve_config(inline: Mapping[str, Any], ask_edits: bool = False, jailed: bool = False) -> dict[str, Any]:
    """The inline config (as given to `run`, deny globs included) rewritten for the serve transport;
    with `ask_edits` (the run has protect globs) every edit/write/patch asks too. A `jailed` server
    runs no program of the project's itself (formatters, language servers: the agent could have
    written them), only through its shell, whose commands cannot read the server's password."""
    config = dict(inline)
    if jailed:
        config.setdefault("formatter", False)
        config.setdefault("lsp", False)
    permission = config.get("permission")
    merged: dict[str, Any] = dict(permission) if isinstance(permission, dict) else {}
    merged["bash"] = asking_bash_rules(_bash_map(permission))
    merged["external_directory"] = "ask"
    if ask_edits:
        merged["edit"] = asking_bash_rules(_rule_map(permission, "edit"))
    config["permission"] = merged
    return config


def read_inline(runtime: Runtime, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The inline config in `env`, or None when it is not a JSON object (passed on as it is)."""
    raw = env.get(RUNTIMES[runtime].config_env, "")
    if not raw.strip():
        return {}
    try:
        parsed = loads_jsonc(raw)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def serve_env(runtime: Runtime, env: Mapping[str, str], ask_edits: bool = False,
              jailed: bool = False) -> dict[str, str]:
    """`env` with its inline config made to ask (unchanged when the user's config cannot be read)."""
    inline = read_inline(runtime, env)
    if inline is None:
        return dict(env)
    return {**env, RUNTIMES[runtime].config_env: json.dumps(serve_config(inline, ask_edits, jailed))}


def _deny_rules(config: Any) -> list[tuple[str, str]]:
    bash = _bash_map(config.get("permission")) if isinstance(config, dict) else None
    if isinstance(bash, str):
        return [("*", bash)]
    return [(str(p), str(a)) for p, a in bash.items()] if isinstance(bash, dict) else []


def user_bash_rules(runtime: Runtime, project: Path, user_env: Mapping[str, str]) -> BashRules:
    """The user's own bash rules, project files first, their inline config last (it wins)."""
    rules: list[tuple[str, str]] = []
    for name in RUNTIMES[runtime].project_configs:
        path = project / name
        try:
            rules += _deny_rules(loads_jsonc(path.read_text(encoding="utf-8"))) if path.is_file() else []
        except (OSError, UnicodeDecodeError, ValueError):
            continue  # an unreadable project config is reported by the run transport's injection note
    rules += _deny_rules(read_inline(runtime, user_env) or {})
    return tuple(rules)
