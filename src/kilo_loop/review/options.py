"""Who reviews: settings (`--review`, `--review-wave`, config `"review": true | {"roles": [...]}`,
KILO_LOOP_REVIEW=1) → the reviewer roles and their backend/agent/model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kilo_loop.agent.registry import RUNTIMES
from kilo_loop.errors import ConfigError
from kilo_loop.review.controller import ReviewOptions
from kilo_loop.review.count import ROLES, SEED_ROLE
from kilo_loop.review.wave import RoleSpec

if TYPE_CHECKING:
    from kilo_loop.settings import Settings

_ROLE_KEYS = ("role", "agent", "model", "variant", "backend")


class ReviewConfigError(ConfigError):
    """A review configuration that cannot be used; the message says which part and why."""


def _spec(item: Any, default_agent: str | None, default_model: str | None) -> RoleSpec:
    if isinstance(item, str):
        item = {"role": item}
    if not isinstance(item, dict):
        raise ReviewConfigError(f"review role {item!r}: write a role name or {{\"role\": …, \"model\": …}}")
    unknown = [k for k in item if k not in _ROLE_KEYS]
    if unknown:
        raise ReviewConfigError(f"review role: unknown key {unknown[0]!r} (keys: {', '.join(_ROLE_KEYS)})")
    role = item.get("role")
    if role not in ROLES:
        raise ReviewConfigError(f"review role {role!r}: use one of {', '.join(ROLES)}")
    values = {k: item.get(k) for k in _ROLE_KEYS[1:]}
    for key, value in values.items():
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ReviewConfigError(f"review role {role!r}: {key!r} must be a non-empty string")
    backend = values["backend"]
    if backend is not None and backend not in RUNTIMES and ":" not in backend:
        raise ReviewConfigError(f"review role {role!r}: backend {backend!r} is neither a runtime "
                                f"({', '.join(RUNTIMES)}) nor a 'package.module:attribute' reference")
    return RoleSpec(role=role, agent=values["agent"] or default_agent, model=values["model"] or default_model,
                    variant=values["variant"], backend=backend)


def role_specs(config: dict[str, Any], settings: Settings | None) -> list[RoleSpec]:
    """The roles a `"review": {"roles": [...]}` object names, in order, each once."""
    unknown = [k for k in config if k != "roles"]
    if unknown:
        raise ReviewConfigError(f"review: unknown key {unknown[0]!r} (write {{\"roles\": [\"code\", …]}})")
    roles = config.get("roles", list(ROLES))
    if not isinstance(roles, list) or not roles:
        raise ReviewConfigError("review.roles must be a non-empty list such as [\"code\", \"test\", \"security\"]")
    agent = (settings.review_agent or settings.agent) if settings else None
    model = settings.model if settings else None
    specs = [_spec(item, agent, model) for item in roles]
    names = [s.role for s in specs]
    if len(set(names)) != len(names):
        raise ReviewConfigError(f"review.roles names a role twice: {names}")
    return specs


def review_options(settings: Settings) -> ReviewOptions | None:
    """None when no review is asked for."""
    if not settings.review_on:
        return None
    agent = settings.review_agent or settings.agent
    if isinstance(settings.review, dict):
        specs = role_specs(settings.review, settings)
    elif settings.review_wave:
        specs = [RoleSpec(role=role, agent=agent, model=settings.model) for role in ROLES]
    else:
        specs = [RoleSpec(role=SEED_ROLE, agent=agent, model=settings.model)]
    return ReviewOptions(roles=tuple(specs), gate=settings.review_gate, retries=settings.review_retries,
                         large_budget=settings.review_large_retries)


def review_runtimes(settings: Settings) -> tuple[str, ...]:
    """The runtimes (kilo, claude, …) the review roles name as their backend, for the run to set up
    beside its own; a configuration that cannot be read names none (the run reports it when it starts)."""
    try:
        options = review_options(settings)
    except ReviewConfigError:
        return ()
    roles = options.roles if options is not None else ()
    return tuple(dict.fromkeys(spec.runtime for spec in roles if spec.runtime))
