"""Finding a backend: runtime names, binaries on PATH or in *_BIN variables, and module:attr plugins."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kilo_loop.agent import registry
from kilo_loop.agent.registry import (
    RUNTIMES,
    BackendLoadError,
    auto_runtime,
    create_backend,
    find_binary,
    load_backend,
    runtime_from_binary,
)
from kilo_loop.settings import Settings

PLUGINS = "tests.unit.agents.plugin_backends"


def executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.mark.parametrize(("binary", "runtime"), [
    ("/usr/bin/kilo", "kilo"), ("/x/kilocode", "kilo"), ("/x/opencode", "opencode"), ("claude", "claude"),
    ("/opt/bin/codex", "codex"),
    ("/x/my-agent", "kilo"),
])
def test_runtime_from_binary_name(binary: str, runtime: str) -> None:
    assert runtime_from_binary(binary) == runtime


def test_auto_runtime_prefers_kilo_bin_then_the_first_runtime_bin() -> None:
    assert auto_runtime(None, {}) == "kilo"
    assert auto_runtime(None, {"KILO_BIN": "/x/opencode"}) == "opencode"
    assert auto_runtime("/x/claude", {"KILO_BIN": "/x/opencode"}) == "claude"
    assert auto_runtime(None, {"CLAUDE_BIN": "/y/agent"}) == "claude"


def test_find_binary_uses_the_runtime_variable_then_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude = executable(tmp_path / "claude")
    other = executable(tmp_path / "my-claude")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_binary("claude", None, {}) == str(claude)
    assert find_binary("claude", None, {"CLAUDE_BIN": str(other)}) == str(other)
    assert find_binary("claude", str(claude), {"CLAUDE_BIN": str(other)}) == str(claude)
    # opencode still honours KILO_BIN, as before the agent packages
    assert find_binary("opencode", None, {"KILO_BIN": str(other)}) == str(other)


def test_missing_binary_names_the_install_and_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BackendLoadError) as err:
        find_binary("claude", None, {})
    assert "agent CLI not found: claude (runtime claude)" in str(err.value)
    assert "@anthropic-ai/claude-code" in str(err.value) and "CLAUDE_BIN" in str(err.value)


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_every_runtime_builds_its_backend(runtime: str) -> None:
    backend = create_backend(runtime, f"/bin/{runtime}")
    assert backend.name == runtime
    assert callable(getattr(backend, "prepare", None))


def test_unknown_runtime_is_refused() -> None:
    with pytest.raises(BackendLoadError, match="unknown runtime 'vim'"):
        create_backend("vim", "/bin/vim")


def test_plugin_instance_class_and_factory() -> None:
    assert load_backend(f"{PLUGINS}:INSTANCE").name == "echo"
    assert load_backend(f"{PLUGINS}:EchoBackend").label == "class"
    assert load_backend(f"{PLUGINS}:factory").label == "factory"


def test_plugin_factories_get_the_settings_when_they_take_them() -> None:
    settings = Settings(model="p/m", agent="build")
    assert load_backend(f"{PLUGINS}:SettingsBackend", settings).label == "model=p/m"
    assert load_backend(f"{PLUGINS}:factory_with_settings", settings).label == "agent=build"
    # a factory without parameters is called without them
    assert load_backend(f"{PLUGINS}:factory", settings).label == "factory"


@pytest.mark.parametrize(("reference", "message"), [
    ("no_colon", "must look like"),
    (f"{PLUGINS}:missing", "cannot load backend"),
    ("kilo_loop_no_such_module:x", "cannot load backend"),
    (f"{PLUGINS}:NOT_A_BACKEND", "is not an agent backend"),
    (f"{PLUGINS}:broken_factory", "cannot create backend.*no licence key"),
])
def test_plugin_errors_are_clear(reference: str, message: str) -> None:
    with pytest.raises(BackendLoadError, match=message):
        load_backend(reference)


def test_registry_imports_no_backend_package_up_front() -> None:
    """Each CLI's package is imported only when that runtime is used."""
    import subprocess
    import sys

    code = ("import sys, kilo_loop.agent.registry; "
            "print(sorted(m for m in sys.modules if m.startswith('kilo_loop.agent.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(registry.__file__).parents[2])})
    assert "claude" not in out.stdout and "kilo.backend" not in out.stdout
