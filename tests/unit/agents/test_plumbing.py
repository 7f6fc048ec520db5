"""Shared agent plumbing: the isolated HOME, the per-stage runtime router, backend preparation,
the kilo backend's child environment, and the simulator's layering."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

from kilo_loop.agent.home import XDG_DIRS, isolated_home_env
from kilo_loop.agent.kilo.backend import kilo_backend, opencode_backend
from kilo_loop.agent.protocol import (
    AgentEvent,
    AgentPolicy,
    AgentRequest,
    AgentResult,
    Preparation,
    prepare_backend,
)
from kilo_loop.agent.router import RuntimeRouter


def test_isolated_home_is_private_and_under_the_run(tmp_path: Path) -> None:
    env = isolated_home_env(AgentPolicy(project=tmp_path, run_dir=tmp_path / "run", isolate_home=True))
    home = Path(env["HOME"])
    assert home.parent == tmp_path / "run" and home.stat().st_mode & 0o777 == 0o700
    for name in XDG_DIRS:
        path = Path(env[name])
        assert path.is_dir() and home in path.parents and path.stat().st_mode & 0o777 == 0o700
    assert isolated_home_env(AgentPolicy(project=tmp_path, run_dir=tmp_path / "run")) == {}
    with pytest.raises(ValueError, match="run directory"):
        isolated_home_env(AgentPolicy(project=tmp_path, isolate_home=True))


def test_kilo_backend_puts_rules_snapshots_and_home_in_the_child_env(tmp_path: Path) -> None:
    backend = kilo_backend("/bin/kilo")
    prepared = backend.prepare(AgentPolicy(project=tmp_path, run_dir=tmp_path / "run", isolate_home=True,
                                           environ={}))
    config = json.loads(prepared.env["KILO_CONFIG_CONTENT"])
    assert config["snapshot"] is False and config["permission"]["bash"]["git push*"] == "deny"
    env = backend.invocation(AgentRequest(prompt="p", cwd=tmp_path, title="t")).env
    assert env["HOME"] == str(tmp_path / "run" / "agent-home") and env["PWD"] == str(tmp_path)
    assert json.loads(env["KILO_CONFIG_CONTENT"]) == config
    opencode = opencode_backend("/bin/opencode")
    assert opencode.prepare(AgentPolicy(project=tmp_path, guard=False, environ={})).env == {}


class Recording:
    def __init__(self, name: str, session: str) -> None:
        self.name, self.session = name, session
        self.requests: list[AgentRequest] = []

    def prepare(self, policy: AgentPolicy) -> Preparation:
        return Preparation({"FROM": self.name}, (f"note from {self.name}",))

    def start(self, request: AgentRequest) -> FinishedRun:
        self.requests.append(request)
        return FinishedRun(AgentResult(exit_code=0, session_id=self.session))


class FinishedRun:
    def __init__(self, result: AgentResult) -> None:
        self._result = result

    @property
    def result(self) -> AgentResult:
        return self._result

    async def kill(self, reason: str) -> None:
        return None

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        return
        yield


def request(runtime: str | None, session: str | None = None) -> AgentRequest:
    return AgentRequest(prompt="p", cwd=Path("/p"), title="t", runtime=runtime, session_id=session)


def test_router_sends_each_stage_to_its_runtime_and_drops_a_foreign_session() -> None:
    kilo, claude = Recording("kilo", "ses_k"), Recording("claude", "uuid-c")
    router = RuntimeRouter(kilo, {"claude": claude})
    prepared = router.prepare(AgentPolicy(project=Path("/p")))
    assert prepared.env == {"FROM": "kilo"} and prepared.notes == ("note from kilo", "claude: note from claude")
    router.start(request(None))
    router.start(request("claude", session="ses_k"))  # kilo's session means nothing to Claude Code
    router.start(request("claude", session="uuid-c"))  # its own session continues
    assert [r.session_id for r in claude.requests] == [None, "uuid-c"]
    assert len(kilo.requests) == 1 and router.runtimes == ["kilo", "claude"]


def test_runtimes_without_cost_are_named_alone_or_behind_a_router() -> None:
    from kilo_loop.agent.codex.backend import CodexBackend
    from kilo_loop.agent.cursor.backend import CursorBackend
    from kilo_loop.agent.router import runtimes_without_cost

    kilo = Recording("kilo", "ses_k")
    assert runtimes_without_cost(kilo) == []  # a backend that does not say is taken to report cost
    assert runtimes_without_cost(CodexBackend("codex")) == ["codex"]
    assert runtimes_without_cost(RuntimeRouter(kilo, {"cursor": CursorBackend("cursor-agent")})) == ["cursor"]


def test_prepare_backend_tolerates_backends_without_prepare() -> None:
    class Bare:
        name = "bare"

        def start(self, request: AgentRequest) -> FinishedRun:
            return FinishedRun(AgentResult(exit_code=0))

    assert prepare_backend(Bare(), AgentPolicy(project=Path("/p"))) == Preparation()


def test_the_simulator_imports_nothing_above_agent() -> None:
    code = ("import sys, kilo_loop.agent.simulator; "
            "print(' '.join(m for m in sys.modules if m.startswith('kilo_loop.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    # run/ is the kernel below agent/: only its guard vocabulary comes along (no pydantic state)
    kernel = {"kilo_loop.run", "kilo_loop.run.guard_decision"}
    above = [m for m in out if not m.startswith(("kilo_loop.agent", "kilo_loop.guard", "kilo_loop.process_group")) and m not in kernel]
    assert above == [], above
