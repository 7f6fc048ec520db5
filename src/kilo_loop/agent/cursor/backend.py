"""Cursor: `cursor-agent -p --output-format stream-json --force` per session, `--resume <id>` for
shared context.

`cursor-agent` is not on a package registry, so this backend is tested on a stream written from
Cursor's documented format and with a fake `cursor-agent` replaying it. Cursor offers the loop
no pre-tool hook: the loop's own guard ends the session as soon as a destructive shell call is
announced (the stream reports it when it starts).
"""

from __future__ import annotations

from kilo_loop.agent.cursor.stream import CursorStreamParser
from kilo_loop.agent.home import isolated_home_env
from kilo_loop.agent.protocol import AgentPolicy, AgentRequest, AgentResult, Preparation
from kilo_loop.agent.subprocess_run import CliAgentRun, CliInvocation, child_environment
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.policy import JailPaths


def build_command(binary: str, request: AgentRequest) -> list[str]:
    command = [binary, "-p", "--output-format", "stream-json"]
    if request.auto_approve:
        command.append("--force")
    if request.model:
        command += ["--model", request.model]
    if request.session_id:
        command += ["--resume", request.session_id]
    return [*command, request.prompt]


def _agent_note(agent: str | None) -> list[str]:
    return [f"cursor-agent has no agents: --agent {agent} was not passed on"] if agent else []


JAIL_PATHS = JailPaths(
    home_rw=("~/.cursor", "$XDG_CONFIG_HOME/cursor", "$XDG_DATA_HOME/cursor-agent"),
    project_config=(".cursor",),
    env_prefixes=("CURSOR_",),
    model_hosts=("api2.cursor.sh", "api.cursor.com"),
)


class CursorBackend:
    jail_paths = JAIL_PATHS
    name = "cursor"
    reports_cost = False  # its stream carries tokens only: --max-cost cannot stop it

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self._env: dict[str, str] = {}
        self._jail: Jail | None = None

    def prepare(self, policy: AgentPolicy) -> Preparation:
        self._jail = policy.jail
        self._env = isolated_home_env(policy)
        note = ("cursor-agent has no pre-tool hook: the loop's guard ends a session when a destructive shell "
                "call is announced, which may be after it started")
        notes = (note,) if policy.guard else ()
        return Preparation(dict(self._env), notes)

    def invocation(self, request: AgentRequest) -> CliInvocation:
        notes = _agent_note(request.agent)

        def finish(result: AgentResult) -> None:
            result.warnings += notes

        return CliInvocation(command=build_command(self.binary, request),
                             env=child_environment(request, extra=self._env),
                             parser=CursorStreamParser(), on_finish=finish, jail=self._jail)

    def start(self, request: AgentRequest) -> CliAgentRun:
        return CliAgentRun(self.invocation(request), request)
