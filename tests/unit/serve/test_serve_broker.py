"""The permission broker and the serve inline config. Commands are data: they go to the
guard in-process, never to a shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kilo_loop.agent.serve.broker import PermissionBroker, rejection_message, user_rule_for
from kilo_loop.agent.serve.config import asking_bash_rules, serve_config, serve_env, user_bash_rules
from kilo_loop.agent.serve.mapping import PermissionAsk
from kilo_loop.guard.cli_rules import deny_patterns
from kilo_loop.guard.runtime import Guard

PROJECT = "/work/project-x"


def bash_ask(command: str) -> PermissionAsk:
    return PermissionAsk("per_1", "ses_1", "bash", (command,), {"command": command}, "call_1")


def outside(path: str) -> PermissionAsk:
    return PermissionAsk("per_2", "ses_1", "external_directory", (path.rsplit("/", 1)[0] + "/*",),
                         {"filepath": path, "parentDir": path.rsplit("/", 1)[0]}, "call_2")


@pytest.fixture
def broker() -> PermissionBroker:
    return PermissionBroker(Guard(temp_dirs=["/tmp"]), PROJECT)


@pytest.mark.parametrize("command", ["pytest -q", "git status", "echo hi > hi.txt", "rm -rf /tmp/scratch-1"])
def test_ordinary_commands_are_allowed_once(broker: PermissionBroker, command: str) -> None:
    verdict = broker.decide(bash_ask(command), "bash")
    assert verdict.reply == "once" and not verdict.rejected


@pytest.mark.parametrize(("command", "rule"), [
    ('bash -c "git push --force origin main"', "git-push-force"),
    ("cd ~ && rm -rf canary", "rm-recursive"),
    ("git commit -m x", "git-commit"),
])
def test_destructive_commands_are_rejected_with_a_message_the_agent_can_act_on(
    broker: PermissionBroker, command: str, rule: str
) -> None:
    verdict = broker.decide(bash_ask(command), "bash")
    assert verdict.reply == "reject" and verdict.rule == rule and verdict.subject == command
    assert verdict.message.startswith(f"denied by the loop's guard: {rule} — ")
    assert verdict.message.endswith("; reach the goal another way")


def test_the_users_own_deny_rules_apply_first() -> None:
    broker = PermissionBroker(Guard(), PROJECT, (("*", "allow"), ("touch forbidden*", "deny")))
    verdict = broker.decide(bash_ask("touch forbidden.txt"), "bash")
    assert verdict.rejected and verdict.rule == "your permission rule 'touch forbidden*'"
    assert not broker.decide(bash_ask("touch fine.txt"), "bash").rejected


def test_user_rules_last_match_wins_like_the_cli() -> None:
    rules = (("rm *", "deny"), ("rm -i *", "allow"))
    assert user_rule_for("rm -i x", rules) == ("rm -i *", "allow")
    assert user_rule_for("rm x", rules) == ("rm *", "deny")
    assert user_rule_for("ls", rules) is None
    assert user_rule_for("a.b", (("a?b", "deny"),)) == ("a?b", "deny")
    assert user_rule_for("a[b", (("a[b", "deny"),)) == ("a[b", "deny")  # no regex leaks through


def test_outside_the_project_reads_pass_writes_only_into_temp(broker: PermissionBroker) -> None:
    assert not broker.decide(outside("/usr/include/stdio.h"), "read").rejected
    assert not broker.decide(outside("/tmp/scratch/notes.txt"), "write").rejected
    verdict = broker.decide(outside("/etc/cron.d/job"), "write")
    assert verdict.rejected and verdict.rule == "outside-project" and "/etc/cron.d/job" in verdict.reason


def test_without_a_guard_only_the_users_rules_decide() -> None:
    broker = PermissionBroker(None, PROJECT, (("git push*", "deny"),))
    assert broker.decide(bash_ask("git push"), "bash").rejected
    assert not broker.decide(bash_ask("rm -rf /"), "bash").rejected  # --no-guard means no guard


def test_rejection_message_shape() -> None:
    assert rejection_message("r", "why") == "denied by the loop's guard: r — why; reach the goal another way"


# ----------------------------------------------------------------------------- config


def test_asking_rules_put_ask_first_and_keep_every_deny() -> None:
    rules = asking_bash_rules({"*": "allow", "npm *": "allow", "git push*": "deny", "ls": "ask"})
    assert list(rules.items()) == [("*", "ask"), ("npm *", "ask"), ("git push*", "deny"), ("ls", "ask")]
    assert asking_bash_rules("allow") == {"*": "ask"}
    assert asking_bash_rules("deny") == "deny"
    assert asking_bash_rules({"*": "deny"}) == {"*": "deny"}


def test_serve_config_keeps_the_users_keys_and_makes_outside_paths_ask() -> None:
    config = serve_config({"model": "local/fake", "snapshot": False,
                           "permission": {"edit": "allow", "bash": {"*": "allow", "git commit*": "deny"}}})
    assert config["model"] == "local/fake" and config["snapshot"] is False
    assert config["permission"] == {"edit": "allow", "bash": {"*": "ask", "git commit*": "deny"},
                                    "external_directory": "ask"}


def test_serve_env_rewrites_the_inline_config_and_leaves_a_broken_one_alone() -> None:
    env = serve_env("kilo", {"KILO_CONFIG_CONTENT": json.dumps({"permission": {"bash": {"*": "allow"}}}), "A": "1"})
    assert json.loads(env["KILO_CONFIG_CONTENT"])["permission"]["bash"] == {"*": "ask"} and env["A"] == "1"
    assert serve_env("opencode", {})["OPENCODE_CONFIG_CONTENT"]
    assert serve_env("kilo", {"KILO_CONFIG_CONTENT": "{broken"}) == {"KILO_CONFIG_CONTENT": "{broken"}


def test_the_loops_deny_globs_stay_as_a_second_net() -> None:
    bash = {"*": "allow", **{p: "deny" for p in deny_patterns()}}
    rules = asking_bash_rules(bash)
    assert isinstance(rules, dict) and all(rules[p] == "deny" for p in deny_patterns())


def test_user_bash_rules_come_from_project_files_then_the_users_inline_config(tmp_path: Path) -> None:
    (tmp_path / "kilo.json").write_text('{"permission": {"bash": {"touch x*": "deny"}}} // jsonc', encoding="utf-8")
    (tmp_path / ".kilo").mkdir()
    (tmp_path / ".kilo" / "kilo.json").write_text("{broken", encoding="utf-8")
    env = {"KILO_CONFIG_CONTENT": json.dumps({"permission": {"bash": "deny"}})}
    assert user_bash_rules("kilo", tmp_path, env) == (("touch x*", "deny"), ("*", "deny"))
    assert user_bash_rules("opencode", tmp_path, {}) == ()


@pytest.mark.parametrize(("tool", "path"), [("read", "/proc/1/environ"), ("grep", "/proc/9"), ("list", "/proc")])
def test_the_processes_files_are_refused_to_every_tool(broker: PermissionBroker, tool: str, path: str) -> None:
    """/proc/<server>/environ holds the warm server's password: no tool of the server's reads there."""
    verdict = broker.decide(outside(path), tool)
    assert verdict.rejected and verdict.rule == "process-files"
    assert not broker.decide(outside("/usr/share/doc/readme"), tool).rejected
    assert not broker.decide(outside("/procfs-notes/x"), tool).rejected


def test_a_jailed_server_runs_no_formatter_or_language_server_of_the_projects() -> None:
    assert serve_config({}, jailed=True)["formatter"] is False
    assert serve_config({}, jailed=True)["lsp"] is False
    assert "formatter" not in serve_config({}) and "lsp" not in serve_config({})
    assert serve_config({"lsp": {"x": {"command": ["y"]}}}, jailed=True)["lsp"] == {"x": {"command": ["y"]}}
