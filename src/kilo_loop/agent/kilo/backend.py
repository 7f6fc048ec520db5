"""The kilo / opencode backend: `<cli> run --format json` per session, the guard's deny rules and
`snapshot: false` in the child's inline config, `!` warnings picked off stderr."""

from __future__ import annotations

import os
from pathlib import Path

from kilo_loop.agent.home import isolated_home_env
from kilo_loop.agent.kilo.config import child_config_env
from kilo_loop.agent.kilo.config_files import Snapshot, config_files, restore, snapshot
from kilo_loop.agent.kilo.protect import with_protect
from kilo_loop.agent.kilo.provider import PROVIDER_CONFIG_MODES
from kilo_loop.agent.kilo.runtime import KILO, OPENCODE, Runtime, build_command, cli_warnings
from kilo_loop.agent.kilo.stream import NdjsonEventParser
from kilo_loop.agent.kilo.usage import discover_db, read_usage
from kilo_loop.agent.protocol import AgentPolicy, AgentRequest, GuardRejected, Preparation
from kilo_loop.agent.subprocess_run import CliAgentRun, CliInvocation, child_environment
from kilo_loop.agent.usage_db import UsageReading
from kilo_loop.run.guard_decision import GuardDecision
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.policy import JailPaths


def jail_paths_of(runtime: Runtime) -> JailPaths:
    """kilo / opencode keep their session database and config under the XDG directories."""
    name = runtime.name
    return JailPaths(
        home_rw=tuple(f"${xdg}/{name}" for xdg in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                                                  "XDG_STATE_HOME")),
        project_config=(f".{name}", f"{name}.json", f"{name}.jsonc", *runtime.project_configs),
        env_prefixes=(f"{runtime.env_prefix}_", "OPENAI_", "ANTHROPIC_", "OPENROUTER_", "AWS_", "GOOGLE_", "AZURE_"),
        model_hosts=("api.kilo.ai",) if name == "kilo" else ("opencode.ai",),
    )


class KiloBackend:
    """An AgentBackend for a kilo-lineage CLI binary (kilo or opencode)."""

    def __init__(self, binary: str, runtime: Runtime) -> None:
        self.binary = binary
        self.runtime = runtime
        self.name = runtime.name
        self._env: dict[str, str] = {}
        self._jail: Jail | None = None
        self._usage_db: Path | None = None
        self.jail_paths = jail_paths_of(runtime)
        self._config_files: Snapshot = {}
        self._project = Path(".")

    def prepare(self, policy: AgentPolicy) -> Preparation:
        self._jail = policy.jail
        mode = policy.provider_config_mode if policy.provider_config_mode in PROVIDER_CONFIG_MODES else "auto"
        config = child_config_env(self.runtime.name, policy.project, policy.environ, policy.guard,
                                  mode, policy.models)
        self._env = {**isolated_home_env(policy), **config.env}
        self._project = policy.project
        self._config_files = snapshot(config_files(policy.project, self.runtime.name)) if policy.guard else {}
        return Preparation(dict(self._env), config.notes)

    def _config_undone(self) -> tuple[GuardRejected, ...]:
        """The CLI reads the project's config at every start: one the agent changed (`{"permission":
        {"bash": "allow"}}`) is put back as it was when the run started, and counts as a guard event."""
        changed = restore(self._config_files)
        if not changed:
            return ()
        names = ", ".join(p.relative_to(self._project).as_posix() for p in changed)
        return (GuardRejected(tool="config", subject=names, decision=GuardDecision(
            "deny", "agent-config",
            f"the agent changed the CLI's own project config ({names}); the loop put it back before this session")),)

    def invocation(self, request: AgentRequest) -> CliInvocation:
        return CliInvocation(
            preface=self._config_undone(),
            jail=self._jail,
            command=build_command(self.binary, self.runtime, request),
            env=with_protect(self.runtime.name, child_environment(request, extra=self._env), request.protect),
            parser=NdjsonEventParser(),
            warnings=cli_warnings,
        )

    def start(self, request: AgentRequest) -> CliAgentRun:
        return CliAgentRun(self.invocation(request), request)

    def usage_from_db(self, session_id: str | None, title: str, since_ms: int) -> UsageReading | None:
        """The session's usage as kilo's own database has it (None: opencode, which is not covered)."""
        if self.runtime is not KILO:
            return None
        if self._usage_db is None:  # discovered once per run: `kilo db path` starts a node process
            self._usage_db = discover_db(self.binary, {**os.environ, **self._env})
        return read_usage(self._usage_db, session_id=session_id, title=title, since_ms=since_ms)


# The name the loop used before the agent packages existed.
CliBackend = KiloBackend


def kilo_backend(binary: str) -> KiloBackend:
    return KiloBackend(binary, KILO)


def opencode_backend(binary: str) -> KiloBackend:
    return KiloBackend(binary, OPENCODE)
