"""The project's own guard patterns (guardDeny / guardAllow), read without the settings stack.

`kilo-loop guard check` and `guard hook` (a Claude Code PreToolUse hook, run before every Bash
call) need two keys of the configuration, not pydantic: this reads them with the same precedence
and spelling rules as `kilo_loop.settings` — a `KILO_LOOP_GUARD_DENY` / `KILO_LOOP_GUARD_ALLOW`
variable (any case; a JSON list, or a JSON string split on spaces and commas) over the key in
`<project>/.kilocode-loop/config.json` (camelCase or snake_case; a list of strings, or one string
split the same way); and guardPacks, an object of pack name -> true/false. tests/unit/guard/test_guard_patterns.py checks it agrees with `load_settings`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from kilo_loop.errors import ConfigError
from kilo_loop.project_config import config_path, read_config_file

_ENV_PREFIX = "kilo_loop_"
_KEYS = ("guard_deny", "guard_allow", "guard_packs")
Value = tuple[str, ...] | tuple[tuple[str, bool], ...]


class GuardPatterns(NamedTuple):
    deny: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    packs: tuple[tuple[str, bool], ...] = ()  # rule packs switched on or off by name (guardPacks)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).replace("-", "_").lower()


def split_patterns(value: object, where: str) -> tuple[str, ...]:
    """A list of strings as is; one string split on white space and commas; anything else is an error."""
    if isinstance(value, str):
        return tuple(item for item in re.split(r"[\s,]+", value) if item)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ConfigError(f"{where}: expected a list of strings (got {value!r})")


def pack_switches(value: object, where: str) -> tuple[tuple[str, bool], ...]:
    """guardPacks: an object of pack name -> true/false (unknown names are the guard's to refuse)."""
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, bool) for k, v in value.items()):
        return tuple(sorted(value.items()))
    raise ConfigError(f"{where}: expected an object of pack names to true/false (got {value!r})")


def _parsed(key: str, value: object, where: str) -> Value:
    return pack_switches(value, where) if key == "guard_packs" else split_patterns(value, where)


def from_environment(environ: Mapping[str, str]) -> dict[str, Value]:
    found: dict[str, Value] = {}
    for name, raw in environ.items():
        key = name.lower().removeprefix(_ENV_PREFIX) if name.lower().startswith(_ENV_PREFIX) else ""
        if key not in _KEYS:
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            raise ConfigError(f"{name}: expected a JSON list of strings (got {raw!r})") from None
        found[key] = _parsed(key, value, name)
    return found


def from_config(path: Path) -> dict[str, Value]:
    raw = read_config_file(path)
    return {snake(key): _parsed(snake(key), value, f"{path}: key {key!r}")
            for key, value in raw.items() if snake(key) in _KEYS}


def project_guard_patterns(project: Path | None, environ: Mapping[str, str] | None = None) -> GuardPatterns:
    """The guard patterns in force for `project`: environment over config file; ConfigError if malformed."""
    values = from_config(config_path(project)) if project else {}
    values.update(from_environment(os.environ if environ is None else environ))
    return GuardPatterns(values.get("guard_deny", ()), values.get("guard_allow", ()),  # type: ignore[arg-type]
                         values.get("guard_packs", ()))  # type: ignore[arg-type]
