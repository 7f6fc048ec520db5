"""Who reviews: settings (`--review`, `--review-wave`, config `"review": true | {"roles": [...]}`,
KILO_LOOP_REVIEW=1) → the reviewer roles and their backend/agent/model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kilo_loop.review.controller import ReviewOptions
from kilo_loop.review_roles import ROLES, SEED_ROLE, ReviewConfigError, RoleSpec, role_specs

if TYPE_CHECKING:
    from kilo_loop.settings import Settings

def review_options(settings: Settings) -> ReviewOptions | None:
    """None when no review is asked for."""
    if not settings.review_on:
        return None
    agent = settings.review_agent or settings.agent
    if isinstance(settings.review, dict):
        specs = role_specs(settings.review, agent, settings.model)
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
