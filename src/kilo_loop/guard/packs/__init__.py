"""The guard's rules, grouped into named packs that can be switched off one by one
(`guardPacks` in .kilocode-loop/config.json). Every pack is on by default."""

from __future__ import annotations

from collections.abc import Mapping

from kilo_loop.guard.packs import (
    cloud,
    containers,
    databases,
    filesystem,
    git,
    kubernetes,
    publish,
    remote,
    system,
)
from kilo_loop.guard.packs.rules import Pack, Rule, TextRule

PACKS: tuple[Pack, ...] = (git.PACK, filesystem.PACK, system.PACK, publish.PACK, containers.PACK,
                           kubernetes.PACK, cloud.PACK, databases.PACK, remote.PACK)
PACK_NAMES = tuple(pack.name for pack in PACKS)


def enabled_packs(switches: Mapping[str, bool] | None) -> tuple[Pack, ...]:
    """The packs in force: all, minus those `switches` turns off. An unknown name is an error."""
    switches = dict(switches or {})
    unknown = sorted(set(switches) - set(PACK_NAMES))
    if unknown:
        raise ValueError(f"guardPacks: unknown pack(s) {', '.join(unknown)}; the packs are {', '.join(PACK_NAMES)}")
    for name, value in switches.items():
        if not isinstance(value, bool):
            raise ValueError(f"guardPacks: {name} must be true or false, got {value!r}")  # noqa: TRY004 - a config error
    return tuple(pack for pack in PACKS if switches.get(pack.name, True))


__all__ = ["PACKS", "PACK_NAMES", "Pack", "Rule", "TextRule", "enabled_packs"]
