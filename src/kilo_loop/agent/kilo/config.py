"""The child CLI's inline config (`KILO_CONFIG_CONTENT` / `OPENCODE_CONFIG_CONTENT`), built in one place.

What goes in: the guard's `permission.bash` deny rules (when the loop's guard is on; the
rules themselves are data in `guard.cli_rules`) and, for kilo, `"snapshot": false`.
Provider injection (issue 11, seed 001) belongs in `child_config_env` too.

The map is merged into the inline config the user may already have set: their
keys and bash rules are kept (ours are appended, so ours win on the same
pattern). Nothing is injected when the project's own config
(`kilo.json`, `.kilo/kilo.json` / `opencode.json`, `.opencode/opencode.json`) or the
user's inline config sets a scalar `permission` / `permission.bash`: the
project chose a blanket bash policy, and a map with `"*": "allow"` would
loosen it. When the project has a `permission.bash` map with its own `"*"`,
ours is left out so theirs stays in force. A malformed user inline config is
passed through unchanged, with a note saying why nothing was injected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5

from kilo_loop.agent.kilo.provider import ProviderConfigMode, merge_provider, provider_injection
from kilo_loop.agent.kilo.runtime import RUNTIMES, RuntimeName
from kilo_loop.guard.cli_rules import bash_rules


# ----------------------------------------------------------------------------- reading configs
def loads_jsonc(text: str) -> Any:
    """Parse JSON with `//` and `/* */` comments and trailing commas (the CLIs accept both).

    json5 is a superset of that; a syntax error is a ValueError like json's. Plain JSON (what the
    loop itself writes into the inline config, read again before every serve session) takes the C
    parser first: json5's pure-Python one costs milliseconds on the guard's deny rules."""
    try:
        return json.loads(text)
    except ValueError:
        return json5.loads(text)


def _bash_setting(config: Mapping[str, Any]) -> tuple[str, Any]:
    """`("scalar", value)`, `("map", rules)`, `("none", None)` or `("invalid", value)` for permission.bash."""
    permission = config.get("permission")
    if permission is None:
        return "none", None
    if isinstance(permission, str):
        return "scalar", permission
    if not isinstance(permission, dict):
        return "invalid", permission
    bash = permission.get("bash")
    if bash is None:
        return "none", None
    if isinstance(bash, str):
        return "scalar", bash
    return ("map", bash) if isinstance(bash, dict) else ("invalid", bash)


@dataclass(frozen=True)
class _ProjectBash:
    scalar_in: Path | None = None
    has_catch_all: bool = False
    unreadable: list[str] = field(default_factory=list)


def _project_bash(runtime: RuntimeName, project: Path) -> _ProjectBash:
    catch_all = False
    problems: list[str] = []
    for name in RUNTIMES[runtime].project_configs:
        path = project / name
        if not path.is_file():
            continue
        try:
            config = loads_jsonc(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems.append(f"{path}: {exc}")
            continue
        if not isinstance(config, dict):
            problems.append(f"{path}: not a JSON object")
            continue
        kind, value = _bash_setting(config)
        if kind == "scalar":
            return _ProjectBash(scalar_in=path)
        catch_all = catch_all or (kind == "map" and "*" in value)
    return _ProjectBash(has_catch_all=catch_all, unreadable=problems)


def project_sets_scalar_bash_permission(runtime: RuntimeName, project: Path) -> bool:
    """True when the project's kilo/opencode config sets `permission` or `permission.bash` to one action."""
    return _project_bash(runtime, project).scalar_in is not None


# ----------------------------------------------------------------------------- the env entry
@dataclass(frozen=True)
class InlineConfig:
    """The env entries to set on the child (`env`), whether deny rules are in them, and why not."""

    env: dict[str, str]
    injected: bool
    note: str | None = None


def inline_config_env(runtime: RuntimeName, project: Path, environ: Mapping[str, str]) -> InlineConfig:
    """The child's inline-config env entry with the guard's deny rules merged in (or left alone, with a note)."""
    key = RUNTIMES[runtime].config_env
    raw = environ.get(key)
    unchanged = {key: raw} if raw is not None else {}
    project_bash = _project_bash(runtime, project)
    if project_bash.scalar_in is not None:
        return InlineConfig(unchanged, False, f"{project_bash.scalar_in} sets a scalar permission.bash: the guard's "
                            "pre-execution deny rules are not injected (the runtime guard still applies)")
    user: Any = {}
    if raw is not None and raw.strip():
        try:
            user = loads_jsonc(raw)
        except ValueError as exc:
            return InlineConfig(unchanged, False, f"{key} is not valid JSON ({exc}); passed on unchanged, "
                                "without the guard's pre-execution deny rules")
    if not isinstance(user, dict):
        return InlineConfig(unchanged, False, f"{key} is not a JSON object; passed on unchanged, "
                            "without the guard's pre-execution deny rules")
    kind, rules = _bash_setting(user)
    if kind in ("scalar", "invalid"):
        what = "sets a scalar permission" if kind == "scalar" else "has a permission.bash that is not a map"
        return InlineConfig(unchanged, False, f"{key} {what}; passed on unchanged, "
                            "without the guard's pre-execution deny rules")
    permission = dict(user.get("permission") or {})
    permission["bash"] = bash_rules(rules, catch_all=not project_bash.has_catch_all and not project_bash.unreadable)
    merged = {**user, "permission": permission}
    note = None
    if project_bash.unreadable:
        note = ("could not read " + "; ".join(project_bash.unreadable)
                + ": guard deny rules injected without a catch-all allow")
    return InlineConfig({key: json.dumps(merged)}, True, note)


def snapshots_off(runtime: RuntimeName, env: dict[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Turn off kilo's own snapshots in the child's inline config (unless the user set them).

    The loop checkpoints every iteration itself, and a kilo killed mid-session (guard hit, Stop,
    budget, timeout) leaves a snapshot lock behind that stalls the next session for about 2 minutes.
    """
    if runtime != "kilo":
        return env
    key = RUNTIMES[runtime].config_env
    raw = env.get(key, environ.get(key, ""))
    try:
        config = loads_jsonc(raw) if raw.strip() else {}
    except ValueError:
        return env  # the user's own broken config is passed on as it is
    if not isinstance(config, dict) or "snapshot" in config:
        return env
    return {**env, key: json.dumps({**config, "snapshot": False})}


@dataclass(frozen=True)
class ChildConfig:
    env: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def with_provider(runtime: RuntimeName, env: dict[str, str], environ: Mapping[str, str],
                  mode: ProviderConfigMode, models: tuple[str, ...]) -> tuple[dict[str, str], str | None]:
    """Provider injection (see `agent.kilo.provider`) merged into the inline config being built."""
    injection = provider_injection(mode, runtime, environ, models)
    if not injection.config:
        return {**env, **injection.env}, injection.note
    key = RUNTIMES[runtime].config_env
    raw = env.get(key, environ.get(key, ""))
    try:
        config = loads_jsonc(raw) if raw.strip() else {}
    except ValueError:
        config = None
    if not isinstance(config, dict):
        return env, f"{key} is not a JSON object: the OpenAI-compatible provider was not injected"
    merged = merge_provider(config, injection.config["provider"])
    return {**env, **injection.env, key: json.dumps(merged)}, injection.note


def child_config_env(runtime: RuntimeName, project: Path, environ: Mapping[str, str], guard: bool,
                     provider_mode: ProviderConfigMode = "auto", models: tuple[str, ...] = ()) -> ChildConfig:
    """Every inline-config entry the child gets, in one function: guard rules, snapshots, provider."""
    env: dict[str, str] = {}
    notes: list[str] = []
    if guard:
        inline = inline_config_env(runtime, project, environ)
        env.update(inline.env)
        if inline.note:
            notes.append(inline.note)
    env, note = with_provider(runtime, snapshots_off(runtime, env, environ), environ, provider_mode, models)
    if note:
        notes.append(note)
    return ChildConfig(env, tuple(notes))
