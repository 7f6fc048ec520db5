"""Claude Code: `claude -p --output-format stream-json --verbose` per session, `--resume <id>` for
shared context, and the loop's guard as a PreToolUse hook before every Bash (and file-writing)
call, installed per run through a generated settings file passed with `--settings` — the
user's own settings are never edited."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kilo_loop.agent.claude.stream import ClaudeStreamParser
from kilo_loop.agent.home import isolated_home_env
from kilo_loop.agent.hook import install_hook
from kilo_loop.agent.protocol import AgentPolicy, AgentRequest, AgentResult, Preparation
from kilo_loop.agent.subprocess_run import CliAgentRun, CliInvocation, child_environment
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.policy import JailPaths

HOOK_MATCHER = "Bash|Write|Edit|MultiEdit|NotebookEdit"
HOOK_TIMEOUT_S = 30
SETTINGS_FILE = "claude-settings.json"
ROOT_HINT = ("Claude Code refuses --dangerously-skip-permissions when run as root unless IS_SANDBOX=1 is set: "
             "run the loop as an ordinary user, or set IS_SANDBOX=1 if this machine is a sandbox")


def hook_settings(command: str, matcher: str = HOOK_MATCHER, event: str = "PreToolUse") -> dict[str, object]:
    return {"hooks": {event: [{"matcher": matcher, "hooks": [
        {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]}]}}


def build_command(binary: str, request: AgentRequest, settings_file: Path | None) -> list[str]:
    command = [binary, "-p", "--output-format", "stream-json", "--verbose"]
    if settings_file is not None:
        command += ["--settings", str(settings_file)]
    if request.auto_approve:
        command.append("--dangerously-skip-permissions")
    for flag, value in (("--agent", request.agent), ("--model", request.model), ("--effort", request.variant)):
        if value:
            command += [flag, value]
    if request.session_id:
        command += ["--resume", request.session_id]
    return [*command, "--", request.prompt]


def explain(result: AgentResult) -> None:
    """Say why Claude Code refused to start as root (its own message names only the flag)."""
    text = f"{result.error or ''}\n{result.stderr_tail}"
    if "dangerously-skip-permissions" in text and "root" in text and ROOT_HINT not in (result.error or ""):
        result.error = f"{result.error or 'Claude Code did not start'}: {ROOT_HINT}"


JAIL_PATHS = JailPaths(
    home_rw=("~/.claude", "$XDG_CONFIG_HOME/claude"),
    project_config=(".claude", ".mcp.json"),
    env_prefixes=("ANTHROPIC_", "CLAUDE_", "AWS_", "GOOGLE_", "VERTEX_", "DISABLE_", "MCP_"),
    model_hosts=("api.anthropic.com", "console.anthropic.com"),
)


class ClaudeBackend:
    jail_paths = JAIL_PATHS
    name = "claude"

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self._settings_file: Path | None = None
        self._env: dict[str, str] = {}
        self._jail: Jail | None = None

    def prepare(self, policy: AgentPolicy) -> Preparation:
        self._jail = policy.jail
        self._env = isolated_home_env(policy)
        self._settings_file = None
        if policy.guard and policy.run_dir is not None:
            hook = install_hook(policy.run_dir, policy.guard_deny, policy.guard_allow, policy.guard_packs)
            self._settings_file = policy.run_dir / SETTINGS_FILE
            self._settings_file.write_text(json.dumps(hook_settings(hook), indent=2), encoding="utf-8")
        notes: tuple[str, ...] = ()
        if os.geteuid() == 0 and policy.environ.get("IS_SANDBOX") != "1":
            notes = (f"running as root: {ROOT_HINT}",)
        return Preparation(dict(self._env), notes)

    def invocation(self, request: AgentRequest) -> CliInvocation:
        return CliInvocation(
            jail=self._jail,
            command=build_command(self.binary, request, self._settings_file),
            env=child_environment(request, extra=self._env),
            parser=ClaudeStreamParser(),
            on_finish=explain,
        )

    def start(self, request: AgentRequest) -> CliAgentRun:
        return CliAgentRun(self.invocation(request), request)
