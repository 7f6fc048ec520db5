"""The run's jail: the project's facts and the backend's declared paths, turned into a wrapped
command and its environment for each child that runs code the agent controls."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import kilo_loop
from kilo_loop.sandbox.bwrap import bwrap_argv
from kilo_loop.sandbox.network import PROXY_PORT, model_endpoints, proxy_env
from kilo_loop.sandbox.policy import (
    BASE_ENV_PREFIXES,
    COMMON_HOME_RO,
    JailPaths,
    JailPolicy,
    JailRole,
    NetworkMode,
    ProjectFacts,
    describe,
    filter_env,
    resolve_home_path,
)
from kilo_loop.sandbox.proxy import NetworkProxy
from kilo_loop.sandbox.toolshell import write_tool_shell


def _existing(paths: list[Path | None]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(p for p in paths if p is not None and p.exists()))


def program_paths(command: Sequence[str], env: Mapping[str, str]) -> tuple[Path, ...]:
    """Where what the jail runs comes from: the command (as named and as its links resolve), every PATH
    directory, this Python and kilo_loop's own package (the agents' pre-tool hooks run `python -m`)."""
    found: list[Path] = [Path(sys.executable), Path(sys.prefix), Path(kilo_loop.__file__).resolve().parent]
    found += [Path(entry) for entry in env.get("PATH", "").split(os.pathsep) if entry.startswith("/")]
    if command:
        named = shutil.which(command[0], path=env.get("PATH")) or command[0]
        if named.startswith("/"):
            found += [Path(named), Path(os.path.realpath(named))]
    return tuple(dict.fromkeys(found))


def env_named_paths(env: Mapping[str, str]) -> tuple[Path, ...]:
    """Absolute paths of existing files the child's environment names (a config file, a hook's rules)."""
    found: list[Path | None] = []
    for value in env.values():
        if value.startswith("/") and "\n" not in value and len(value) < 4096 and ":" not in value:
            found.append(Path(value))
    return tuple(p for p in _existing(found) if p.is_file())


@dataclass(frozen=True)
class Jail:
    """Everything about the run's jail that does not change per child."""

    bwrap: str
    facts: ProjectFacts
    paths: JailPaths
    network: NetworkMode = "full"
    unshare: str | None = None  # util-linux `unshare` when a command in the jail can take a user namespace
    proxy: NetworkProxy | None = None  # the loop's proxy: the only way out of a jail with its own network

    def tool_shell(self, directory: Path, env: Mapping[str, str]) -> Path | None:
        """The SHELL a jailed agent server gets (see `sandbox.toolshell`), or None where it cannot work."""
        if self.unshare is None:
            return None
        return write_tool_shell(directory, self.unshare, env.get("SHELL"))

    def policy(self, env: Mapping[str, str], role: JailRole = "agent", review_file: Path | None = None,
               command: Sequence[str] = ()) -> JailPolicy:
        home_value = env.get("HOME")
        home = Path(home_value) if home_value and home_value != "/" else None
        rw_entries = self.paths.home_rw if role != "verify" else ()
        home_rw = [resolve_home_path(entry, env) for entry in rw_entries]
        for path in home_rw:  # the CLI's state must exist to be bound (and kept between sessions)
            if path is not None and home is not None and not path.suffix:
                path.mkdir(parents=True, exist_ok=True)
        home_ro = [resolve_home_path(e, env) for e in (*COMMON_HOME_RO, *self.paths.home_ro)]
        return JailPolicy(
            facts=self.facts, role=role, review_file=review_file, home=home,
            home_rw=_existing(home_rw), home_ro=_existing(home_ro), extra_ro=env_named_paths(env),
            network=self.network, env_prefixes=(*BASE_ENV_PREFIXES, *self.paths.env_prefixes),
            keep_all_env=role == "verify", programs=program_paths(command, env),
        )

    def wrap(self, command: list[str], env: Mapping[str, str], role: JailRole = "agent",
             review_file: Path | None = None, inbound: tuple[int, int] | None = None) -> tuple[list[str], dict[str, str]]:
        """The command run inside the jail, and the environment it gets."""
        policy = self.policy(env, role, review_file, command)
        if role == "reviewer" and review_file is not None and not review_file.exists():
            review_file.touch()  # bubblewrap binds existing paths only; an empty verdict is read as none
        kept = dict(env) if policy.keep_all_env else filter_env(env, policy.env_keep, policy.env_prefixes)
        if kept.get("TMPDIR", "/tmp") != "/tmp":
            kept["TMPDIR"] = "/tmp"  # the jail's /tmp is private: a TMPDIR under the real one is not there
        command, kept, sockets = self._network(command, kept, role, inbound)
        return bwrap_argv(replace(policy, bind_ro=sockets), command, self.bwrap), kept

    def _network(self, command: list[str], env: dict[str, str], role: JailRole,
                 inbound: tuple[int, int] | None = None) -> tuple[list[str], dict[str, str], tuple[Path, ...]]:
        """In a jail with its own network, the command runs behind the bridge to the loop's proxy (the
        verify command of `none` gets no way out at all); `inbound` (a listening socket's descriptor, a
        port inside) lets the loop reach a server in the jail, the warm agent server."""
        proxy = self.proxy
        if self.network == "full" or proxy is None or (role == "verify" and self.network == "none"):
            return command, env, ()
        proxy.allow_model(model_endpoints(env, self.paths.model_hosts))
        forwards = [arg for target in proxy.policy.forwards for arg in ("--forward", str(target))]
        if inbound is not None:
            forwards += ["--inbound", f"{inbound[0]}:{inbound[1]}"]
        bridged = [sys.executable, "-m", "kilo_loop.sandbox.bridge", str(proxy.socket), str(PROXY_PORT), *forwards,
                   "--", *command]
        return bridged, {**env, **proxy_env()}, (proxy.directory,)

    def describe(self) -> str:
        line = describe(JailPolicy(facts=self.facts, network=self.network))
        return f"{line} ({self.proxy.policy.describe()})" if self.proxy is not None else line

    def with_facts(self, facts: ProjectFacts) -> Jail:
        return replace(self, facts=facts)


def process_env() -> dict[str, str]:
    return dict(os.environ)
