"""Fixtures for the end-to-end tests that run the real `kilo` / `opencode` CLIs offline.

- `agent_bins`: the pinned CLIs installed by `scripts/install-agent-clis.sh` (fails, never skips,
  when they are missing).
- `fake_provider`: a started `FakeProvider` (the scripted model server), stopped after the test.
- `git_project`: a temporary git repository with one commit.
- `agent_home`: an isolated HOME for the CLIs.
- `run_agent`: runs `<cli> run --format json …` once against `fake_provider` and parses its output.
- `loop`: runs the loop itself (`python -m kilo_loop …`) with KILO_BIN pointing at a real CLI that
  talks to `fake_provider`, and reads back the files the run wrote (`LoopRun`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.support.git import git
from tests.support.processes import run_in_group

from .fake_provider import Calls, FakeProvider, RecordedRequest, Runtime, call, provider_env

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_BIN = REPO_ROOT / ".tools" / "node_modules" / ".bin"
# Where `TOOLS_DIR=.tools-extra scripts/install-agent-clis.sh` puts CLIs next to a shared .tools.
EXTRA_TOOLS_BIN = REPO_ROOT / ".tools-extra" / "node_modules" / ".bin"
INSTALL_HINT = "run scripts/install-agent-clis.sh"
AUTO_FLAGS: dict[Runtime, str] = {"kilo": "--auto", "opencode": "--auto"}
RUN_TIMEOUT_S = 180.0


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


def find_cli(name: str) -> Path:
    """A pinned CLI from .tools (or .tools-extra); fails, never skips, when it is missing."""
    for bin_dir in (TOOLS_BIN, EXTRA_TOOLS_BIN):
        if os.access(bin_dir / name, os.X_OK):
            return bin_dir / name
    pytest.fail(f"{name} not found in {TOOLS_BIN} or {EXTRA_TOOLS_BIN}: {INSTALL_HINT}", pytrace=False)


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


def commit_count(project: Path) -> int:
    out = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=project, check=True,
                         capture_output=True, text=True)
    return int(out.stdout)


@pytest.fixture
def git_project(tmp_path: Path) -> Path:
    """A git repository (branch main) with user.name/email set locally and one commit."""
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.name", "E2E Tester")
    git(project, "config", "user.email", "e2e@example.invalid")
    git(project, "config", "commit.gpgsign", "false")
    (project / "README.md").write_text("# e2e project\n", encoding="utf-8")
    git(project, "add", "README.md")
    git(project, "commit", "-q", "-m", "initial commit")
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
        done = run_in_group(command, cwd=cwd or project, env=agent_environment(overrides, project),
                            stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S)
        events, other = parse_ndjson(done.stdout)
        return AgentRun(command, done.returncode, done.stdout, done.stderr,
                        time.monotonic() - started, events, other)

    return run


# --------------------------------------------------------------------------- running the loop

LOOP_TIMEOUT_S = 420.0
LOOP_DIR = ".kilocode-loop"


@dataclass
class LoopRun:
    """One finished `python -m kilo_loop …` process and the run files it left in the project."""

    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    project: Path

    @property
    def loop_dir(self) -> Path:
        return self.project / LOOP_DIR

    @property
    def run_dir(self) -> Path:
        """The one run directory under `.kilocode-loop/runs/` (a resumed run reuses its own)."""
        runs_root = self.loop_dir / "runs"
        runs = sorted(runs_root.iterdir()) if runs_root.is_dir() else []
        if len(runs) != 1:
            raise AssertionError(f"expected one run directory, found {[r.name for r in runs]}\n{self.describe()}")
        return runs[0]

    def state(self) -> dict[str, Any]:
        loaded = json.loads((self.run_dir / "state.json").read_text(encoding="utf-8"))
        assert isinstance(loaded, dict)
        return loaded

    def events(self, event_type: str | None = None) -> list[dict[str, Any]]:
        lines = (self.run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
        events = [json.loads(line) for line in lines if line.strip()]
        return [e for e in events if event_type is None or e.get("type") == event_type]

    def prompt(self, iteration: int) -> str:
        return (self.run_dir / "iterations" / f"{iteration:02d}-prompt.md").read_text(encoding="utf-8")

    def report(self, iteration: int) -> dict[str, Any]:
        path = self.run_dir / "iterations" / f"{iteration:02d}-report.json"
        loaded = json.loads(path.read_text(encoding="utf-8"))
        assert isinstance(loaded, dict)
        return loaded

    def describe(self) -> str:
        """Everything a failing assertion needs to explain itself."""
        return (
            f"$ {' '.join(self.command)}\nexit {self.returncode} after {self.seconds:.1f}s\n"
            f"--- stdout\n{self.stdout[-8000:]}\n--- stderr\n{self.stderr[-3000:]}"
        )


@dataclass
class Loop:
    """Runs the loop's real entry point against the real CLIs and the scripted provider.

    `transport` (serve / run) goes to the loop as KILO_LOOP_TRANSPORT; None keeps its default.
    """

    bins: AgentBins
    provider: FakeProvider
    home: Path
    transport: str | None = None

    def environment(
        self,
        runtime: Runtime,
        *,
        inline: bool = False,
        permission: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """A small explicit environment (no developer KILO_*/KILO_LOOP_* leaks in).

        By default the provider config is a file (`KILO_CONFIG` / `OPENCODE_CONFIG`), which
        leaves the inline config variable to the loop's guard rules; `inline=True` puts it in
        `KILO_CONFIG_CONTENT` / `OPENCODE_CONFIG_CONTENT`, as a user might. `config` adds
        top-level CLI config keys.
        """
        env = {name: os.environ[name] for name in ("PATH", "TMPDIR", "LANG") if name in os.environ}
        env.setdefault("LANG", "C.UTF-8")
        env.update(provider_env(self.provider.port, runtime, self.home, permission=permission, inline=inline,
                                extra_config=config))
        env["KILO_BIN"] = str(self.bins.for_runtime(runtime))
        env["PYTHONPATH"] = str(REPO_ROOT / "src")
        env["COLUMNS"] = "500"  # Rich wraps at 80 columns when stdout is not a terminal
        if self.transport:
            env["KILO_LOOP_TRANSPORT"] = self.transport
        env.update(extra_env or {})
        return env

    @staticmethod
    def command(project: Path, args: tuple[str, ...]) -> list[str]:
        return [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard", *args]

    def start(
        self, runtime: Runtime, project: Path, *args: str, inline: bool = False,
        permission: Mapping[str, Any] | None = None, config: Mapping[str, Any] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> subprocess.Popen[str]:
        """The loop as a running process (stdout/stderr piped), for tests that interrupt it."""
        env = self.environment(runtime, inline=inline, permission=permission, config=config, extra_env=extra_env)
        return subprocess.Popen(
            self.command(project, args), cwd=project, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    def run(
        self, runtime: Runtime, project: Path, *args: str, inline: bool = False,
        permission: Mapping[str, Any] | None = None, config: Mapping[str, Any] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> LoopRun:
        command = self.command(project, args)
        env = self.environment(runtime, inline=inline, permission=permission, config=config, extra_env=extra_env)
        started = time.monotonic()
        done = run_in_group(command, cwd=project, env=env, stdin=subprocess.DEVNULL, timeout=LOOP_TIMEOUT_S)
        return LoopRun(command, done.returncode, done.stdout, done.stderr, time.monotonic() - started, project)


TRANSPORTS = ("serve", "run")
# Runs a loop test once per transport: `@BOTH_TRANSPORTS` on a test that uses the `loop` fixture —
# only where the two transports take different paths (events from the server's stream vs the CLI's
# stdout, a session continued on the server vs `--session`, an abort through the API vs a killed
# process). What the loop decides alone (verify, stall, handoff) runs once, under `run`.
BOTH_TRANSPORTS = pytest.mark.parametrize("transport", TRANSPORTS, indirect=True)
RUN_TRANSPORT = pytest.mark.parametrize("transport", ["run"], indirect=True)


@pytest.fixture
def transport(request: pytest.FixtureRequest) -> str | None:
    """The loop's transport for this test (see BOTH_TRANSPORTS); None: the loop's default."""
    value = getattr(request, "param", None)
    return str(value) if value else None


@pytest.fixture
def loop(agent_bins: AgentBins, fake_provider: FakeProvider, agent_home: Path, transport: str | None) -> Loop:
    return Loop(agent_bins, fake_provider, agent_home, transport)


# --------------------------------------------------------------------------- scripting the loop's agent


def iteration_marker(iteration: int) -> str:
    """The line of the loop's prompt that tells iterations apart (`Iteration 2 of 3.`)."""
    return f"Iteration {iteration} of "


def iteration_requests(provider: FakeProvider, iteration: int) -> list[RecordedRequest]:
    """The model requests one iteration's session made (its prompt is the latest user message)."""
    marker = iteration_marker(iteration)
    return [r for r in provider.chat_requests if r.user_texts and marker in r.user_texts[-1]]


def bash(command: str) -> Calls:
    return call("bash", {"command": command, "description": "Scripted command"})


def write(path: Path, content: str) -> Calls:
    """A write tool call (the path absolute, so it lands in the project whatever the CLI's cwd)."""
    return call("write", {"filePath": str(path), "content": content})


def write_progress(project: Path, iteration: int, stage_id: str, status: str, **fields: Any) -> Calls:
    """The model honouring the loop's report contract: `.kilocode-loop/progress.json`."""
    report: dict[str, Any] = {
        "iteration": iteration, "topic": f"iteration {iteration}", "stageId": stage_id, "stageStatus": status,
        "summary": f"scripted iteration {iteration}", "needsInput": False, "questions": [], **fields,
    }
    return write(project / LOOP_DIR / "progress.json", json.dumps(report))


def write_handoff(project: Path, text: str) -> Calls:
    return write(project / LOOP_DIR / "handoff.md", text)
