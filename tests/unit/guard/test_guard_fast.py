"""`kilo-loop guard check` / `guard hook` on the Click-free entry path answer exactly as the Click CLI.

Each case runs the real entry point (`kilo_loop.entry.main`, what `kilo-loop` and `python -m kilo_loop`
run) and the Click CLI (`kilo_loop.cli.main`) in fresh interpreters with the same argv, stdin, cwd
and environment, and compares exit code, stdout and stderr byte for byte. Destructive commands are
data: they reach the guard as argv elements or JSON on stdin, never through a shell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kilo_loop.commands.guard_fast import CheckArgs, parse_check

_RUN = """
import json, sys
args = json.loads(sys.argv[1])
sys.argv = ["kilo-loop", *args]
if sys.argv.pop(1) == "entry":
    from kilo_loop.entry import main
else:
    from kilo_loop.cli import main
main()
"""
_PROBE = """
import atexit, json, sys
atexit.register(lambda: sys.__stderr__.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = ["kilo-loop", *json.loads(sys.argv[1])]
from kilo_loop.entry import main
main()
"""


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("KILO_LOOP_GUARD")}
    return {**env, **extra}


def run(way: str, args: list[str], cwd: Path, stdin: str = "", env: dict[str, str] | None = None,
        ) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-c", _RUN, json.dumps([way, *args])], cwd=cwd, input=stdin,
                          capture_output=True, text=True, check=False, timeout=60, env=env or clean_env())
    return proc.returncode, proc.stdout, proc.stderr


def hook_payload(command: str, cwd: str) -> str:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
                       "cwd": cwd})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a-file").write_text("x")
    return tmp_path


CASES: list[tuple[str, list[str], str]] = [
    ("allow", ["guard", "check", "git status"], ""),
    ("deny", ["guard", "check", "sudo git push --force origin main"], ""),
    ("json", ["guard", "check", "--json", "git commit -m x"], ""),
    ("json after", ["guard", "check", "git reset --hard", "--json"], ""),
    ("empty command", ["guard", "check", ""], ""),
    ("cwd temp", ["guard", "check", "--cwd", "{tmp}", "rm -rf build"], ""),
    ("cwd= form", ["guard", "check", "--cwd=/srv/repo", "rm -rf build"], ""),
    ("cwd missing dir", ["guard", "check", "--cwd", "/no/such/dir", "rm -rf build"], ""),
    ("unicode", ["guard", "check", "echo 'héllo ✓' && git push"], ""),
    ("ansi escape", ["guard", "check", "git push \x1b[31mred\x1b[0m"], ""),
    ("batch", ["guard", "check", "--batch"],
     "\n".join([json.dumps({"command": "git push"}), "not json", json.dumps({"command": "ls", "cwd": 7}),
                json.dumps({"command": "rm -rf build", "cwd": "/srv/repo"}), "",
                json.dumps({"command": "rm -rf build", "cwd": "{tmp}"})]) + "\r\n"),
    ("batch json cwd", ["guard", "check", "--json", "--cwd", "{tmp}", "--batch"],
     json.dumps({"command": "rm -rf out"}) + "\n"),
    # The lines below go to Click: usage errors, help, patterns, a --cwd Click refuses.
    ("no command", ["guard", "check"], ""),
    ("command and batch", ["guard", "check", "--batch", "ls"], ""),
    ("two commands", ["guard", "check", "ls", "pwd"], ""),
    ("option-like command", ["guard", "check", "-rf"], ""),
    ("double dash", ["guard", "check", "--", "-rf"], ""),
    ("help", ["guard", "check", "--help"], ""),
    ("short help", ["guard", "check", "-h"], ""),
    ("deny pattern", ["guard", "check", "--deny", "^make deploy", "make deploy prod"], ""),
    ("bad pattern", ["guard", "check", "--deny", "(", "ls"], ""),
    ("cwd is a file", ["guard", "check", "--cwd", "{tmp}/a-file", "ls"], ""),
    ("cwd without value", ["guard", "check", "ls", "--cwd"], ""),
    ("unknown option", ["guard", "check", "--jsn", "ls"], ""),
    ("hook deny", ["guard", "hook"], hook_payload("git push --force origin main", "{tmp}")),
    ("hook allow", ["guard", "hook"], hook_payload("ls -la", "{tmp}")),
    ("hook malformed", ["guard", "hook"], "{not json"),
    ("hook empty", ["guard", "hook"], ""),
    ("hook other event", ["guard", "hook"], json.dumps({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                                                       "tool_input": {"command": "git push"}})),
    ("hook help", ["guard", "hook", "--help"], ""),
    ("guard help", ["guard"], ""),
    ("packs", ["guard", "packs", "--json"], ""),
]


@pytest.mark.parametrize(("args", "stdin"), [pytest.param(a, s, id=name) for name, a, s in CASES])
def test_the_entry_answers_like_the_click_cli(project: Path, args: list[str], stdin: str) -> None:
    args = [arg.replace("{tmp}", str(project)) for arg in args]
    stdin = stdin.replace("{tmp}", str(project))
    assert run("entry", args, project, stdin) == run("cli", args, project, stdin)


@pytest.mark.parametrize("config", [
    {"guardDeny": ["^make deploy"]},
    {"guardDeny": ["("]},
    {"guardPacks": {"git": False}},
    {"guardPacks": {"no-such-pack": False}},
    "{broken",
])
@pytest.mark.parametrize("args", [["guard", "check", "make deploy && git push"], ["guard", "hook"]])
def test_project_config_is_applied_alike(project: Path, config: object, args: list[str]) -> None:
    (project / ".kilocode-loop").mkdir()
    text = config if isinstance(config, str) else json.dumps(config)
    (project / ".kilocode-loop" / "config.json").write_text(text)
    stdin = hook_payload("make deploy && git push", str(project)) if args[1] == "hook" else ""
    fast = run("entry", args, project, stdin)
    assert fast == run("cli", args, project, stdin)
    if config == {"guardDeny": ["^make deploy"]}:
        assert "custom-deny" in fast[1]


def test_environment_patterns_are_applied_alike(project: Path) -> None:
    for value in ('["^make deploy"]', "not json"):
        env = clean_env(KILO_LOOP_GUARD_DENY=value)
        args = ["guard", "check", "make deploy"]
        assert run("entry", args, project, env=env) == run("cli", args, project, env=env)


def test_outside_a_repository_the_directory_is_the_project(tmp_path: Path) -> None:
    (tmp_path / ".kilocode-loop").mkdir()
    (tmp_path / ".kilocode-loop" / "config.json").write_text(json.dumps({"guardDeny": ["^make deploy"]}))
    inner = tmp_path / "sub"
    inner.mkdir()
    fast = run("entry", ["guard", "check", "make deploy"], inner)
    assert fast == run("cli", ["guard", "check", "make deploy"], inner)
    assert fast[0] == 1 and "custom-deny" in fast[1]


def modules_of(args: list[str], cwd: Path, stdin: str = "") -> set[str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], cwd=cwd, input=stdin,
                          capture_output=True, text=True, check=False, timeout=60, env=clean_env())
    marker = [line for line in proc.stderr.splitlines() if line.startswith("MODULES ")]
    assert marker, proc.stderr
    return set(json.loads(marker[-1].removeprefix("MODULES ")))


@pytest.mark.parametrize(("args", "stdin"), [
    (["guard", "check", "ls"], ""),
    (["guard", "check", "--json", "--cwd", "{tmp}", "git push"], ""),
    (["guard", "check", "--batch"], '{"command": "git push"}\n'),
    (["guard", "hook"], hook_payload("git push", "{tmp}")),
])
def test_the_hot_guard_commands_import_neither_click_nor_the_cli(project: Path, args: list[str],
                                                                stdin: str) -> None:
    args = [arg.replace("{tmp}", str(project)) for arg in args]
    modules = modules_of(args, project, stdin.replace("{tmp}", str(project)))
    assert "kilo_loop.commands.guard_fast" in modules  # it did take the fast path
    assert not {m for m in modules if m.split(".")[0] in ("click", "pydantic", "rich", "dataclasses")}
    assert "kilo_loop.cli" not in modules and "kilo_loop.commands.guard" not in modules


def test_other_command_lines_go_to_click(project: Path) -> None:
    assert "click" in modules_of(["guard", "check", "--deny", "x", "ls"], project)
    assert "click" in modules_of(["--version"], project)


@pytest.mark.parametrize(("args", "parsed"), [
    (["ls"], CheckArgs("ls", False, None)),
    (["--json", "ls"], CheckArgs("ls", True, None)),
    (["ls", "--cwd", "/nowhere"], CheckArgs("ls", False, "/nowhere")),
    (["--cwd=", "ls"], CheckArgs("ls", False, "")),
    (["--batch", "--cwd", "/nowhere"], CheckArgs(None, False, "/nowhere")),
    ([], None),
    (["--batch", "ls"], None),
    (["ls", "pwd"], None),
    (["--cwd", "--json", "ls"], None),
    (["--cwd"], None),
    (["--deny", "x", "ls"], None),
    (["--", "ls"], None),
    (["-"], None),
    (["--json=1", "ls"], None),
])
def test_parse_check_takes_only_the_plain_lines(args: list[str], parsed: CheckArgs | None) -> None:
    assert parse_check(args) == parsed


def test_parse_check_leaves_a_file_or_unreadable_cwd_to_click(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert parse_check(["--cwd", str(tmp_path / "f"), "ls"]) is None
    assert parse_check(["--cwd", str(tmp_path), "ls"]) == CheckArgs("ls", False, str(tmp_path))


def test_outside_a_repository_too_the_guard_check_imports_no_dataclasses(tmp_path: Path) -> None:
    modules = modules_of(["guard", "check", "ls"], tmp_path)
    assert "kilo_loop.run.layout" in modules  # the project lookup fell back to `.kilocode-loop/` dirs
    assert not {m for m in modules if m.split(".")[0] in ("click", "dataclasses", "inspect")}


def test_guard_hook_refuses_a_call_the_guard_fails_on(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from kilo_loop.commands import guard_actions
    from kilo_loop.guard.runtime import Guard

    def crash(*_args: object, **_kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(Guard, "check_tool_use", crash)
    raw = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}})
    assert guard_actions.answer_hook(raw) == 0
    answer = json.loads(capsys.readouterr().out)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "could not judge" in answer["permissionDecisionReason"]
