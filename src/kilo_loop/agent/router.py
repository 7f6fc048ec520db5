"""One run, several runtimes: a goal stage may name its own `runtime`; each request goes to
the backend it names, the run's default backend otherwise.

A session id belongs to the CLI that made it: when the runtime changes between two
iterations of a shared-context run, the new runtime starts a fresh session.
"""

from __future__ import annotations

from dataclasses import replace

from kilo_loop.agent.protocol import (
    AgentBackend,
    AgentPolicy,
    AgentRequest,
    AgentRun,
    Preparation,
    prepare_backend,
)


class RuntimeRouter:
    def __init__(self, default: AgentBackend, by_runtime: dict[str, AgentBackend]) -> None:
        self.name = default.name
        self._default = default
        self._backends = {default.name: default, **by_runtime}
        self._last: tuple[str, AgentRun] | None = None

    @property
    def runtimes(self) -> list[str]:
        return list(self._backends)

    @property
    def members(self) -> list[AgentBackend]:
        return list(self._backends.values())

    @property
    def by_runtime(self) -> dict[str, AgentBackend]:
        """Each runtime's backend, the run's own first."""
        return dict(self._backends)

    def prepare(self, policy: AgentPolicy) -> Preparation:
        env: dict[str, str] = {}
        notes: list[str] = []
        for name, backend in self._backends.items():
            prepared = prepare_backend(backend, policy)
            if backend is self._default:
                env = prepared.env
            notes += [note if name == self.name else f"{name}: {note}" for note in prepared.notes]
        return Preparation(env, tuple(notes))

    def backend_for(self, request: AgentRequest) -> AgentBackend:
        return self._backends.get(request.runtime or self.name, self._default)

    def start(self, request: AgentRequest) -> AgentRun:
        backend = self.backend_for(request)
        if request.session_id and self._last is not None:
            owner, run = self._last
            if owner != backend.name and run.result.session_id == request.session_id:
                request = replace(request, session_id=None)
        run = backend.start(request)
        self._last = (backend.name, run)
        return run


def runtimes_without_cost(backend: AgentBackend) -> list[str]:
    """The runtimes of a run whose CLI reports no cost, so that a cost budget cannot stop them
    (a backend says so with `reports_cost = False`; one that does not say is taken to report it)."""
    members = backend.members if isinstance(backend, RuntimeRouter) else [backend]
    return [member.name for member in members if not getattr(member, "reports_cost", True)]
