"""Start-up that fits a hook: which modules each cheap command imports (behaviour, not timing).

Each case runs the real CLI entry point in a fresh interpreter and reports `sys.modules` at exit;
the heavy stacks (settings/pydantic, dashboard, notifications, Rich, the loop) must not be there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kilo_loop.cli import SUBCOMMANDS, help_stand_in, load_subcommand, main

_PROBE = """
import atexit, json, sys
atexit.register(lambda: sys.__stderr__.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = ["kilo-loop", *json.loads(sys.argv[1])]
from kilo_loop.cli import main
main()
"""

HEAVY = ("pydantic", "pydantic_settings", "fastapi", "uvicorn", "starlette", "apprise", "rich", "asyncio",
         "kilo_loop.settings", "kilo_loop.runner", "kilo_loop.web", "kilo_loop.notify", "kilo_loop.loop",
         "kilo_loop.goal", "kilo_loop.run.state", "kilo_loop.agent")


def imported_by(args: list[str], cwd: Path, stdin: str = "") -> set[str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], cwd=cwd, input=stdin,
                          capture_output=True, text=True, check=False, timeout=60)
    marker = [line for line in proc.stderr.splitlines() if line.startswith("MODULES ")]
    assert marker, proc.stderr
    return set(json.loads(marker[-1].removeprefix("MODULES ")))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if any(name == h or name.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize(("args", "stdin"), [
    (["--help"], ""),
    (["--version"], ""),
    (["guard", "check", "ls"], ""),
    (["guard", "check", "--json", "git status"], ""),
    (["guard", "hook"], json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                                    "tool_input": {"command": "ls"}})),
])
def test_cheap_commands_import_no_heavy_stack(tmp_path: Path, args: list[str], stdin: str) -> None:
    assert heavy_in(imported_by(args, tmp_path, stdin)) == []


def test_guard_check_reads_project_patterns_without_settings_stack(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".kilocode-loop").mkdir()
    (tmp_path / ".kilocode-loop" / "config.json").write_text(json.dumps({"guardDeny": ["^make deploy"]}))
    proc = subprocess.run([sys.executable, "-m", "kilo_loop", "guard", "check", "make deploy"], cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "deny" in proc.stdout
    assert heavy_in(imported_by(["guard", "check", "make deploy"], tmp_path)) == []


def test_help_does_not_import_any_subcommand(tmp_path: Path) -> None:
    modules = imported_by(["--help"], tmp_path)
    assert not {name for name in modules if name.startswith("kilo_loop.commands.")}
    assert "kilo_loop.guard.runtime" not in modules


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_help_lines_match_the_commands(name: str) -> None:
    command = load_subcommand(name)
    for limit in (45, 80, 200):
        assert help_stand_in(name).get_short_help_str(limit) == command.get_short_help_str(limit)


def test_help_lists_every_subcommand() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    commands = result.output.split("Commands:", 1)[1]
    for name in SUBCOMMANDS:
        assert f"  {name} " in commands


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_each_subcommand_runs_through_the_group(name: str) -> None:
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert isinstance(main, click.Group)
    assert main.get_command(click.Context(main), name) is load_subcommand(name)


def test_unknown_subcommand_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["no-such-command"])
    assert result.exit_code == 2


def test_a_run_without_the_dashboard_does_not_import_its_stack(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    args = ["--dry-run", "--goal-text", "tidy up", "-n", "1", "--no-dashboard", "--no-confirm", "--quiet",
            "--hitl", "off"]
    env = {**os.environ, "KILO_LOOP_DRY_RUN_DELAY": "0"}
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False, timeout=120)
    marker = [line for line in proc.stderr.splitlines() if line.startswith("MODULES ")]
    assert marker, proc.stderr
    modules = set(json.loads(marker[-1].removeprefix("MODULES ")))
    assert "kilo_loop.runner" in modules  # it did run
    assert not {name for name in modules if name.split(".")[0] in ("fastapi", "uvicorn", "starlette")}
    assert not {name for name in modules if name.startswith("kilo_loop.web")}
