"""Gemini CLI: `gemini --output-format stream-json -p <prompt>` per session, `--resume <id>` for
shared context, and the loop's guard as a BeforeTool hook on every shell command.

The hook travels in a settings file named by GEMINI_CLI_SYSTEM_SETTINGS_PATH (system settings win
over the user's, so a user setting cannot switch the loop's hook off); the user's own settings
files are not touched. The Gemini CLI ignores a system settings file when any directory above it
is writable by group or others (e.g. a project under /tmp), so the file goes in the run
directory when that is safe, else in a private directory under ~/.cache/kilo-loop, else the
operator is told that only the loop's own guard watches the stream. `--yolo` approves
tool calls (the guard still refuses destructive ones before they run) and `--skip-trust`
trusts the project for the session.
"""

from __future__ import annotations

import json
import stat
from dataclasses import replace
from pathlib import Path

from kilo_loop.agent.gemini.stream import GeminiStreamParser
from kilo_loop.agent.home import isolated_home_env
from kilo_loop.agent.hook import install_hook
from kilo_loop.agent.protocol import AgentPolicy, AgentRequest, AgentResult, Preparation
from kilo_loop.agent.subprocess_run import CliAgentRun, CliInvocation, child_environment
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.policy import JailPaths

SETTINGS_FILE = "gemini-system-settings.json"
SETTINGS_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
HOOK_MATCHER = "run_shell_command|write_file|replace"


def hook_settings(command: str) -> dict[str, object]:
    return {"hooksConfig": {"enabled": True}, "hooks": {"BeforeTool": [
        {"matcher": HOOK_MATCHER, "hooks": [{"type": "command", "command": command, "name": "kilo-loop guard"}]}]}}


def insecure_parent(path: Path) -> Path | None:
    """The first directory at or above `path` that group or others may write (Gemini's own check)."""
    for directory in (path, *path.parents):
        try:
            mode = directory.stat().st_mode
        except OSError:
            continue
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            return directory
    return None


def settings_dir(run_dir: Path, environ: dict[str, str]) -> Path | None:
    """Where Gemini will accept the system settings file, or None when nowhere safe is found."""
    if insecure_parent(run_dir) is None:
        return run_dir
    home = environ.get("HOME")
    if home:
        private = Path(home) / ".cache" / "kilo-loop" / "gemini" / run_dir.name
        if insecure_parent(Path(home)) is None:
            private.mkdir(parents=True, exist_ok=True)
            private.chmod(0o700)
            return private
    return None


def build_command(binary: str, request: AgentRequest) -> list[str]:
    command = [binary, "--output-format", "stream-json", "--skip-trust"]
    if request.auto_approve:
        command.append("--yolo")
    if request.model:
        command += ["--model", request.model]
    if request.session_id:
        command += ["--resume", request.session_id]
    return [*command, "--prompt", request.prompt]




JAIL_PATHS = JailPaths(
    home_rw=("~/.gemini",),
    project_config=(".gemini",),
    env_prefixes=("GEMINI_", "GOOGLE_", "CLOUDSDK_"),
    model_hosts=("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com"),
)


class GeminiBackend:
    jail_paths = JAIL_PATHS
    name = "gemini"
    reports_cost = False  # its stream carries tokens only: --max-cost cannot stop it

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self._env: dict[str, str] = {}
        self._jail: Jail | None = None
        # Sessions that failed before the model ever answered: Gemini saved nothing to resume.
        self._unsaved: set[str] = set()

    def prepare(self, policy: AgentPolicy) -> Preparation:
        self._jail = policy.jail
        self._env = isolated_home_env(policy)
        if not policy.guard or policy.run_dir is None:
            return Preparation(dict(self._env))
        where = settings_dir(policy.run_dir, dict(policy.environ))
        if where is None:
            note = (f"the Gemini CLI ignores settings files below a directory others can write "
                    f"({insecure_parent(policy.run_dir)}): the guard hook is not installed; the loop's own guard "
                    "still ends a session that runs a destructive command")
            return Preparation(dict(self._env), (note,))
        hook = install_hook(where, policy.guard_deny, policy.guard_allow, policy.guard_packs)
        settings = where / SETTINGS_FILE
        settings.write_text(json.dumps(hook_settings(hook), indent=2), encoding="utf-8")
        settings.chmod(0o600)
        self._env[SETTINGS_ENV] = str(settings)
        notes: tuple[str, ...] = ()
        if policy.environ.get(SETTINGS_ENV):
            notes = (f"{SETTINGS_ENV} is set; the run uses its own system settings (the guard hook) instead",)
        return Preparation(dict(self._env), notes)

    def invocation(self, request: AgentRequest) -> CliInvocation:
        if request.session_id in self._unsaved:
            request = replace(request, session_id=None)
        return CliInvocation(
            jail=self._jail,
            command=build_command(self.binary, request),
            env=child_environment(request, extra=self._env),
            parser=GeminiStreamParser(),
            on_finish=lambda result: self._finished(result, request.agent),
        )

    def _finished(self, result: AgentResult, agent: str | None) -> None:
        if result.session_id and result.failed and result.tokens.total == 0:
            self._unsaved.add(result.session_id)
        if agent:
            result.warnings.append(f"gemini has no agents: --agent {agent} was not passed on")

    def start(self, request: AgentRequest) -> CliAgentRun:
        return CliAgentRun(self.invocation(request), request)
