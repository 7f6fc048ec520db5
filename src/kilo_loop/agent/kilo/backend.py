"""The kilo / opencode backend: `<cli> run --format json` per session, the guard's deny rules and
`snapshot: false` in the child's inline config, `!` warnings picked off stderr."""

from __future__ import annotations

from kilo_loop.agent.home import isolated_home_env
from kilo_loop.agent.kilo.config import child_config_env
from kilo_loop.agent.kilo.runtime import KILO, OPENCODE, Runtime, build_command, cli_warnings
from kilo_loop.agent.kilo.stream import NdjsonEventParser
from kilo_loop.agent.protocol import AgentPolicy, AgentRequest, Preparation
from kilo_loop.agent.subprocess_run import CliAgentRun, CliInvocation, child_environment


class KiloBackend:
    """An AgentBackend for a kilo-lineage CLI binary (kilo or opencode)."""

    def __init__(self, binary: str, runtime: Runtime) -> None:
        self.binary = binary
        self.runtime = runtime
        self.name = runtime.name
        self._env: dict[str, str] = {}

    def prepare(self, policy: AgentPolicy) -> Preparation:
        config = child_config_env(self.runtime.name, policy.project, policy.environ, policy.guard)
        self._env = {**isolated_home_env(policy), **config.env}
        return Preparation(dict(self._env), config.notes)

    def invocation(self, request: AgentRequest) -> CliInvocation:
        return CliInvocation(
            command=build_command(self.binary, self.runtime, request),
            env=child_environment(request, extra=self._env),
            parser=NdjsonEventParser(),
            warnings=cli_warnings,
        )

    def start(self, request: AgentRequest) -> CliAgentRun:
        return CliAgentRun(self.invocation(request), request)


# The name the loop used before the agent packages existed.
CliBackend = KiloBackend


def kilo_backend(binary: str) -> KiloBackend:
    return KiloBackend(binary, KILO)


def opencode_backend(binary: str) -> KiloBackend:
    return KiloBackend(binary, OPENCODE)
