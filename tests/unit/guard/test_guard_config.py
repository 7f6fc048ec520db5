"""The pre-execution layer's data: the wildcard deny rules kilo/opencode enforce themselves."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kilo_loop.guard.cli_rules import allow_exceptions, bash_rules, deny_again, deny_patterns
from kilo_loop.guard.runtime import Guard


def wildcard(pattern: str) -> re.Pattern[str]:
    """The CLIs' permission wildcard: `*` any run, `?` one character, the rest literal, whole string."""
    body = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.compile(body, re.DOTALL)


def action(rules: dict[str, Any], command: str) -> str:
    """Last matching rule wins, as in kilo/opencode."""
    matched = [value for pattern, value in rules.items() if wildcard(pattern).fullmatch(command)]
    return matched[-1] if matched else "ask"


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
    allows = list(allow_exceptions())
    assert keys[len(denies) + 1:len(denies) + 1 + len(allows)] == allows and all(rules[k] == "allow" for k in allows)
    assert keys[len(denies) + 1 + len(allows):] == list(deny_again())


# Dry-run look-alikes and their real twins: the CLI's globs decide as the runtime guard does (commands
# are data here: they go to the matcher and the guard, never to a shell).
DRY_RUNS = (
    "git push --dry-run", "git push --dry-run origin main", "git push -n origin main", "git push origin main --dry-run",
    "git push origin main -n", "git push --force --dry-run", "git push -f -n origin main", "git commit --dry-run",
    "git commit -m x --dry-run", "git clean -n", "git clean -nfd", "git clean -fdn", "git clean --dry-run -fd",
    "git clean -fd -n", "kubectl delete pod x --dry-run=client", "kubectl delete pod x --dry-run=server",
    "kubectl delete pod x --dry-run", "helm uninstall rel --dry-run", "npm publish --dry-run",
)
REAL_TWINS = (
    "git push origin main", "git push --dry-run origin main --no-dry-run", "git commit -am x", "git clean -fd",
    "git clean -fd node_modules", "git push origin --no-verify", "kubectl delete pod x --dry-run=none",
    "kubectl delete pod x", "helm uninstall rel", "helm uninstall rel --dry-run --dry-run=false",
)


@pytest.mark.parametrize("command", DRY_RUNS)
def test_a_dry_run_the_guard_allows_the_cli_rules_allow_too(command: str) -> None:
    assert not Guard().check_tool_use("bash", {"command": command}, "/work/p").denied
    assert action(bash_rules(), command) == "allow"


@pytest.mark.parametrize("command", REAL_TWINS)
def test_the_real_twin_of_a_dry_run_stays_denied_by_both(command: str) -> None:
    assert Guard().check_tool_use("bash", {"command": command}, "/work/p").denied
    assert action(bash_rules(), command) == "deny"


def test_existing_rules_are_kept_in_order_and_ours_appended() -> None:
    rules = bash_rules({"*": "ask", "npm *": "allow", "git push*": "allow"})
    assert list(rules)[:2] == ["*", "npm *"] and rules["*"] == "ask"
    assert rules["git push*"] == "deny" and list(rules).index("git push*") > 1
    assert action(rules, "ls") == "ask" and action(rules, "npm test") == "allow"
    assert action(rules, "git push origin x") == "deny"
    assert "*" not in bash_rules(catch_all=False)
