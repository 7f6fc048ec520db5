"""Find a backend: by runtime name (binary discovery per runtime) or by `module:attr`
(a class, an instance, or a factory), so users can plug in their own.

The per-runtime facts the loop needs before a backend exists (which binary names to look
for, which environment variable points at the binary, how to install it) live here, in one
table; everything else about a CLI lives in its own package and is imported only when used.
"""

from __future__ import annotations

import importlib
import inspect
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kilo_loop.agent.protocol import AgentBackend
from kilo_loop.errors import UsageError

RUNTIME_CHOICES = ("auto", "kilo", "opencode", "claude", "codex", "cursor", "gemini")


class BackendLoadError(UsageError, ValueError):
    """KILO_LOOP_BACKEND names no usable agent backend."""


@dataclass(frozen=True)
class RuntimeSpec:
    name: str
    binaries: tuple[str, ...]  # names searched on PATH
    bin_envs: tuple[str, ...]  # environment variables naming the binary, first wins
    install: str
    backend: str  # module:attr of a `factory(binary) -> AgentBackend`


RUNTIMES: dict[str, RuntimeSpec] = {
    spec.name: spec
    for spec in (
        RuntimeSpec("kilo", ("kilo", "kilocode"), ("KILO_BIN",), "npm install -g @kilocode/cli",
                    "kilo_loop.agent.kilo.backend:kilo_backend"),
        RuntimeSpec("opencode", ("opencode",), ("OPENCODE_BIN", "KILO_BIN"), "npm install -g opencode-ai",
                    "kilo_loop.agent.kilo.backend:opencode_backend"),
        RuntimeSpec("claude", ("claude",), ("CLAUDE_BIN",), "npm install -g @anthropic-ai/claude-code",
                    "kilo_loop.agent.claude.backend:ClaudeBackend"),
        RuntimeSpec("codex", ("codex",), ("CODEX_BIN",), "npm install -g @openai/codex",
                    "kilo_loop.agent.codex.backend:CodexBackend"),
        RuntimeSpec("gemini", ("gemini",), ("GEMINI_BIN",), "npm install -g @google/gemini-cli",
                    "kilo_loop.agent.gemini.backend:GeminiBackend"),
        RuntimeSpec("cursor", ("cursor-agent",), ("CURSOR_BIN",),
                    "Cursor's installer (https://cursor.com/cli); it is not on a package registry",
                    "kilo_loop.agent.cursor.backend:CursorBackend"),
    )
}
# Binary-name fragments that tell the runtime apart, most specific first; anything else is kilo.
_NAME_HINTS = (("opencode", "opencode"), ("claude", "claude"), ("codex", "codex"), ("gemini", "gemini"),
               ("cursor", "cursor"))


def runtime_from_binary(binary: str) -> str:
    """`auto`: the runtime a binary's file name says (kilo when it says none)."""
    name = Path(binary).name.lower()
    return next((runtime for hint, runtime in _NAME_HINTS if hint in name), "kilo")


def _which(candidate: str) -> str | None:
    return shutil.which(candidate)


def requested_binary(runtime: str, explicit: str | None, environ: Mapping[str, str]) -> str | None:
    if explicit:
        return explicit
    return next((environ[name] for name in RUNTIMES[runtime].bin_envs if environ.get(name)), None)


def auto_runtime(explicit: str | None, environ: Mapping[str, str]) -> str:
    """KILO_BIN / --kilo-bin name the binary (its name says the runtime); else the first per-runtime
    `*_BIN` that is set; else kilo."""
    binary = explicit or environ.get("KILO_BIN")
    if binary:
        return runtime_from_binary(binary)
    for spec in RUNTIMES.values():
        if spec.name not in ("kilo", "opencode") and any(environ.get(name) for name in spec.bin_envs):
            return spec.name
    return "kilo"


def find_binary(runtime: str, explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The runtime's CLI on disk; a clear error (naming the install and the variable) when missing."""
    environ = os.environ if environ is None else environ
    spec = RUNTIMES[runtime]
    requested = requested_binary(runtime, explicit, environ)
    for candidate in [requested] if requested else list(spec.binaries):
        found = _which(candidate) if candidate else None
        if found:
            return found
    names = requested or " or ".join(spec.binaries)
    raise BackendLoadError(
        f"agent CLI not found: {names} (runtime {runtime}). Install it ({spec.install}) or point "
        f"{spec.bin_envs[0]} at the binary; --dry-run needs no CLI"
    )


def create_backend(runtime: str, binary: str) -> AgentBackend:
    """The named runtime's backend for `binary` (its package is imported only now)."""
    if runtime not in RUNTIMES:
        raise BackendLoadError(f"unknown runtime {runtime!r}; choose one of {', '.join(RUNTIME_CHOICES)}")
    factory = _import(RUNTIMES[runtime].backend)
    backend: AgentBackend = factory(binary)
    return backend


def _import(reference: str) -> Any:
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise BackendLoadError(f"backend reference {reference!r} must look like 'package.module:attribute'")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise BackendLoadError(f"cannot load backend {reference!r}: {exc}") from exc


def _accepts_settings(factory: Callable[..., Any]) -> bool:
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.name == "settings" for p in parameters):
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(p.kind in positional or p.kind == inspect.Parameter.VAR_POSITIONAL for p in parameters)


def load_backend(reference: str, settings: object | None = None) -> AgentBackend:
    """`module:attr` naming a backend instance, a class or a factory; a class or factory that takes
    an argument (or one named `settings`) is given the run's settings."""
    target = _import(reference)
    is_factory = inspect.isclass(target) or (callable(target) and not hasattr(target, "start"))
    if is_factory:
        try:
            backend = target(settings) if settings is not None and _accepts_settings(target) else target()
        except Exception as exc:  # a third-party constructor failing is a setup error, not a crash
            raise BackendLoadError(f"cannot create backend {reference!r}: {exc}") from exc
    else:
        backend = target
    if not isinstance(backend, AgentBackend):
        raise BackendLoadError(f"{reference!r} is not an agent backend (it needs .name and .start(request))")
    return backend
