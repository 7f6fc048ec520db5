"""`kilo-loop revert` through Click's CliRunner, against a real temporary repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.checkpoint.store import capture_checkpoint, capture_patch_checkpoint
from kilo_loop.cli import main
from kilo_loop.commands import revert as revert_module
from kilo_loop.commands.revert import show_path
from tests.support.git import git, private_git_config


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in private_git_config(tmp_path_factory.mktemp("git")).items():
        monkeypatch.setenv(key, value)


@pytest.fixture(params=[capture_checkpoint, capture_patch_checkpoint], ids=["trees", "patches"])
def project(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A repo with run `run-1` whose checkpoint 1 has README "before"; the agent then changed things.
    Checkpoint 1 is in today's format (trees) or in the one runs were recorded in before (patches)."""
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q")
    (root / "README.md").write_text("committed\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    (root / "README.md").write_text("before\n")
    run_dir = root / ".kilocode-loop/runs/run-1"
    run_dir.mkdir(parents=True)
    (run_dir / "state.json").write_text("{}")
    request.param(root, run_dir / "checkpoints", 1)
    (root / "README.md").write_text("agent\n")
    (root / "agent.txt").write_text("new\n")
    return root


def invoke(project: Path, *args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["revert", "-C", str(project), *args], input=input)
    return result.exit_code, result.output


def untouched(project: Path) -> bool:
    return (project / "README.md").read_text() == "agent\n" and (project / "agent.txt").exists()


def test_declining_the_confirmation_changes_nothing(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(revert_module, "stdin_is_interactive", lambda: True)
    code, output = invoke(project, "--run", "run-1", "--before", "1", input="n\n")
    assert code == 1 and untouched(project)
    assert "Revert the working tree to before iteration 1? [y/N]" in output
    assert "README.md" in output and "agent.txt" in output and "nothing changed" in output


def test_accepting_the_confirmation_reverts(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(revert_module, "stdin_is_interactive", lambda: True)
    code, output = invoke(project, "--run", "last", "--before", "1", input="y\n")
    assert code == 0, output
    assert (project / "README.md").read_text() == "before\n" and not (project / "agent.txt").exists()


def test_yes_reverts_without_asking(project: Path) -> None:
    code, output = invoke(project, "--run", "run-1", "--before", "1", "--yes")
    assert code == 0, output
    assert "[y/N]" not in output and "deleted 1 file(s)" in output
    assert (project / "README.md").read_text() == "before\n" and not (project / "agent.txt").exists()
    assert (project / ".kilocode-loop/runs/run-1/checkpoints/iter-01.json").exists()


def test_non_interactive_stdin_without_yes_refuses(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(revert_module, "stdin_is_interactive", lambda: False)
    code, output = invoke(project, "--run", "run-1", "--before", "1", input="y\n")
    assert code == 1 and "use --yes" in output and untouched(project)


@pytest.mark.parametrize("run_id", ["nope", "../run-1", "..", "run-1/../run-1", "/etc"])
def test_unknown_or_unsafe_run_id_is_a_clear_error(project: Path, run_id: str) -> None:
    code, output = invoke(project, "--run", run_id, "--before", "1", "--yes")
    assert code == 1 and "kilo-loop: " in output and ("no saved run" in output or "invalid run id" in output)
    assert untouched(project)


def test_missing_checkpoint_is_a_clear_error(project: Path) -> None:
    code, output = invoke(project, "--run", "run-1", "--before", "7", "--yes")
    assert code == 1 and untouched(project)
    assert "run run-1 has no checkpoint before iteration 7, only before 1: pass --before 1" in output


def test_a_run_without_checkpoints_says_there_is_nothing_to_revert_to(project: Path) -> None:
    (project / ".kilocode-loop/runs/run-2").mkdir()
    (project / ".kilocode-loop/runs/run-2/state.json").write_text("{}")
    code, output = invoke(project, "--run", "run-2", "--before", "1", "--yes")
    assert code == 1 and untouched(project)
    assert "run run-2 has no checkpoints (it ran with --no-checkpoint" in output


def test_the_checkpoints_a_run_has_are_named_when_another_is_asked_for() -> None:
    assert revert_module.no_such_checkpoint("r", 9, [1, 2, 3]) == (
        "run r has no checkpoint before iteration 9: it has one before iterations 1 to 3; pass one of those to --before")
    assert "before iterations 1, 3" in revert_module.no_such_checkpoint("r", 2, [1, 3])


@pytest.mark.parametrize("before", ["0", "-2", "x"])
def test_bad_iteration_is_a_usage_error(project: Path, before: str) -> None:
    code, _ = invoke(project, "--run", "run-1", "--before", before, "--yes")
    assert code == 2 and untouched(project)


def test_moved_head_is_refused(project: Path) -> None:
    git(project, "add", "README.md")
    git(project, "commit", "-q", "-m", "agent committed")
    code, output = invoke(project, "--run", "run-1", "--before", "1", "--yes")
    assert code == 1 and "HEAD moved" in output and untouched(project)


def test_nothing_to_do(project: Path) -> None:
    (project / "README.md").write_text("before\n")
    os.remove(project / "agent.txt")
    code, output = invoke(project, "--run", "run-1", "--before", "1")
    assert code == 0 and "nothing to do" in output


def test_show_path_quotes_control_characters() -> None:
    assert show_path("a b/é.txt") == "a b/é.txt"
    assert show_path("evil\nDeleted: nothing") == '"evil\\nDeleted: nothing"'
