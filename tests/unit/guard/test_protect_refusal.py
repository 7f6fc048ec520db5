"""A protected file is refused before it is written: the serve broker's edit decision, the serve
config that makes edits ask, the pre-tool hook's check (Claude Code, Codex, Gemini CLI), and the
`run` transport's edit deny rules."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from kilo_loop.agent.hook import BLOCK_EXIT, main
from kilo_loop.agent.kilo.protect import edit_denies, wildcard_patterns, with_protect
from kilo_loop.agent.protect_check import PROTECT_ENV, hook_denial, protect_env, refused_tool
from kilo_loop.agent.protocol import AgentRequest
from kilo_loop.agent.serve.backend import ServeBackend
from kilo_loop.agent.serve.broker import PermissionBroker
from kilo_loop.agent.serve.config import serve_config, serve_env
from kilo_loop.agent.serve.mapping import PermissionAsk
from kilo_loop.agent.subprocess_run import child_environment
from kilo_loop.goal.protect import is_protected
from kilo_loop.guard.runtime import Guard
from kilo_loop.review.readonly import ReadOnlyGuard

PROJECT = "/work/project-x"
GLOBS = ("tests/**", "verify.sh")


def edit_ask(relative: str, tool_files: list[str] | None = None) -> PermissionAsk:
    paths = tool_files or [relative]
    return PermissionAsk("per_1", "ses_1", "edit", tuple(paths),
                         {"filepath": ", ".join(f"{PROJECT}/{p}" for p in paths)}, "call_1")


@pytest.fixture
def broker() -> PermissionBroker:
    return PermissionBroker(Guard(temp_dirs=["/tmp"]), PROJECT)


@pytest.mark.parametrize("path, glob", [("tests/test_app.py", "tests/**"), ("tests/unit/deep/x.py", "tests/**"),
                                        ("verify.sh", "verify.sh"), ("scripts/verify.sh", "verify.sh")])
def test_an_edit_of_a_protected_path_is_rejected_naming_the_glob(broker: PermissionBroker, path: str,
                                                                 glob: str) -> None:
    verdict = broker.decide(edit_ask(path), "edit", GLOBS)
    assert verdict.rejected and verdict.subject == path
    assert verdict.rule == f"protect {glob}" and repr(glob) in verdict.reason
    assert "protected" in verdict.message


def test_an_edit_elsewhere_is_allowed_once(broker: PermissionBroker) -> None:
    assert broker.decide(edit_ask("src/app.py"), "write", GLOBS).reply == "once"
    assert broker.decide(edit_ask("testsuite/x.py"), "edit", GLOBS).reply == "once"


def test_without_protect_globs_an_edit_is_not_checked(broker: PermissionBroker) -> None:
    assert broker.decide(edit_ask("tests/test_app.py"), "edit", ()).reply == "once"


def test_a_patch_touching_any_protected_file_is_rejected(broker: PermissionBroker) -> None:
    verdict = broker.decide(edit_ask("src/a.py", ["src/a.py", "tests/test_a.py"]), "apply_patch", GLOBS)
    assert verdict.rejected and verdict.subject == "tests/test_a.py"


def test_an_absolute_filepath_outside_the_project_is_not_a_protected_path(broker: PermissionBroker) -> None:
    ask = PermissionAsk("per_1", "ses_1", "edit", (), {"filepath": "/tmp/tests/x.py"}, "call_1")
    assert not broker.decide(ask, "write", GLOBS).rejected


def test_serve_config_asks_for_edits_only_when_the_run_protects_paths() -> None:
    inline = {"permission": {"bash": {"*": "allow"}, "edit": {"*": "allow", "secrets/*": "deny"}}}
    assert serve_config(inline)["permission"]["edit"] == {"*": "allow", "secrets/*": "deny"}
    asked = serve_config(inline, ask_edits=True)["permission"]
    assert asked["edit"] == {"*": "ask", "secrets/*": "deny"}  # the user's deny stays deny
    assert serve_config({"permission": {"edit": "deny"}}, ask_edits=True)["permission"]["edit"] == "deny"
    assert serve_config({}, ask_edits=True)["permission"]["edit"] == {"*": "ask"}
    env = serve_env("kilo", {}, ask_edits=True)
    assert json.loads(env["KILO_CONFIG_CONTENT"])["permission"]["edit"] == {"*": "ask"}


# ------------------------------------------------------------------ the pre-tool hook
def hook_payload(tool: str, tool_input: dict[str, str], cwd: str = PROJECT) -> str:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input, "cwd": cwd})


def env_for(globs: tuple[str, ...] = GLOBS) -> dict[str, str]:
    return protect_env(PROJECT, globs)


@pytest.mark.parametrize("tool, tool_input", [
    ("Write", {"file_path": f"{PROJECT}/tests/test_app.py", "content": "x"}),
    ("Edit", {"file_path": "tests/test_app.py", "old_string": "a", "new_string": "b"}),
    ("MultiEdit", {"file_path": f"{PROJECT}/verify.sh"}),
    ("write_file", {"file_path": f"{PROJECT}/tests/conftest.py", "content": "x"}),
    ("replace", {"file_path": "tests/x.py", "old_string": "a", "new_string": "b"}),
    ("apply_patch", {"input": "*** Begin Patch\n*** Update File: tests/test_app.py\n@@\n-a\n+b\n*** End Patch"}),
])
def test_the_hook_refuses_file_tools_on_protected_paths(tool: str, tool_input: dict[str, str]) -> None:
    reason = hook_denial(hook_payload(tool, tool_input), env_for())
    assert reason is not None and "(protect)" in reason and "protect glob" in reason


def test_a_shell_apply_patch_on_a_protected_path_is_refused() -> None:
    command = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: tests/new_test.py\n+x\n*** End Patch\nPATCH"
    assert refused_tool("Bash", {"command": command}, PROJECT, GLOBS) is not None
    assert refused_tool("Bash", {"command": "pytest tests -q"}, PROJECT, GLOBS) is None


@pytest.mark.parametrize("raw, env", [
    (hook_payload("Write", {"file_path": f"{PROJECT}/src/app.py"}), env_for()),
    (hook_payload("Read", {"file_path": f"{PROJECT}/tests/test_app.py"}), env_for()),
    (hook_payload("Write", {"file_path": f"{PROJECT}/tests/test_app.py"}), {}),
    (hook_payload("Write", {"file_path": "/elsewhere/tests/test_app.py"}), env_for()),
    (hook_payload("Write", {"file_path": f"{PROJECT}/tests/test_app.py"}), {PROTECT_ENV: "{broken"}),
    ("not json", env_for()),
    ("[]", env_for()),
])
def test_the_hook_lets_everything_else_through(raw: str, env: dict[str, str]) -> None:
    assert hook_denial(raw, env) is None


def test_hook_main_blocks_a_protected_write_with_exit_2(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in env_for().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(sys, "stdin", io.StringIO(hook_payload("Write", {"file_path": "tests/test_app.py"})))
    assert main([]) == BLOCK_EXIT
    out, err = capsys.readouterr()
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny" and "tests/**" in err
    monkeypatch.setattr(sys, "stdin", io.StringIO(hook_payload("Write", {"file_path": "src/app.py"})))
    assert main([]) == 0


def test_the_stage_globs_reach_the_cli_child_environment(tmp_path: Path) -> None:
    request = AgentRequest(prompt="p", cwd=tmp_path, title="t", protect=("tests/**",))
    spec = json.loads(child_environment(request, base={})[PROTECT_ENV])
    assert spec == {"root": str(tmp_path), "globs": ["tests/**"]}
    assert PROTECT_ENV not in child_environment(AgentRequest(prompt="p", cwd=tmp_path, title="t"), base={})


# ------------------------------------------------------------------ reviewers under serve
@pytest.fixture
def with_reviewers() -> PermissionBroker:
    guard = Guard(temp_dirs=["/tmp"])
    return PermissionBroker(guard, PROJECT, reviewer_guard=ReadOnlyGuard(guard, Path(PROJECT)))


def test_a_reviewers_write_outside_the_loop_folder_is_refused_before_it_happens(
        with_reviewers: PermissionBroker) -> None:
    verdict = with_reviewers.decide(edit_ask("src/app.py"), "write", (), read_only=True)
    assert verdict.rejected and verdict.rule == "review-read-only" and verdict.subject.endswith("src/app.py")
    assert with_reviewers.decide(edit_ask(".kilocode-loop/review-code.json"), "write", (), read_only=True).reply \
        == "once"
    assert with_reviewers.decide(edit_ask("src/app.py"), "write", ()).reply == "once"  # the implementer may


def test_a_reviewers_changing_command_is_refused_and_reading_ones_run(with_reviewers: PermissionBroker) -> None:
    sed = PermissionAsk("per_3", "ses_1", "bash", ("sed -i s/a/b/ src/app.py",),
                        {"command": "sed -i s/a/b/ src/app.py"}, "call_3")
    assert with_reviewers.decide(sed, "bash", (), read_only=True).rule == "review-read-only"
    assert not with_reviewers.decide(sed, "bash", ()).rejected
    diff = PermissionAsk("per_4", "ses_1", "bash", ("git diff",), {"command": "git diff"}, "call_4")
    assert not with_reviewers.decide(diff, "bash", (), read_only=True).rejected


# ------------------------------------------------------------------ `run` transport: edit deny rules
def cli_wildcard(path: str, pattern: str) -> bool:
    """kilo / opencode's permission wildcard: `*` any run of characters (`/` included), `?` one."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(body, path, re.DOTALL) is not None


@pytest.mark.parametrize("glob", ["tests/**", "verify.sh", "*.snap", "tests/", "a/**/b/*.py", "src/**/fixtures/",
                                  "./ci/x.yml", "**/conftest.py", ".github/workflows/*.yml"])
@pytest.mark.parametrize("path", ["tests/test_a.py", "tests/unit/deep/x.py", "verify.sh", "scripts/verify.sh",
                                  "x.snap", "snaps/y.snap", "a/b/c.py", "a/q/r/b/c.py", "src/fixtures/f.json",
                                  "src/p/fixtures/f.json", "ci/x.yml", "conftest.py", "tests/conftest.py",
                                  ".github/workflows/ci.yml", "src/app.py", "README.md"])
def test_the_cli_patterns_cover_every_path_the_glob_protects(glob: str, path: str) -> None:
    if is_protected(path, [glob]):
        assert any(cli_wildcard(path, p) for p in wildcard_patterns(glob)), (glob, path, wildcard_patterns(glob))


def test_the_stage_globs_become_edit_deny_rules_after_the_users_own() -> None:
    inline = {"permission": {"bash": {"*": "allow"}, "edit": {"docs/*": "deny", "tests/*": "allow"}}, "model": "m"}
    env = with_protect("kilo", {"KILO_CONFIG_CONTENT": json.dumps(inline), "A": "1"}, ["tests/**", "verify.sh"])
    config = json.loads(env["KILO_CONFIG_CONTENT"])
    assert list(config["permission"]["edit"].items()) == [
        ("docs/*", "deny"), ("tests/*", "deny"), ("verify.sh", "deny"), ("*/verify.sh", "deny")]
    assert config["permission"]["bash"] == {"*": "allow"} and config["model"] == "m" and env["A"] == "1"
    assert json.loads(with_protect("opencode", {}, ["x/"])["OPENCODE_CONFIG_CONTENT"]) == \
        {"permission": {"edit": {"x/*": "deny"}}}
    assert edit_denies("deny", ["x/"]) == "deny" and edit_denies("ask", ["x/"]) == {"*": "ask", "x/*": "deny"}
    assert with_protect("kilo", {"KILO_CONFIG_CONTENT": "{broken"}, ["x/"]) == {"KILO_CONFIG_CONTENT": "{broken"}
    assert with_protect("kilo", {"B": "2"}, []) == {"B": "2"}


def test_each_permission_request_is_answered_by_one_turn_only() -> None:
    """Parallel reviewer turns share the server and all see every ask: its own session's turn
    answers it; a subagent's ask (a session with no turn of its own) goes to the first turn."""
    backend = ServeBackend("kilo", "kilo", fallback=None)  # type: ignore[arg-type]
    backend.turn_started("ses_a")
    backend.turn_started("ses_b")
    assert not backend.claim("per_1", "ses_a", "ses_b")  # B leaves A's ask to A
    assert backend.claim("per_1", "ses_a", "ses_a")
    assert not backend.claim("per_1", "ses_a", "ses_a")  # answered once
    assert backend.claim("per_2", "ses_child", "ses_b") and not backend.claim("per_2", "ses_child", "ses_a")
    backend.turn_ended("ses_a")
    assert backend.claim("per_3", "ses_a", "ses_b")  # A's turn is over: someone must answer
