"""One error root carrying its exit code, turned into output and exit status in one place (cli.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kilo_loop.agent.registry import BackendLoadError
from kilo_loop.checkpoint.store import CheckpointError
from kilo_loop.cli import main
from kilo_loop.errors import ConfigError, KiloLoopError, UsageError
from kilo_loop.git import GitError, NotAGitRepo
from kilo_loop.goal.model import GoalError
from kilo_loop.goal.scaffold import ScaffoldError
from kilo_loop.run.store import RunNotFound
from kilo_loop.runner import SetupError
from kilo_loop.web.binding import BindError, PortInUse

USER_FACING: list[tuple[KiloLoopError, int]] = [
    (ConfigError("config.json: key 'x': bad"), 2),
    (GoalError("no stages", Path("plan.md")), 2),
    (SetupError("--project x is not a directory"), 2),
    (NotAGitRepo("not inside a git repository"), 2),
    (BackendLoadError("cannot load backend"), 2),
    (PortInUse(7999), 2),
    (BindError("cannot bind"), 2),
    (RunNotFound("no saved run 'x'"), 1),
    (CheckpointError("no checkpoint before iteration 3"), 1),
    (ScaffoldError("already exists"), 1),
    (GitError("git failed"), 1),
]


@pytest.mark.parametrize(("error", "code"), USER_FACING, ids=lambda value: type(value).__name__)
def test_each_user_facing_error_carries_its_exit_code(error: KiloLoopError, code: int) -> None:
    assert isinstance(error, KiloLoopError)
    assert error.exit_code == code
    assert isinstance(error, UsageError) == (code == 2)


def test_the_old_bases_still_catch_them() -> None:
    # Callers that caught the standard base keep working.
    assert isinstance(ConfigError("x"), ValueError) and isinstance(PortInUse(1), OSError)
    assert isinstance(RunNotFound("x"), LookupError) and isinstance(SetupError("x"), RuntimeError)


def test_headline_adds_the_label() -> None:
    assert GoalError("no stages", Path("plan.md"), 3).headline() == "goal error: plan.md:3: no stages"
    assert ConfigError("bad key").headline() == "bad key"


@pytest.fixture
def failing_command() -> Iterator[str]:
    @click.command("explode")
    @click.option("--code", type=int)
    def explode(code: int) -> None:
        error = UsageError("the usage was wrong") if code == 2 else KiloLoopError("it failed")
        raise error

    main.add_command(explode)
    yield "explode"
    main.commands.pop("explode")


@pytest.mark.parametrize("code", [1, 2])
def test_the_group_maps_any_kilo_loop_error(failing_command: str, code: int) -> None:
    result = CliRunner().invoke(main, [failing_command, "--code", str(code)])
    assert result.exit_code == code
    assert result.stderr == ("kilo-loop: the usage was wrong\n" if code == 2 else "kilo-loop: it failed\n")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    return tmp_path / "repo"


@pytest.mark.parametrize(("args", "code", "needle"), [
    (["report", "nope"], 1, "kilo-loop: no saved run"),
    (["revert", "--run", "nope", "--before", "1", "--yes"], 1, "kilo-loop: "),
    (["--goal", "missing.md", "--no-dashboard", "--no-confirm"], 2, "kilo-loop: goal error: "),
])
def test_real_commands_end_in_the_one_place(repo: Path, args: list[str], code: int, needle: str) -> None:
    result = CliRunner().invoke(main, [*args, "-C", str(repo)])
    assert result.exit_code == code, result.output
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_bad_config_value_is_a_usage_error(repo: Path) -> None:
    (repo / ".kilocode-loop").mkdir()
    (repo / ".kilocode-loop" / "config.json").write_text(json.dumps({"iterations": "many"}))
    result = CliRunner().invoke(main, ["--goal-text", "x", "--no-dashboard", "-C", str(repo)])
    assert result.exit_code == 2
    assert result.stderr.startswith("kilo-loop: ") and "iterations" in result.stderr


def test_report_given_a_run_id_and_last_refuses_instead_of_dropping_the_id(repo: Path) -> None:
    result = CliRunner().invoke(main, ["report", "r1", "--last", "-C", str(repo)])
    assert result.exit_code == 2, result.output
    assert "pass either a RUN_ID (r1) or --last, not both" in result.stderr
