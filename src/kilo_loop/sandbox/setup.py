"""The run's decision from `--sandbox auto|bwrap|off` (config `sandbox`, `KILO_LOOP_SANDBOX`).

`auto` jails when bubblewrap works here and otherwise runs bare with one warning naming the fix;
`bwrap` refuses to start without it (a `SetupError`, exit 2); `off` never jails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from kilo_loop.errors import UsageError
from kilo_loop.sandbox.jail import Jail
from kilo_loop.sandbox.layout import project_facts
from kilo_loop.sandbox.network import NetworkPolicy
from kilo_loop.sandbox.policy import JailPaths, NetworkMode, SandboxError, merge_paths
from kilo_loop.sandbox.probe import BwrapStatus, probe_bwrap
from kilo_loop.sandbox.proxy import NetworkProxy
from kilo_loop.sandbox.toolshell import nested_userns


class SandboxUnavailable(UsageError):
    label = "sandbox"


def decide(mode: str, environ: Mapping[str, str] | None = None) -> tuple[BwrapStatus | None, str | None]:
    """(the usable bubblewrap or None, a warning for `auto` without it); raises for `bwrap` without it."""
    if mode == "off":
        return None, None
    status = probe_bwrap(environ)
    if status.usable:
        return status, None
    if mode == "bwrap":
        raise SandboxUnavailable(f"--sandbox bwrap: {status.problem}")
    return None, f"the agent runs without the jail: {status.problem}"


def backend_paths(backend: object) -> JailPaths:
    """What the backend (and a router's or a serve transport's members) declare as `jail_paths`."""
    found: list[JailPaths] = []
    stack = [backend]
    while stack:
        item = stack.pop()
        paths = getattr(item, "jail_paths", None)
        if isinstance(paths, JailPaths):
            found.append(paths)
        by_runtime = getattr(item, "by_runtime", None)
        if isinstance(by_runtime, dict):
            stack.extend(by_runtime.values())
        fallback = getattr(item, "fallback", None)
        if fallback is not None:
            stack.append(fallback)
    return merge_paths(found)


def open_jail(status: BwrapStatus, project: Path, protect: Sequence[str], paths: JailPaths,
              goal_file: Path | None = None, warn: Callable[[str], None] | None = None) -> Jail:
    """The run's jail; a project the jail cannot hold (a submodule) is a SandboxUnavailable."""
    assert status.binary is not None
    try:
        facts = project_facts(project, protect, paths.project_config, goal_file)
    except SandboxError as exc:
        raise SandboxUnavailable(str(exc)) from exc
    unshare, why_not = nested_userns(status.binary)
    if why_not is not None and warn is not None:
        warn(f"commands in the jail cannot get a user namespace of their own ({why_not}): under the serve "
             "transport they could read the agent server's password; use --transport run to keep it out of reach")
    return Jail(status.binary, facts, paths, unshare=unshare)


def all_protect(globs: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(globs))


def jail_expected(mode: str, environ: Mapping[str, str] | None = None) -> bool:
    """Will this run be jailed? (`auto` with a working bubblewrap, or `bwrap`)."""
    return mode != "off" and probe_bwrap(environ).usable


def check_mode(mode: str, dry_run: bool, environ: Mapping[str, str] | None = None) -> None:
    """Pre-flight: `--sandbox bwrap` that cannot start refuses the run before anything starts (exit 2)."""
    if mode == "bwrap" and not dry_run:
        decide(mode, environ)


def run_jail(mode: str, dry_run: bool, project: Path, protect: Sequence[str], backend: object,
             goal_file: Path | None, warn: Callable[[str], None], network: NetworkMode = "full",
             allow_hosts: Sequence[str] = ()) -> Jail | None:
    """The run's jail, or None (off, a dry run, or `auto` without bubblewrap: said once through `warn`).
    With a `network` of its own, the jail carries the loop's proxy (not started yet)."""
    if dry_run:
        return None
    status, warning = decide(mode)
    if warning is not None:
        warn(f"{warning}; --sandbox-network {network} needs the jail" if network != "full" else warning)
    if status is None:
        return None
    jail = open_jail(status, project, protect, backend_paths(backend), goal_file, warn)
    if network == "full":
        return jail
    if allow_hosts and network == "none":
        warn("--sandbox-allow-host is ignored with --sandbox-network none (the model endpoint only)")
    proxy = NetworkProxy(NetworkPolicy(network, (), tuple(allow_hosts)))
    return replace(jail, network=network, proxy=proxy)


def preview(mode: str, dry_run: bool, protected: int, network: str = "full") -> str:
    """The About box's line, before the run starts (the probe is cached: this costs a file read)."""
    if dry_run:
        return "off (dry run: the simulated agent runs nothing)"
    if mode == "off":
        return "off (--sandbox off): only the guard stands between the agent and this machine"
    status = probe_bwrap()
    if not status.usable:
        return f"off — {status.problem}"
    return f"bwrap — project rw, .git ro, {protected} protected, network {network}"
