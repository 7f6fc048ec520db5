"""The run's agent backend: the runtime, its CLI (or a plugged-in backend), the warm server, a router
for stages that name another runtime, the pre-flight of each CLI's flags, and the policy it is given."""

from __future__ import annotations

import os
from pathlib import Path

from kilo_loop.agent.protocol import AgentBackend, AgentPolicy
from kilo_loop.agent.registry import BackendLoadError, auto_runtime, create_backend, find_binary, load_backend
from kilo_loop.agent.router import RuntimeRouter
from kilo_loop.agent.serve import ServeBackend
from kilo_loop.agent.simulator import DryRunBackend
from kilo_loop.goal.model import Goal
from kilo_loop.review.options import review_runtimes
from kilo_loop.runner.errors import SetupError
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.setup import jail_expected
from kilo_loop.settings import Settings


def run_runtime(settings: Settings) -> str:
    """The run's runtime: --runtime, or (auto) the one the binary's name or a *_BIN variable says."""
    if settings.runtime != "auto":
        return settings.runtime
    return auto_runtime(settings.kilo_bin, os.environ)


def _cli_backend(runtime: str, settings: Settings, explicit: bool) -> AgentBackend:
    try:
        binary = find_binary(runtime, settings.kilo_bin if explicit else None, os.environ)
        return create_backend(runtime, binary)
    except BackendLoadError as exc:
        raise SetupError(str(exc)) from exc


def make_backend(settings: Settings, goal: Goal | None = None) -> tuple[AgentBackend, str]:
    """The run's backend and runtime name; stages naming another runtime get theirs through a router."""
    if settings.dry_run:
        return DryRunBackend(ask_questions=settings.hitl != "off", review=settings.dry_run_review), "dry-run"
    if settings.backend:
        try:
            custom = load_backend(settings.backend, settings)
        except BackendLoadError as exc:
            raise SetupError(str(exc)) from exc
        return custom, custom.name
    runtime = run_runtime(settings)
    backend = _with_transport(_cli_backend(runtime, settings, explicit=True), runtime, settings)
    wanted = [*(s.runtime for s in (goal.stages if goal else [])), *review_runtimes(settings)]
    stage_runtimes = sorted({name for name in wanted if name and name != runtime})
    if not stage_runtimes:
        return backend, runtime
    others = {name: _with_transport(_cli_backend(name, settings, explicit=False), name, settings)
              for name in stage_runtimes}
    return RuntimeRouter(backend, others), runtime


def serve_backend_of(backend: AgentBackend) -> ServeBackend | None:
    """The run's warm server: the backend itself, or a router's own runtime (other runtimes use `run`)."""
    if isinstance(backend, RuntimeRouter):
        backend = backend.by_runtime[backend.name]
    return backend if isinstance(backend, ServeBackend) else None


def _with_transport(backend: AgentBackend, runtime: str, settings: Settings) -> AgentBackend:
    """kilo/opencode under `--transport serve` (the default): one warm server, `run` as its fallback."""
    binary = getattr(backend, "binary", None)
    if settings.transport == "serve" and runtime in ("kilo", "opencode") and isinstance(binary, str):
        return ServeBackend(binary, runtime, backend)
    return backend


def default_agent(settings: Settings, runtime: str) -> str | None:
    # The original tool defaulted to a `code-design` agent; kilo 7.7.7 has none (it warns and falls
    # back to `code`), so without --agent the CLI picks its own default, as opencode does.
    return settings.agent


def cli_targets(backend: AgentBackend, runtime: str) -> list[tuple[str, str]]:
    """(runtime, binary) of every agent CLI the backend drives (a router's stages' too)."""
    members = backend.by_runtime if isinstance(backend, RuntimeRouter) else {runtime: backend}
    return [(name, binary) for name, member in members.items()
            if isinstance(binary := getattr(member, "binary", None), str)]


def preflight(settings: Settings, backend: AgentBackend, runtime: str) -> None:
    """Before a real run: each CLI must accept the flags the loop passes (a clear SetupError, exit 2)."""
    if settings.dry_run or settings.backend or not settings.preflight:
        return
    from kilo_loop.doctor.preflight import cli_sandbox_failures, failure_message
    from kilo_loop.doctor.probe import preflight as probe_preflight

    failed = probe_preflight(cli_targets(backend, runtime))
    failed += cli_sandbox_failures(cli_targets(backend, runtime), os.environ, jail_expected(settings.sandbox))
    if failed:
        raise SetupError(failure_message(failed))


def agent_policy(settings: Settings, project: Path, run_dir: Path, models: tuple[str, ...] = (),
                 protect: tuple[str, ...] = (), jail: Jail | None = None) -> AgentPolicy:
    """What the loop decided, for the backend to turn into its CLI's flags, env and config."""
    return AgentPolicy(project=project, guard=settings.guard, guard_deny=tuple(settings.guard_deny),
                       guard_allow=tuple(settings.guard_allow), guard_packs=dict(settings.guard_packs),
                       run_dir=run_dir,
                       isolate_home=settings.isolate_home, environ=dict(os.environ),
                       provider_config_mode=settings.provider_config_mode,
                       models=tuple(m for m in (settings.model, *models) if m), protect=protect, jail=jail)


def all_protect_globs(goal: Goal) -> tuple[str, ...]:
    return tuple(dict.fromkeys(g for stage in goal.stages for g in goal.protected_for(stage)))
