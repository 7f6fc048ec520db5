"""How a run picks its backend from the settings: --runtime, *_BIN, a plugin, stage runtimes;
and the CLI's --runtime / --isolate-home / --mode flags."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.agent.router import RuntimeRouter
from kilo_loop.goal.model import Goal, Stage
from kilo_loop.runner import SetupError, make_backend
from kilo_loop.settings import Settings


def executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def bins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("kilo", "claude", "codex", "gemini", "cursor-agent"):
        executable(tmp_path / name)
    monkeypatch.setenv("PATH", str(tmp_path))
    for name in ("KILO_BIN", "OPENCODE_BIN", "CLAUDE_BIN", "CODEX_BIN", "GEMINI_BIN", "CURSOR_BIN"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.mark.parametrize("runtime", ["kilo", "claude", "codex", "gemini", "cursor"])
def test_runtime_flag_picks_the_backend(bins: Path, runtime: str) -> None:
    backend, name = make_backend(Settings(runtime=runtime))  # type: ignore[arg-type]
    assert name == runtime and backend.name == runtime


def test_auto_follows_a_runtime_bin(bins: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_BIN", str(bins / "codex"))
    assert make_backend(Settings())[1] == "codex"


def test_stage_runtimes_route_through_one_backend(bins: Path) -> None:
    goal = Goal(title="g", stages=[Stage(id="a", title="a"), Stage(id="b", title="b", runtime="claude")])
    backend, name = make_backend(Settings(runtime="kilo"), goal)
    assert name == "kilo" and isinstance(backend, RuntimeRouter) and backend.runtimes == ["kilo", "claude"]
    plain, _ = make_backend(Settings(runtime="kilo"), Goal(title="g", stages=[Stage(id="a", title="a")]))
    assert not isinstance(plain, RuntimeRouter)


def test_a_missing_stage_runtime_fails_before_the_run(bins: Path) -> None:
    (bins / "codex").unlink()
    goal = Goal(title="g", stages=[Stage(id="a", title="a", runtime="codex")])
    with pytest.raises(SetupError, match="agent CLI not found: codex"):
        make_backend(Settings(runtime="kilo"), goal)


def test_a_plugin_factory_gets_the_settings(bins: Path) -> None:
    settings = Settings(backend="tests.unit.agents.plugin_backends:factory_with_settings", agent="rev")
    backend, name = make_backend(settings)
    assert name == "echo" and getattr(backend, "label", None) == "agent=rev"
    with pytest.raises(SetupError, match="cannot create backend"):
        make_backend(Settings(backend="tests.unit.agents.plugin_backends:broken_factory"))


def test_cli_flags_reach_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kilo_loop import cli

    seen: dict[str, Settings] = {}

    def fake_run_main(settings: Settings, list_goals: bool = False) -> int:
        seen["settings"] = settings
        return 0

    monkeypatch.setattr("kilo_loop.commands.run.run_main", fake_run_main)
    result = CliRunner().invoke(cli.main, ["-C", str(tmp_path), "--runtime", "gemini", "--isolate-home",
                                           "--mode", "plan", "--goal-text", "x"])
    assert result.exit_code == 0, result.output
    settings = seen["settings"]
    assert (settings.runtime, settings.isolate_home, settings.agent) == ("gemini", True, "plan")
    bad = CliRunner().invoke(cli.main, ["--runtime", "vim"])
    assert bad.exit_code == 2 and "vim" in bad.output
