"""`kilo-loop doctor --broker URL`: is this Redis fit to hold a fleet's jobs (docs/fleet.md)?

A fleet's queue, leases and results live in Redis. A Redis that restarts without an append-only file
comes back empty (the fleet re-submits what it remembers, but a job queued while no `kilo-loop fleet`
was watching is gone); one that evicts keys under memory pressure can drop a queued job or a lease
at any time. The checks are pure (facts in, `Check`s out); `broker_facts` gathers the facts.
"""

from __future__ import annotations

from typing import Any

from kilo_loop.doctor.checks import Check
from kilo_loop.fleet.connection import OUTAGE_ERRORS, masked, redis_client

_SETTINGS = ("appendonly", "appendfsync", "maxmemory-policy", "maxmemory", "save")


def broker_facts(url: str) -> dict[str, Any]:
    """What the checks need: whether Redis answers, its version, and its persistence and memory settings
    (None where CONFIG GET is refused, as on some managed services)."""
    import redis.exceptions

    client = redis_client(url)
    facts: dict[str, Any] = {"url": masked(url)}
    try:
        facts["version"] = client.info("server").get("redis_version", "")
    except OUTAGE_ERRORS as exc:
        facts["error"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return facts
    except redis.exceptions.ResponseError as exc:
        facts["version"] = ""
        facts["infoError"] = str(exc)
    try:
        facts["config"] = {name: client.config_get(name).get(name) for name in _SETTINGS}
    except redis.exceptions.ResponseError as exc:
        facts["config"] = None
        facts["configError"] = str(exc)
    finally:
        client.close()
    return facts


def broker_checks(facts: dict[str, Any]) -> list[Check]:
    where = facts["url"]
    if "error" in facts:
        return [Check("broker: reachable", "fail", f"{where} does not answer ({facts['error']})",
                      "start redis-server there, or check the URL (redis://host:port/db)")]
    found = [Check("broker: reachable", "ok", f"{where} answers (Redis {facts.get('version') or '?'})")]
    config = facts.get("config")
    if config is None:
        return [*found, Check("broker: settings", "warn", f"CONFIG GET is refused ({facts.get('configError', '')}),"
                              " so persistence and eviction cannot be checked",
                              "check in the provider's console: append-only file on, appendfsync everysec or "
                              "always, maxmemory-policy noeviction")]
    return [*found, _aof(config), _fsync(config), _eviction(config)]


def _aof(config: dict[str, Any]) -> Check:
    if config.get("appendonly") == "yes":
        return Check("broker: append-only file", "ok", "on: a restart keeps the queue, leases and results")
    snapshots = config.get("save") or ""
    detail = ("off" + (f", snapshots only ({snapshots}): a crash loses what came after the last one" if snapshots
                       else ", no snapshots: a restart comes back empty"))
    return Check("broker: append-only file", "fail", detail,
                 "CONFIG SET appendonly yes, then CONFIG REWRITE (or appendonly yes in redis.conf)")


def _fsync(config: dict[str, Any]) -> Check:
    value = config.get("appendfsync") or "?"
    if config.get("appendonly") != "yes":
        return Check("broker: appendfsync", "warn", f"{value}, but the append-only file is off",
                     "turn the append-only file on first")
    if value in ("always", "everysec"):
        loss = "nothing" if value == "always" else "at most the last second"
        return Check("broker: appendfsync", "ok", f"{value}: a crash of the machine loses {loss}")
    return Check("broker: appendfsync", "warn", f"{value}: the system decides when writes reach the disk; a "
                 "crash of the machine can lose many seconds of jobs and events",
                 "CONFIG SET appendfsync everysec (or always)")


def _eviction(config: dict[str, Any]) -> Check:
    policy = config.get("maxmemory-policy") or "?"
    limit = config.get("maxmemory") or "0"
    if policy == "noeviction":
        return Check("broker: maxmemory-policy", "ok", "noeviction: a full Redis refuses writes, it drops no job")
    if limit == "0":
        return Check("broker: maxmemory-policy", "warn", f"{policy}, with no maxmemory set (no eviction yet); "
                     "once a limit is set, Redis may drop a queued job or a lease to make room",
                     "CONFIG SET maxmemory-policy noeviction")
    return Check("broker: maxmemory-policy", "fail", f"{policy} with maxmemory {limit}: under memory pressure "
                 "Redis drops keys — a queued job, a lease, a result", "CONFIG SET maxmemory-policy noeviction")
