"""Who may review, as the settings write it: the reviewer roles and how a `"review": {"roles": [...]}`
object names them. Pure validation, at the settings' layer, so a wrong role stops the run while its
settings load (before anything is written) without the settings importing the review package."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kilo_loop.agent.registry import RUNTIMES
from kilo_loop.errors import ConfigError

ROLES = ("code", "test", "security")
SEED_ROLE = "reviewer"
_ROLE_KEYS = ("role", "agent", "model", "variant", "backend")


class ReviewConfigError(ConfigError):
    """A review configuration that cannot be used; the message says which part and why."""


@dataclass(frozen=True)
class RoleSpec:
    """Who reviews as `role`: backend (None = the run's), agent, model and variant."""

    role: str
    agent: str | None = None
    model: str | None = None
    variant: str | None = None
    backend: str | None = None  # a runtime name (kilo, claude, …) or a `module:attr` backend

    @property
    def runtime(self) -> str | None:
        """The backend when it names a runtime: the run's router starts that CLI for this role."""
        return self.backend if self.backend in RUNTIMES else None


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


def role_specs(config: dict[str, Any], agent: str | None = None, model: str | None = None) -> list[RoleSpec]:
    """The roles a `"review": {"roles": [...]}` object names, in order, each once; `agent` and `model`
    stand for a role that names none."""
    unknown = [k for k in config if k != "roles"]
    if unknown:
        raise ReviewConfigError(f"review: unknown key {unknown[0]!r} (write {{\"roles\": [\"code\", …]}})")
    roles = config.get("roles", list(ROLES))
    if not isinstance(roles, list) or not roles:
        raise ReviewConfigError("review.roles must be a non-empty list such as [\"code\", \"test\", \"security\"]")
    specs = [_spec(item, agent, model) for item in roles]
    names = [s.role for s in specs]
    if len(set(names)) != len(names):
        raise ReviewConfigError(f"review.roles names a role twice: {names}")
    return specs
