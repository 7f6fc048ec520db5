"""Pre-flight before a real run: every agent CLI the run will drive must accept the loop's flags.

The doctor's flags check (`<cli> run --help` or its equivalent) costs a second or two of a node
start-up, so its answer is cached per binary — its real path, size and modification time — in
`$XDG_CACHE_HOME/kilo-loop/preflight.json`: a CLI is checked once per install or upgrade, not
once per run. Only answers from a help text that was read are cached; a help command that failed
is asked again next time. `KILO_LOOP_PREFLIGHT=0` skips it (for a scripted stand-in of a CLI that
takes every invocation as a session).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from kilo_loop.doctor import checks
from kilo_loop.doctor.checks import Check

CACHE_NAME = "preflight.json"
_CACHE_VERSION = 1
ReadHelp = Callable[[list[str]], str | None]


def cache_file(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "kilo-loop" / CACHE_NAME


def binary_key(runtime: str, binary: str) -> str | None:
    """What identifies one install of a CLI; None when the binary cannot be read."""
    try:
        real = os.path.realpath(binary)
        stat = os.stat(real)
    except OSError:
        return None
    return f"{runtime}:{real}:{stat.st_size}:{stat.st_mtime_ns}"


def _load(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _CACHE_VERSION or not isinstance(data.get("help"), dict):
        return {}
    return {str(k): str(v) for k, v in data["help"].items() if isinstance(v, str)}


def _save(path: Path, entries: Mapping[str, str]) -> None:
    """Best effort: a cache that cannot be written only costs the next run the same check."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(f".{os.getpid()}.tmp")
        temp.write_text(json.dumps({"version": _CACHE_VERSION, "help": dict(entries)}), encoding="utf-8")
        temp.replace(path)
    except OSError:
        pass


def _flags_word(runtime: str, help_text: str) -> str:
    """What the cache keeps of a help text: only the loop's flags it mentions (never the whole text)."""
    flags = (f for entry in checks.LOOP_FLAGS[runtime] for f in entry.split("|"))
    return " ".join(f for f in flags if checks.missing_flags(help_text, [f]) == [])


def flag_check(runtime: str, binary: str, environ: Mapping[str, str], read_help: ReadHelp) -> Check:
    """The doctor's flags check for one CLI, through the cache. `read_help(command)` runs a command and
    gives its output (None when it failed)."""
    key = binary_key(runtime, binary)
    path = cache_file(environ)
    cached = _load(path)
    if key is not None and key in cached:
        return checks.flags(runtime, cached[key], None)
    help_text = read_help([binary, *checks.HELP_ARGS[runtime]])
    if help_text is not None and key is not None:
        _save(path, {**cached, key: _flags_word(runtime, help_text)})
    return checks.flags(runtime, help_text, None)


def failures(targets: Iterable[tuple[str, str]], environ: Mapping[str, str], read_help: ReadHelp) -> list[Check]:
    """The failed checks among the run's CLIs (runtime, binary); warnings are for `kilo-loop doctor`."""
    found = []
    for runtime, binary in dict.fromkeys(targets):
        if runtime not in checks.LOOP_FLAGS:
            continue
        check = flag_check(runtime, binary, environ, read_help)
        if check.status == "fail":
            found.append(check)
    return found


def cli_sandbox_failures(targets: Iterable[tuple[str, str]], environ: Mapping[str, str], jailed: bool) -> list[Check]:
    """A CLI whose own sandbox cannot run a command here, when the loop's jail will not replace it
    (Codex with bubblewrap and CODEX_HOME under /tmp runs no command at all)."""
    if jailed:
        return []
    from kilo_loop.agent.codex.sandbox_probe import FIX, sandbox_complaint

    found = []
    for runtime, binary in dict.fromkeys(targets):
        if runtime == "codex":
            check = checks.codex_sandbox(sandbox_complaint(binary, environ), False, FIX)
            if check.status == "fail":
                found.append(check)
    return found


def failure_message(failed: list[Check]) -> str:
    lines = "\n".join(f"  {checks.line(check)}" for check in failed)
    return (f"pre-flight failed; nothing was started:\n{lines}\n"
            "Run `kilo-loop doctor` for the full picture (KILO_LOOP_PREFLIGHT=0 skips this check).")
