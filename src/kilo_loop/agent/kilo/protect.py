"""`protect` globs under `kilo run` / `opencode run`: `permission.edit` deny rules in the inline config.

Both CLIs take a map of pattern → action for `edit` (as for `bash`) and match it against the
edited file's path relative to the project, before the write; a denied edit comes back to the
agent as a failed tool call. Their wildcard differs from the loop's globs: `*` spans `/`. So each
glob becomes patterns that match every path it protects (and possibly a few more — a `*` inside
one segment also reaches into sub-folders): protecting too much only refuses an edit, never lets
a protected one through. The server transport needs none of this: its broker decides every edit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kilo_loop.agent.kilo.config import loads_jsonc
from kilo_loop.agent.kilo.runtime import RUNTIMES, RuntimeName


def wildcard_patterns(glob: str) -> list[str]:
    """The CLI wildcard patterns covering a loop glob (`**/` is either nothing or `*/`)."""
    raw = glob.strip().removeprefix("./").lstrip("/")
    if raw.endswith("/"):
        raw += "**"
    if "/" not in raw:
        raw = "**/" + raw
    first, *rest = raw.split("**/")
    variants = [first.replace("**", "*")]
    for part in rest:
        variants = [v + join + part.replace("**", "*") for v in variants for join in ("", "*/")]
    return list(dict.fromkeys(v for v in variants if v))


def edit_denies(existing: Any, globs: Sequence[str]) -> Any:
    """`permission.edit` with a deny rule per protected pattern, after the user's rules (last match wins)."""
    if existing == "deny":
        return "deny"
    rules: dict[str, Any] = {"*": existing} if isinstance(existing, str) else dict(existing or {})
    for glob in globs:
        for pattern in wildcard_patterns(glob):
            rules.pop(pattern, None)
            rules[pattern] = "deny"
    return rules


def with_protect(runtime: RuntimeName, env: Mapping[str, str], globs: Sequence[str]) -> dict[str, str]:
    """`env` with the stage's protect globs as edit deny rules in its inline config (unchanged
    without globs, or when that config is not a JSON object)."""
    name = RUNTIMES[runtime].config_env
    if not globs:
        return dict(env)
    try:
        config = loads_jsonc(env.get(name) or "{}")
    except ValueError:
        return dict(env)
    if not isinstance(config, dict):
        return dict(env)
    permission = config.get("permission")
    merged: dict[str, Any] = dict(permission) if isinstance(permission, dict) else (
        {"*": permission} if isinstance(permission, str) else {})
    merged["edit"] = edit_denies(merged.get("edit"), globs)
    return {**env, name: json.dumps({**config, "permission": merged})}
