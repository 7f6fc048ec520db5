"""The destructive-command guard, pre-execution layer: deny rules in the child CLI's inline config.

`kilo run` / `opencode run` read extra configuration from `KILO_CONFIG_CONTENT` /
`OPENCODE_CONFIG_CONTENT`. The loop puts a `permission.bash` map there whose deny
rules the CLI enforces even under `--auto`. The CLI matches each command of a
bash tool call (its text, as written) against the map's wildcard patterns
(`*` any run of characters, `?` one character) and the LAST matching rule wins,
so the catch-all `"*": "allow"` comes first and the deny rules after it.

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
from typing import Any, Literal

import json5

Runtime = Literal["kilo", "opencode"]

CONFIG_ENV: dict[Runtime, str] = {"kilo": "KILO_CONFIG_CONTENT", "opencode": "OPENCODE_CONFIG_CONTENT"}
PROJECT_CONFIG_FILES: dict[Runtime, tuple[str, ...]] = {
    "kilo": ("kilo.json", ".kilo/kilo.json"),
    "opencode": ("opencode.json", ".opencode/opencode.json"),
}

_RM_FLAGS = ("-*r*", "-*R*")
# Catastrophic recursive-delete targets; the runtime guard is the catch-all for everything else.
_RM_TARGETS = (
    "/", "/ *", "/home*", "/etc*", "/usr*", "/opt*", "/root*", "/boot*", "/srv*",
    "~", "~/*", "~ *", "$HOME", "$HOME/*", "$HOME *", "${HOME}*", '"$HOME"*',
    ".git", ".git/*", ".git *", "./.git", "./.git/*", "./.git *",
)
_DEVICES = ("sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk")
_GIT_DENY = (
    "git commit*", "git push*", "git reset --hard*", "git clean -*f*", "git clean --force*",
    "git stash drop*", "git stash clear*", "git branch -D*",
    # history rewrites (the push variants are also covered by "git push*")
    "git filter-branch*", "git filter-repo*", "git reflog expire*", "git reflog delete*", "git update-ref -d*",
    "git push --force*", "git push -f*", "git push --force-with-lease*", "git push * --force*",
    "git push * -f*", "git push * +*", "git commit --amend*",
)
_PUBLISH_DENY = (
    "npm publish*", "pnpm publish*", "pnpm -r publish*", "pnpm --recursive publish*",
    "yarn publish*", "yarn npm publish*", "bun publish*",
    "lerna publish*", "npx lerna publish*", "changeset publish*", "npx changeset publish*", "cargo publish*",
)
# Clear-cut cases of the classes issue 10 added; the runtime guard decides everything finer.
_CLASS_DENY = (
    "git checkout -- .", "git checkout .", "git restore .", "git update-ref *",
    "kubectl delete *", "helm uninstall *", "terraform destroy*", "tofu destroy*", "pulumi destroy*",
    "docker system prune*", "docker volume prune*", "podman system prune*", "aws s3 rm * --recursive*",
    "dropdb *", "shutdown*", "reboot*", "poweroff*", "halt", "halt *", "sudo reboot*", "sudo shutdown*",
    "kill -9 -1*", "kill -KILL -1*", "kill -- -1*", ":(){*", "curl * | sh*", "curl * | bash*", "wget * | sh*",
    "wget * | bash*",
)
# A dry run publishes nothing: these come after the denies, so they win (the last matching rule wins).
_ALLOW_AFTER = ("npm publish --dry-run*", "pnpm publish --dry-run*", "yarn npm publish --dry-run*",
                "bun publish --dry-run*", "cargo publish --dry-run*")


def deny_patterns() -> tuple[str, ...]:
    """The wildcard patterns the pre-execution layer denies, in rule order."""
    rm = [f"{prefix}rm {flags} {target}" for prefix in ("", "sudo ") for flags in _RM_FLAGS for target in _RM_TARGETS]
    disk = ["mkfs*", "mke2fs*", "wipefs*"]
    for device in _DEVICES:
        disk += [f"dd *of=/dev/{device}*", f"*> /dev/{device}*", f"*>/dev/{device}*"]
    git = [*_GIT_DENY, *(f"sudo {pattern}" for pattern in _GIT_DENY[:4])]
    return tuple(dict.fromkeys([*git, *_PUBLISH_DENY, *_CLASS_DENY, *disk, *rm]))


def allow_exceptions() -> tuple[str, ...]:
    """Patterns allowed again after the denies (dry runs that publish nothing)."""
    return _ALLOW_AFTER


def bash_rules(existing: Mapping[str, Any] | None = None, catch_all: bool = True) -> dict[str, Any]:
    """`existing` rules kept in order, `"*": "allow"` first (unless left out or present), our denies
    after them and our dry-run exceptions last."""
    rules: dict[str, Any] = {"*": "allow"} if catch_all and "*" not in (existing or {}) else {}
    rules.update(existing or {})
    for pattern in deny_patterns():
        rules.pop(pattern, None)
        rules[pattern] = "deny"
    for pattern in allow_exceptions():
        rules.pop(pattern, None)
        rules[pattern] = "allow"
    return rules


# ----------------------------------------------------------------------------- reading configs
def loads_jsonc(text: str) -> Any:
    """Parse JSON with `//` and `/* */` comments and trailing commas (the CLIs accept both).

    json5 is a superset of that; a syntax error is a ValueError like json's."""
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


def _project_bash(runtime: Runtime, project: Path) -> _ProjectBash:
    catch_all = False
    problems: list[str] = []
    for name in PROJECT_CONFIG_FILES[runtime]:
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


def project_sets_scalar_bash_permission(runtime: Runtime, project: Path) -> bool:
    """True when the project's kilo/opencode config sets `permission` or `permission.bash` to one action."""
    return _project_bash(runtime, project).scalar_in is not None


# ----------------------------------------------------------------------------- the env entry
@dataclass(frozen=True)
class InlineConfig:
    """The env entries to set on the child (`env`), whether deny rules are in them, and why not."""

    env: dict[str, str]
    injected: bool
    note: str | None = None


def inline_config_env(runtime: Runtime, project: Path, environ: Mapping[str, str]) -> InlineConfig:
    """The child's inline-config env entry with the guard's deny rules merged in (or left alone, with a note)."""
    key = CONFIG_ENV[runtime]
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
