"""Third-party style backends for KILO_LOOP_BACKEND=module:attr tests (a class, an instance, factories)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from kilo_loop.agent.protocol import AgentEvent, AgentRequest, AgentResult, Text


class EchoRun:
    def __init__(self, request: AgentRequest, label: str) -> None:
        self._request, self._label = request, label
        self._result = AgentResult(exit_code=None)

    @property
    def result(self) -> AgentResult:
        return self._result

    async def kill(self, reason: str) -> None:
        self._result.mark_killed(reason)

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        yield Text(f"{self._label}: {self._request.prompt[:20]}")
        self._result.exit_code = 0


class EchoBackend:
    name = "echo"

    def __init__(self) -> None:
        self.label = "class"

    def start(self, request: AgentRequest) -> EchoRun:
        return EchoRun(request, self.label)


class SettingsBackend(EchoBackend):
    """A class whose constructor takes the run's settings."""

    def __init__(self, settings: Any) -> None:
        super().__init__()
        self.settings = settings
        self.label = f"model={getattr(settings, 'model', None)}"


INSTANCE = EchoBackend()


def factory() -> EchoBackend:
    backend = EchoBackend()
    backend.label = "factory"
    return backend


def factory_with_settings(settings: Any) -> EchoBackend:
    backend = EchoBackend()
    backend.label = f"agent={getattr(settings, 'agent', None)}"
    return backend


def broken_factory() -> EchoBackend:
    raise RuntimeError("no licence key")


NOT_A_BACKEND = object()
