"""Find a backend by `module:attr` (a class, an instance, or a factory), so users can plug in their own."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from kilo_loop.agent.protocol import AgentBackend
from kilo_loop.errors import UsageError


class BackendLoadError(UsageError, ValueError):
    """KILO_LOOP_BACKEND names no usable agent backend."""


def load_backend(reference: str) -> AgentBackend:
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise BackendLoadError(f"backend reference {reference!r} must look like 'package.module:attribute'")
    try:
        target: Any = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise BackendLoadError(f"cannot load backend {reference!r}: {exc}") from exc
    backend = target() if inspect.isclass(target) or (callable(target) and not hasattr(target, "start")) else target
    if not isinstance(backend, AgentBackend):
        raise BackendLoadError(f"{reference!r} is not an agent backend (it needs .name and .start(request))")
    return backend
