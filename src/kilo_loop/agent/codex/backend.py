"""Codex: `codex exec --json` per session, `codex exec resume <id>` for shared context, and the
loop's guard as a PreToolUse hook on every shell command.

Sandbox and approvals: `sandbox_mode = "workspace-write"` (commands may write only in the
project and temp directories; no network) and `approval_policy = "never"` (exec cannot ask);
inside the loop's jail `sandbox_mode = "danger-full-access"`, the jail being the sandbox.
The guard still sees every command: the PreToolUse hook (`-c hooks.PreToolUse=…`, run with
`--dangerously-bypass-hook-trust` because it is the loop's own) refuses destructive ones before
they run, and each executed command comes back in the stream for the loop's own guard.
Nothing is written into the user's CODEX_HOME.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from kilo_loop.agent.codex.stream import CodexStreamParser
from kilo_loop.agent.home import isolated_home_env
from kilo_loop.agent.hook import install_hook
from kilo_loop.agent.protocol import AgentPolicy, AgentRequest, AgentResult, Preparation
from kilo_loop.agent.subprocess_run import CliAgentRun, CliInvocation, child_environment
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.policy import JailPaths

SANDBOX = ("-c", 'sandbox_mode="workspace-write"', "-c", 'approval_policy="never"')
# Inside the loop's jail Codex's own bubblewrap sandbox is switched off in favour of the jail (nested, it
# cannot find its helper: openai/codex #24341); never outside the jail.
JAILED = ("-c", 'sandbox_mode="danger-full-access"', "-c", 'approval_policy="never"')
_HOOK_BLOCK = re.compile(r"blocked by PreToolUse hook: (?P<reason>.+)")


def toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


def hook_override(command: str) -> str:
    """`-c` value installing the guard hook on Codex's shell tool (named "Bash" for hooks)."""
    return f'hooks.PreToolUse=[{{matcher="Bash",hooks=[{{type="command",command={toml_string(command)}}}]}}]'


def build_command(binary: str, request: AgentRequest, hook: str | None, jailed: bool = False) -> list[str]:
    command = [binary, "exec"]
    if request.session_id:
        command.append("resume")
    command.append("--json")
    if hook is not None:
        command += ["-c", hook_override(hook), "--dangerously-bypass-hook-trust"]
    if request.auto_approve:
        command += list(JAILED if jailed else SANDBOX)
    if request.model:
        command += ["-m", request.model]
    if request.variant:
        command += ["-c", f"model_reasoning_effort={toml_string(request.variant)}"]
    command.append("--")
    if request.session_id:
        command.append(request.session_id)
    return [*command, request.prompt]


def stderr_warnings(stderr: str) -> list[str]:
    """Calls the hook refused never reach the JSON stream; Codex logs them on stderr."""
    return [f"guard hook refused before execution: {m['reason'].strip()}"
            for m in (_HOOK_BLOCK.search(line) for line in stderr.splitlines()) if m]


def _finisher(parser: CodexStreamParser, agent: str | None) -> Callable[[AgentResult], None]:
    def finish(result: AgentResult) -> None:
        result.warnings += parser.codex.warnings
        if agent:
            result.warnings.append(f"codex has no agents: --agent {agent} was not passed on")

    return finish


JAIL_PATHS = JailPaths(
    home_rw=("$CODEX_HOME|~/.codex",),
    project_config=(".codex",),
    env_prefixes=("OPENAI_", "CODEX_", "AZURE_"),
    model_hosts=("api.openai.com", "chatgpt.com", "auth.openai.com"),
)


class CodexBackend:
    jail_paths = JAIL_PATHS
    name = "codex"
    reports_cost = False  # its stream carries tokens only: --max-cost cannot stop it

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self._hook: str | None = None
        self._env: dict[str, str] = {}
        self._jail: Jail | None = None

    def prepare(self, policy: AgentPolicy) -> Preparation:
        self._jail = policy.jail
        self._env = isolated_home_env(policy)
        self._hook = None
        if policy.guard and policy.run_dir is not None:
            self._hook = install_hook(policy.run_dir, policy.guard_deny, policy.guard_allow, policy.guard_packs)
        return Preparation(dict(self._env))

    def invocation(self, request: AgentRequest) -> CliInvocation:
        parser = CodexStreamParser()
        return CliInvocation(
            jail=self._jail,
            command=build_command(self.binary, request, self._hook, jailed=self._jail is not None),
            env=child_environment(request, extra=self._env),
            parser=parser,
            warnings=stderr_warnings,
            on_finish=_finisher(parser, request.agent),
        )

    def start(self, request: AgentRequest) -> CliAgentRun:
        return CliAgentRun(self.invocation(request), request)

