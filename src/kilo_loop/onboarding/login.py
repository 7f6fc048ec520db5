"""Is an agent CLI ready to answer: logged in, or given an API key or a provider endpoint?

Each CLI says it its own way (`kilo auth list`, `claude auth status`, `codex login status`, a key in
the environment, a credentials file). `login_state` asks the cheapest source first; the parsing is
pure so tests feed it the CLIs' real output.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

LoginStatus = Literal["ok", "missing", "unknown"]
_TIMEOUT_S = 60.0

# Per runtime: environment variables any one of which is enough, and the command that logs in.
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "kilo": ("KILO_LOOP_OPENAI_BASE_URL", "OPENAI_BASE_URL", "KILO_CONFIG", "KILO_CONFIG_CONTENT"),
    "opencode": ("KILO_LOOP_OPENAI_BASE_URL", "OPENAI_BASE_URL", "OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT"),
    "claude": ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"),
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"),
    "cursor": ("CURSOR_API_KEY",),
}
LOGIN_COMMANDS: dict[str, str] = {
    "kilo": "kilo auth login",
    "opencode": "opencode auth login",
    "claude": "claude auth login",
    "codex": "codex login",
    "gemini": "gemini (sign in once, interactively)",
    "cursor": "cursor-agent login",
}


@dataclass(frozen=True)
class LoginState:
    status: LoginStatus
    detail: str  # how we know, or what is missing

    def fix(self, runtime: str) -> str:
        keys = " or ".join(KEY_VARIABLES[runtime][:2])
        return f"log in with `{LOGIN_COMMANDS[runtime]}`, or set {keys}"


def credentials_listed(output: str) -> int | None:
    """kilo / opencode `auth list`: the number in its last "N credentials" line (None: not found)."""
    found = re.findall(r"(\d+)\s+credentials?\b", re.sub(r"\x1b\[[0-9;]*m", "", output))
    return int(found[-1]) if found else None


def from_environment(runtime: str, environ: Mapping[str, str]) -> LoginState | None:
    named = next((name for name in KEY_VARIABLES[runtime] if environ.get(name)), None)
    return LoginState("ok", f"{named} is set") if named else None


def from_auth_list(output: str | None) -> LoginState:
    count = credentials_listed(output or "")
    if count is None:
        return LoginState("unknown", "`auth list` gave no answer")
    if count == 0:
        return LoginState("missing", "no credentials stored")
    return LoginState("ok", f"{count} credential{'s' if count > 1 else ''} stored")


def from_exit_status(succeeded: bool | None, what: str) -> LoginState:
    if succeeded is None:
        return LoginState("unknown", f"`{what}` could not be run")
    return LoginState("ok", "logged in") if succeeded else LoginState("missing", "not logged in")


def _run(command: list[str], environ: Mapping[str, str]) -> tuple[bool, str] | None:
    try:
        done = subprocess.run(command, env=dict(environ), capture_output=True, text=True, timeout=_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.returncode == 0, done.stdout + done.stderr


def login_state(runtime: str, binary: str, environ: Mapping[str, str]) -> LoginState:
    """What the runtime's CLI would answer with: a key or endpoint in `environ`, else its own login."""
    known = from_environment(runtime, environ)
    if known:
        return known
    if runtime in ("kilo", "opencode"):
        ran = _run([binary, "auth", "list"], environ)
        return from_auth_list(ran[1] if ran else None)
    if runtime == "gemini":
        home = Path(environ.get("HOME", str(Path.home())))
        stored = home / ".gemini" / "oauth_creds.json"
        return LoginState("ok", f"{stored} exists") if stored.is_file() else LoginState("missing", "not signed in")
    command = {"claude": [binary, "auth", "status"], "codex": [binary, "login", "status"],
               "cursor": [binary, "status"]}[runtime]
    ran = _run(command, environ)
    return from_exit_status(ran[0] if ran else None, " ".join(command[1:]))
