"""The I/O half of `kilo-loop doctor`: runs the CLIs (`--version`, `run --help`, `debug config`,
`serve --help`), opens the usage database, binds the dashboard port, and hands the facts to the
pure checks in `doctor.checks`.

Provider injection is verified with a throwaway probe value for the key, set only in the probed
CLI's environment; the CLI's `debug config` resolves `{env:}` references, so its output is parsed
and compared here and never printed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from kilo_loop.agent.codex.sandbox_probe import FIX as CODEX_SANDBOX_FIX
from kilo_loop.agent.codex.sandbox_probe import sandbox_complaint
from kilo_loop.agent.kilo.config import child_config_env
from kilo_loop.agent.kilo.provider import API_KEY_ENV, BASE_URL_ENV, PROVIDER_ID
from kilo_loop.agent.kilo.runtime import RUNTIMES as KILO_RUNTIMES
from kilo_loop.agent.kilo.runtime import RuntimeName
from kilo_loop.agent.kilo.usage import discover_db
from kilo_loop.agent.registry import RUNTIMES, requested_binary
from kilo_loop.doctor import checks
from kilo_loop.doctor.checks import Check
from kilo_loop.doctor.preflight import failures as preflight_failures
from kilo_loop.sandbox.probe import probe_bwrap
from kilo_loop.sandbox.selftest import check_proxy

BACKENDS = ("kilo", "opencode", "claude", "codex", "gemini", "cursor")
DEPENDENCIES = ("click", "rich", "pydantic", "pydantic-settings", "fastapi", "uvicorn", "json5", "tree-sitter-bash")
_TIMEOUT_S = 60.0
_PROBE_VALUE = "kilo-loop-doctor-probe"  # stands in for the key: never a real one


def _run(command: list[str], env: Mapping[str, str] | None = None, cwd: Path | None = None) -> str | None:
    """stdout + stderr of a command that exited 0, else None."""
    try:
        done = subprocess.run(command, env=None if env is None else dict(env), cwd=cwd, capture_output=True,
                              text=True, timeout=_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout + done.stderr if done.returncode == 0 else None


def find(runtime: str, environ: Mapping[str, str]) -> str | None:
    """The adapters' discovery (`*_BIN`, then the names on PATH), with PATH from `environ`."""
    spec = RUNTIMES[runtime]
    requested = requested_binary(runtime, None, environ)
    for candidate in [requested] if requested else list(spec.binaries):
        found = shutil.which(candidate, path=environ.get("PATH")) if candidate else None
        if found:
            return found
    return None


def _version(binary: str, env: Mapping[str, str]) -> str | None:
    output = _run([binary, "--version"], env)
    lines = [line.strip() for line in (output or "").splitlines() if line.strip()]
    return lines[-1] if lines else None


def provider_view(runtime: str, binary: str, env: Mapping[str, str], project: Path) -> checks.ProviderView:
    """`<cli> debug config` run with the injection the loop would make and a probe key in its env."""
    probe_env = {**env, BASE_URL_ENV: env.get(BASE_URL_ENV) or "http://127.0.0.1:9/v1", API_KEY_ENV: _PROBE_VALUE}
    rt: RuntimeName = "opencode" if runtime == "opencode" else "kilo"
    injected = child_config_env(rt, project, probe_env, guard=False, models=(f"{PROVIDER_ID}/doctor",))
    if _PROBE_VALUE in injected.env.get(KILO_RUNTIMES[rt].config_env, ""):
        return "leaked"
    output = _run([binary, "debug", "config"], {**probe_env, **injected.env}, cwd=project)
    if output is None:
        return "unavailable"
    try:
        resolved = json.loads(output[output.index("{"):output.rindex("}") + 1])
        options = resolved["provider"][PROVIDER_ID]["options"]
    except (ValueError, KeyError, TypeError):
        return "missing"
    # debug config prints the resolved values: the probe value proves {env:} was read; not echoed.
    # opencode masks it ("***"); either way a value that is no longer `{env:…}` was resolved.
    key = options.get("apiKey")
    return "ok" if isinstance(key, str) and key and not key.startswith("{env:") else "unresolved"


def _usage_check(binary: str, env: Mapping[str, str]) -> Check:
    path = discover_db(binary, env)
    if not path.is_file():
        return checks.usage_db("kilo", str(path), f"no database at {path} (kilo writes it on its first run)")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            db.close()
    except sqlite3.Error as exc:
        return checks.usage_db("kilo", str(path), f"{path} unreadable: {exc}")
    if not {"session", "message"} <= tables:
        return checks.usage_db("kilo", str(path), f"{path} has no session/message tables")
    return checks.usage_db("kilo", str(path), None)


def backend_checks(runtime: str, environ: Mapping[str, str], project: Path) -> list[Check]:
    spec = RUNTIMES[runtime]
    binary = find(runtime, environ)
    version = _version(binary, environ) if binary else None
    found = [checks.binary(runtime, binary, version, spec.install, spec.bin_envs[0],
                           requested_binary(runtime, None, environ))]
    if binary is None:
        return found
    found.append(checks.flags(runtime, _run([binary, *checks.HELP_ARGS[runtime]], environ), version))
    if runtime in ("kilo", "opencode"):
        found.append(checks.provider(runtime, provider_view(runtime, binary, environ, project)))
        found.append(checks.server(runtime, _run([binary, "serve", "--help"], environ) is not None))
    if runtime == "kilo":
        found.append(_usage_check(binary, environ))
    if runtime == "codex":
        jailed = probe_bwrap(environ).usable and environ.get("KILO_LOOP_SANDBOX", "auto") != "off"
        complaint = None if jailed else sandbox_complaint(binary, environ)
        found.append(checks.codex_sandbox(complaint, jailed, CODEX_SANDBOX_FIX))
    return found


def preflight(targets: list[tuple[str, str]], environ: Mapping[str, str] | None = None) -> list[Check]:
    """Before a run: the failed flag checks of the CLIs it drives (runtime, binary); cached per binary."""
    environ = dict(os.environ if environ is None else environ)
    return preflight_failures(targets, environ, lambda command: _run(command, environ))


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _git_version(environ: Mapping[str, str]) -> str | None:
    git = shutil.which("git", path=environ.get("PATH"))
    output = _run([git, "--version"], environ) if git else None
    return output.strip() if output else None


def _dependency_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in DEPENDENCIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def machine_checks(environ: Mapping[str, str], port: int) -> list[Check]:
    return [
        checks.git(_git_version(environ)),
        checks.port(port, port_free(port)),
        checks.python((sys.version_info.major, sys.version_info.minor, sys.version_info.micro)),
        checks.dependencies(_dependency_versions()),
        *_sandbox_checks(environ),
    ]


def _sandbox_checks(environ: Mapping[str, str]) -> list[Check]:
    mode = environ.get("KILO_LOOP_SANDBOX", "auto")
    status = probe_bwrap(environ, use_cache=False)
    found = [checks.sandbox(status.usable, status.summary, status.fix, mode)]
    if status.usable and status.binary is not None and mode != "off":
        network = environ.get("KILO_LOOP_SANDBOX_NETWORK", "full")
        found.append(checks.sandbox_network(check_proxy(status.binary), network))
    return found


def run_checks(runtimes: tuple[str, ...], port: int, project: Path,
               environ: Mapping[str, str] | None = None, picked: str | None = None) -> list[Check]:
    """`picked`: every backend is checked, not ones the user named, and a run would use `picked`: the
    CLIs that are not installed go into one summary line instead of a failure each."""
    environ = dict(os.environ if environ is None else environ)
    found: list[Check] = []
    if picked is not None:
        installed = [runtime for runtime in runtimes if find(runtime, environ)]
        missing = [runtime for runtime in runtimes if runtime not in installed]
        found.append(checks.agent_clis(installed, missing, picked, RUNTIMES[picked].install))
        picked_missing_by_path = picked in missing and requested_binary(picked, None, environ)
        runtimes = tuple(installed) + ((picked,) if picked_missing_by_path else ())
    for runtime in runtimes:
        found += backend_checks(runtime, environ, project)
    return found + machine_checks(environ, port)
