"""Fixtures for the end-to-end tests that run the real `kilo` / `opencode` CLIs offline.

- `agent_bins`: the pinned CLIs installed by `scripts/install-agent-clis.sh` (fails, never skips,
  when they are missing).
- `fake_provider`: a started `FakeProvider` (the scripted model server), stopped after the test.
- `git_project`: a temporary git repository with one commit.
- `agent_home`: an isolated HOME for the CLIs.
- `run_agent`: runs `<cli> run --format json …` once against `fake_provider` and parses its output.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from .fake_provider import FakeProvider, Runtime, provider_env

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_BIN = REPO_ROOT / ".tools" / "node_modules" / ".bin"
INSTALL_HINT = "run scripts/install-agent-clis.sh"
AUTO_FLAGS: dict[Runtime, str] = {"kilo": "--auto", "opencode": "--dangerously-skip-permissions"}
RUN_TIMEOUT_S = 180.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/e2e is an e2e test, whether or not its module says so."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)


# --------------------------------------------------------------------------- binaries


@dataclass(frozen=True)
class AgentBins:
    kilo: Path
    opencode: Path

    def for_runtime(self, runtime: Runtime) -> Path:
        return self.kilo if runtime == "kilo" else self.opencode


def find_agent_bins(bin_dir: Path = TOOLS_BIN) -> AgentBins:
    """The installed CLIs, or a clear error naming the install script."""
    missing = [name for name in ("kilo", "opencode") if not os.access(bin_dir / name, os.X_OK)]
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)} not found in {bin_dir}: {INSTALL_HINT}")
    return AgentBins(kilo=bin_dir / "kilo", opencode=bin_dir / "opencode")


@pytest.fixture(scope="session")
def agent_bins() -> AgentBins:
    try:
        return find_agent_bins()
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)


# --------------------------------------------------------------------------- provider, project, home


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.fixture
def git_project(tmp_path: Path) -> Path:
    """A git repository (branch main) with user.name/email set locally and one commit."""
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q", "-b", "main")
    _git(project, "config", "user.name", "E2E Tester")
    _git(project, "config", "user.email", "e2e@example.invalid")
    _git(project, "config", "commit.gpgsign", "false")
    (project / "README.md").write_text("# e2e project\n", encoding="utf-8")
    _git(project, "add", "README.md")
    _git(project, "commit", "-q", "-m", "initial commit")
    return project


@pytest.fixture
def agent_home(tmp_path: Path) -> Path:
    """HOME for the CLIs (XDG dirs are created under it by `provider_env`)."""
    home = tmp_path / "home"
    home.mkdir()
    return home


# --------------------------------------------------------------------------- running a CLI


def parse_ndjson(stdout: str) -> tuple[list[dict[str, Any]], list[str]]:
    """JSON objects one a line; anything else is returned apart, not dropped."""
    events: list[dict[str, Any]] = []
    other: list[str] = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            parsed = json.loads(line)
        except ValueError:
            other.append(line)
            continue
        if isinstance(parsed, dict):
            events.append(parsed)
        else:
            other.append(line)
    return events, other


@dataclass
class AgentRun:
    """One finished `<cli> run --format json` process."""

    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    events: list[dict[str, Any]] = field(default_factory=list)
    non_json_lines: list[str] = field(default_factory=list)

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == event_type]

    def tool_uses(self, tool: str) -> list[dict[str, Any]]:
        return [e for e in self.of_type("tool_use") if e.get("part", {}).get("tool") == tool]

    @property
    def session_id(self) -> str:
        ids = {e.get("sessionID") for e in self.events}
        if len(ids) != 1 or not isinstance(next(iter(ids)), str):
            raise AssertionError(f"expected one sessionID across events, got {ids}")
        return str(next(iter(ids)))

    def describe(self) -> str:
        """Everything a failing assertion needs to explain itself."""
        return (
            f"$ {' '.join(self.command)}\nexit {self.returncode} after {self.seconds:.1f}s\n"
            f"--- stdout\n{self.stdout[-6000:]}\n--- stderr\n{self.stderr[-3000:]}"
        )


class RunAgent(Protocol):
    def __call__(
        self,
        runtime: Runtime,
        prompt: str,
        *,
        project: Path,
        cwd: Path | None = None,
        session: str | None = None,
        permission: Mapping[str, Any] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> AgentRun: ...


def agent_command(binary: Path, runtime: Runtime, prompt: str, session: str | None) -> list[str]:
    command = [str(binary), "run", "--format", "json", AUTO_FLAGS[runtime], "--title", "t"]
    if session is not None:
        command += ["--session", session]
    return [*command, prompt]


def agent_environment(overrides: Mapping[str, str], project: Path) -> dict[str, str]:
    """A small, explicit environment: the developer's KILO_*/OPENCODE_* never leak in."""
    env = {name: os.environ[name] for name in ("PATH", "TMPDIR", "LANG") if name in os.environ}
    env.setdefault("LANG", "C.UTF-8")
    env.update(overrides)
    env["PWD"] = str(project)  # both CLIs take their working directory from PWD
    return env


@pytest.fixture
def run_agent(agent_bins: AgentBins, fake_provider: FakeProvider, agent_home: Path) -> RunAgent:
    def run(
        runtime: Runtime,
        prompt: str,
        *,
        project: Path,
        cwd: Path | None = None,
        session: str | None = None,
        permission: Mapping[str, Any] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> AgentRun:
        overrides = provider_env(fake_provider.port, runtime, agent_home, permission=permission)
        overrides.update(extra_env or {})
        command = agent_command(agent_bins.for_runtime(runtime), runtime, prompt, session)
        started = time.monotonic()
        done = subprocess.run(
            command,
            check=False,
            cwd=cwd or project,
            env=agent_environment(overrides, project),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        events, other = parse_ndjson(done.stdout)
        return AgentRun(command, done.returncode, done.stdout, done.stderr,
                        time.monotonic() - started, events, other)

    return run
