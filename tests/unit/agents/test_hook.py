"""The guard as a pre-tool hook (Claude Code, Codex, Gemini CLI): refuse before the call runs."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kilo_loop.agent.hook import BLOCK_EXIT, denial, hook_command, load_guard, main, write_rules
from kilo_loop.guard.runtime import Guard

# Destructive commands are data here: they reach the guard in-process, never a shell.
FORCE_PUSH = "git push --force origin main"


def payload(tool: str, command: str, cwd: str = "/tmp") -> str:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": {"command": command},
                       "cwd": cwd})


@pytest.mark.parametrize("tool", ["Bash", "shell", "run_shell_command"])
def test_destructive_shell_calls_are_refused_for_every_cli(tool: str) -> None:
    reason = denial(payload(tool, FORCE_PUSH), Guard())
    assert reason is not None and "denied by the loop's guard" in reason


@pytest.mark.parametrize("raw", ["", "not json", "[1]", '{"tool_name": "Bash"}', payload("Bash", "ls -la"),
                                 payload("Read", FORCE_PUSH)])
def test_everything_else_runs(raw: str) -> None:
    assert denial(raw, Guard()) is None


def test_run_patterns_come_from_the_rules_file(tmp_path: Path) -> None:
    rules = write_rules(tmp_path / "rules.json", [r"^make deploy\b"], [])
    assert denial(payload("Bash", "make deploy prod"), load_guard(rules)) is not None
    assert denial(payload("Bash", "make test"), load_guard(rules)) is None
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    assert denial(payload("Bash", FORCE_PUSH), load_guard(broken)) is not None  # built-in rules still apply


def test_main_blocks_with_exit_2_and_a_json_decision(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(payload("Bash", FORCE_PUSH)))
    assert main([]) == BLOCK_EXIT
    out, err = capsys.readouterr()
    decision = json.loads(out)
    assert decision["hookSpecificOutput"]["permissionDecision"] == "deny" and "guard" in err
    monkeypatch.setattr(sys, "stdin", io.StringIO(payload("Bash", "ls")))
    assert main([]) == 0


def test_a_call_the_guard_fails_on_is_refused_not_let_through(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    def crash(*_args: object, **_kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(Guard, "check_tool_use", crash)
    monkeypatch.setattr(sys, "stdin", io.StringIO(payload("Bash", "ls")))
    assert main([]) == BLOCK_EXIT
    out, err = capsys.readouterr()
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "could not judge this call (RecursionError" in err


def test_the_hook_module_imports_only_the_guard() -> None:
    """It runs on every tool call: no CLI, settings, dashboard or notification stack."""
    code = ("import sys, runpy; sys.argv=['hook']; import kilo_loop.agent.hook; "
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    for heavy in ("click", "pydantic", "pydantic_settings", "fastapi", "uvicorn", "apprise", "rich",
                  "kilo_loop.settings", "kilo_loop.cli"):
        assert heavy not in out, heavy


def test_the_rules_file_carries_the_runs_guard_packs(tmp_path: Path) -> None:
    command = payload("Bash", "kubectl delete namespace prod")
    assert denial(command, load_guard(write_rules(tmp_path / "on.json", [], []))) is not None
    off = write_rules(tmp_path / "off.json", [], [], {"kubernetes": False})
    assert denial(command, load_guard(off)) is None


@pytest.mark.parametrize("shadow", ["typing.py", "json.py", "re.py"])
def test_the_installed_hook_ignores_modules_in_the_agents_directory(tmp_path: Path, shadow: str) -> None:
    """The CLI starts the hook in the agent's working directory; a module file there that shadows the
    standard library must not fail the hook (which would let the call run) or replace the guard."""
    (tmp_path / shadow).write_text("raise SystemExit('the shadowing module was imported')\n", encoding="utf-8")
    rules = write_rules(tmp_path / "run" / "guard-rules.json", [], [])
    argv = shlex.split(hook_command(rules))
    assert argv[1:4] == ["-P", "-m", "kilo_loop.agent.hook"]
    refused = subprocess.run(argv, input=payload("Bash", FORCE_PUSH, str(tmp_path)), cwd=tmp_path,
                             capture_output=True, text=True, check=False, timeout=60)
    assert refused.returncode == BLOCK_EXIT, refused.stderr
    assert json.loads(refused.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    allowed = subprocess.run(argv, input=payload("Bash", "ls", str(tmp_path)), cwd=tmp_path,
                             capture_output=True, text=True, check=False, timeout=60)
    assert (allowed.returncode, allowed.stdout) == (0, "")


def test_the_hook_process_imports_no_pathlib_dataclasses_or_click(tmp_path: Path) -> None:
    rules = write_rules(tmp_path / "guard-rules.json", [], [])
    probe = ("import atexit, sys, runpy; atexit.register(lambda: sys.__stderr__.write("
             "'MODULES ' + ' '.join(sorted(sys.modules)) + '\\n')); "
             f"sys.argv = ['hook', '--rules', {str(rules)!r}]; runpy.run_module('kilo_loop.agent.hook', "
             "run_name='__main__')")
    done = subprocess.run([sys.executable, "-P", "-c", probe], input=payload("Bash", "ls"), cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=60)
    modules = next(line for line in done.stderr.splitlines() if line.startswith("MODULES ")).split()[1:]
    assert "kilo_loop.guard.runtime" in modules
    for heavy in ("click", "pathlib", "dataclasses", "tree_sitter_bash", "re2", "tempfile"):
        assert heavy not in modules, heavy
