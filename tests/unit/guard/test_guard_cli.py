"""`kilo-loop guard check` and `kilo-loop guard hook`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kilo_loop.commands.guard import guard_group


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(guard_group, list(args), input=stdin, env={"KILO_LOOP_GUARD_DENY": None})


def test_check_allow_exits_0() -> None:
    result = run("check", "git status")
    assert result.exit_code == 0
    assert result.output.startswith("allow:")


def test_check_deny_exits_1_and_names_rule_and_reason() -> None:
    result = run("check", "sudo git push --force origin main")
    assert result.exit_code == 1
    assert result.output.startswith("deny [git-push-force]:")
    assert "history" in result.output


def test_check_json() -> None:
    result = run("check", "--json", "git commit -m x")
    assert result.exit_code == 1
    assert json.loads(result.output) == {
        "decision": "deny", "rule": "git-commit",
        "reason": "`git commit -m x`: the agent never commits; the loop checkpoints and the operator commits"
                  " [git pack]"}


def test_check_cwd_makes_relative_targets_resolvable(tmp_path: Path) -> None:
    assert run("check", "--cwd", str(tmp_path), "rm -rf build").exit_code == 0  # tmp_path is a temp dir
    assert run("check", "--cwd", "/srv/repo", "rm -rf build").exit_code == 1


def test_batch_answers_one_line_per_input_line_in_order(tmp_path: Path) -> None:
    lines = [
        json.dumps({"command": "git push"}),
        "this is not json",
        json.dumps({"command": "ls -la"}),
        "",
        json.dumps({"command": "rm -rf build", "cwd": str(tmp_path)}),
        json.dumps({"command": "rm -rf build", "cwd": "/srv/repo"}),
        json.dumps({"command": 42}),
        json.dumps(["git push"]),
        json.dumps({"command": "ls", "cwd": 7}),
        json.dumps({"command": "echo 'git push'", "cwd": None}),
    ]
    result = run("check", "--batch", stdin="\n".join(lines) + "\n")
    assert result.exit_code == 0
    answers = [json.loads(line) for line in result.output.splitlines()]
    assert len(answers) == len(lines)
    assert [a["decision"] for a in answers] == [
        "deny", "error", "allow", "error", "allow", "deny", "error", "error", "error", "allow"]
    assert answers[0]["rule"] == "git-push" and answers[5]["rule"] == "rm-recursive"
    assert all(set(a) == {"decision", "rule", "reason"} for a in answers)
    assert all(a["rule"] is None for a in answers if a["decision"] != "deny")
    assert "not valid JSON" in answers[1]["reason"]


def test_batch_without_trailing_newline_and_with_crlf() -> None:
    result = run("check", "--batch", stdin='{"command": "git push"}\r\n{"command": "ls"}')
    assert [json.loads(x)["decision"] for x in result.output.splitlines()] == ["deny", "allow"]


@pytest.mark.parametrize("args", [["check"], ["check", "--batch", "ls"]])
def test_check_usage_errors_exit_2(args: list[str]) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert "COMMAND or --batch" in result.output


def test_invalid_pattern_is_a_usage_error() -> None:
    result = run("check", "--deny", "(", "ls")
    assert result.exit_code == 2
    assert "not a valid RE2" in result.output


def test_extra_patterns_from_options_and_project_config(tmp_path: Path) -> None:
    (tmp_path / ".kilocode-loop").mkdir()
    (tmp_path / ".kilocode-loop" / "config.json").write_text(
        json.dumps({"guardDeny": ["^docker system prune"], "guardAllow": ["^git push origin feature/"]}),
        encoding="utf-8")
    sub = tmp_path / "src"
    sub.mkdir()
    denied = run("check", "--cwd", str(sub), "docker system prune -af")
    assert denied.exit_code == 1 and "custom-deny" in denied.output
    assert run("check", "--cwd", str(sub), "git push origin feature/x").exit_code == 0
    assert run("check", "--cwd", str(sub), "--deny", "^make ", "make all").exit_code == 1
    assert run("check", "--allow", "^git push origin main$", "git push origin main").exit_code == 0


# ----------------------------------------------------------------------------- hook
def hook(payload: Any) -> Result:
    return run("hook", stdin=payload if isinstance(payload, str) else json.dumps(payload))


def test_hook_denies_with_the_claude_code_output_format() -> None:
    result = hook({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "git push origin main", "description": "push"}, "cwd": "/repo"})
    assert result.exit_code == 0
    output = json.loads(result.output)
    specific = output["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert specific["permissionDecision"] == "deny"
    assert "git-push" in specific["permissionDecisionReason"]


@pytest.mark.parametrize("payload", [
    {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls -la"}},
    {"tool_name": "Read", "tool_input": {"command": "git reset --hard"}},
    {"tool_name": "Bash", "tool_input": {"command": 123}},
    {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "git push"}},
    "",
    "{not json",
    "[1, 2]",
])
def test_hook_allows_by_printing_nothing(payload: Any) -> None:
    result = hook(payload)
    assert (result.exit_code, result.output) == (0, "")


def test_hook_uses_the_payload_cwd(tmp_path: Path) -> None:
    command = {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}
    assert hook({**command, "cwd": str(tmp_path)}).output == ""
    assert "rm-recursive" in hook({**command, "cwd": "/srv/repo"}).output


def test_hook_guards_writes_into_dot_git() -> None:
    result = hook({"tool_name": "Write", "tool_input": {"file_path": "/repo/.git/hooks/pre-push", "content": "x"},
                   "cwd": "/repo"})
    assert "git-dir-write" in json.loads(result.output)["hookSpecificOutput"]["permissionDecisionReason"]
