"""The destructive-command guard, pre-execution layer, as data: wildcard deny rules for a CLI.

kilo and opencode enforce a `permission.bash` map (glob → allow/ask/deny) themselves, even
under `--auto`. Each command of a bash tool call (its text, as written) is matched against
the map's wildcard patterns (`*` any run of characters, `?` one character) and the LAST
matching rule wins, so the catch-all `"*": "allow"` comes first and the deny rules after it.
How the map reaches the CLI (merged into its inline config) is the kilo backend's business:
see `kilo_loop.agent.kilo.config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
# A dry run changes nothing: these come after the denies, so they win (the last matching rule wins). They
# follow the runtime guard's dry-run look-alikes (tests/unit/guard/test_guard_config.py checks the two
# layers agree); `*` spans spaces, so an option is matched as a whole word, never inside another.
_DRY_RUN_ALLOW = (
    "git push --dry-run*", "git push -n", "git push -n *", "git push * --dry-run", "git push * --dry-run *",
    "git push * -n", "git push * -n *",
    "git commit --dry-run*", "git commit * --dry-run", "git commit * --dry-run *",
    "git clean -n*", "git clean --dry-run*", "git clean -?n", "git clean -??n", "git clean -?n *", "git clean -??n *",
    "git clean * -n", "git clean * -n *", "git clean * --dry-run", "git clean * --dry-run *",
    "kubectl delete * --dry-run", "kubectl delete * --dry-run *", "kubectl delete * --dry-run=client*",
    "kubectl delete * --dry-run=server*",
    "helm uninstall * --dry-run", "helm uninstall * --dry-run *", "helm uninstall * --dry-run=client*",
    "helm uninstall * --dry-run=server*",
)
_ALLOW_AFTER = ("npm publish --dry-run*", "pnpm publish --dry-run*", "yarn npm publish --dry-run*",
                "bun publish --dry-run*", "cargo publish --dry-run*", *_DRY_RUN_ALLOW)
# A later word that undoes the dry run: denied again, last.
_DENY_AGAIN = ("git push *--no-dry-run*", "git commit *--no-dry-run*", "kubectl delete *--dry-run=none*",
               "helm uninstall *--dry-run=none*", "helm uninstall *--dry-run=false*")


def deny_patterns() -> tuple[str, ...]:
    """The wildcard patterns the pre-execution layer denies, in rule order."""
    rm = [f"{prefix}rm {flags} {target}" for prefix in ("", "sudo ") for flags in _RM_FLAGS for target in _RM_TARGETS]
    disk = ["mkfs*", "mke2fs*", "wipefs*"]
    for device in _DEVICES:
        disk += [f"dd *of=/dev/{device}*", f"*> /dev/{device}*", f"*>/dev/{device}*"]
    git = [*_GIT_DENY, *(f"sudo {pattern}" for pattern in _GIT_DENY[:4])]
    return tuple(dict.fromkeys([*git, *_PUBLISH_DENY, *_CLASS_DENY, *disk, *rm]))


def allow_exceptions() -> tuple[str, ...]:
    """Patterns allowed again after the denies (dry runs that change nothing)."""
    return _ALLOW_AFTER


def deny_again() -> tuple[str, ...]:
    """Patterns denied once more after the exceptions (a dry run undone by a later word)."""
    return _DENY_AGAIN


def bash_rules(existing: Mapping[str, Any] | None = None, catch_all: bool = True) -> dict[str, Any]:
    """`existing` rules kept in order, `"*": "allow"` first (unless left out or present), our denies
    after them, our dry-run exceptions, and last the words that undo a dry run."""
    rules: dict[str, Any] = {"*": "allow"} if catch_all and "*" not in (existing or {}) else {}
    rules.update(existing or {})
    for pattern in deny_patterns():
        rules.pop(pattern, None)
        rules[pattern] = "deny"
    for pattern in allow_exceptions():
        rules.pop(pattern, None)
        rules[pattern] = "allow"
    for pattern in deny_again():
        rules.pop(pattern, None)
        rules[pattern] = "deny"
    return rules
