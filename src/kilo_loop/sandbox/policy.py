"""What the jail allows, as data: a small typed policy built from facts about the project and the
agent CLI, with no I/O. `sandbox.bwrap` turns it into a bubblewrap command line.

The rules (issue 23): the whole filesystem read-only; the work tree read-write; inside it, the git
directory, the loop's own files, the stage's protected paths and the agent CLIs' own project config
read-only again; the agent's contract files (progress, handoff, its review file) writable; a private
/tmp, /dev/shm, /proc, PID and IPC namespace; HOME replaced by an empty private one that holds only
the state and credential paths the backend declares. A reviewer gets the whole project read-only
except its own review file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kilo_loop.errors import UsageError

NetworkMode = Literal["full", "model", "none"]
SandboxMode = Literal["auto", "bwrap", "off"]
JailRole = Literal["agent", "reviewer", "verify"]

# The variables every agent CLI may need; each backend adds its own prefixes.
BASE_ENV = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "HOME", "PWD", "TMPDIR",
            "COLORTERM", "NO_COLOR", "FORCE_COLOR", "IS_SANDBOX", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
            "http_proxy", "https_proxy", "no_proxy", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
            "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "COLUMNS", "LINES", "CI", "EDITOR", "PAGER",
            # toolchains the agent's commands (and their tests) use
            "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME", "JAVA_HOME", "GOPATH", "GOROOT", "CARGO_HOME",
            "RUSTUP_HOME", "NVM_DIR", "PNPM_HOME", "BUN_INSTALL", "DENO_DIR", "GEM_HOME", "GEM_PATH", "PERL5LIB",
            "LD_LIBRARY_PATH", "PKG_CONFIG_PATH")
BASE_ENV_PREFIXES = ("LC_", "XDG_", "KILO_LOOP_", "NODE_", "GIT_AUTHOR_", "GIT_COMMITTER_")
# A provider key or endpoint a CLI's config names by any variable (codex `env_key`, kilo `{env:X}`).
BASE_ENV_SUFFIXES = ("_API_KEY", "_BASE_URL")
# Read-only in every jail's private HOME: what git and the usual toolchains read there.
COMMON_HOME_RO = ("~/.gitconfig", "$XDG_CONFIG_HOME/git", "~/.local/bin", "~/.cargo", "~/.rustup", "~/.nvm",
                  "~/.pyenv", "~/.bun", "~/.deno", "~/go", "~/.npm-global")


class SandboxError(UsageError):
    """The jail cannot be set up for this project; the message says why and what to do."""


@dataclass(frozen=True)
class JailPaths:
    """What one agent CLI needs from HOME and must not write in the project (declared per backend).

    HOME paths are written `~/x`, `$XDG_DATA_HOME/x` (XDG defaults apply) or `$VAR|~/fallback`."""

    home_rw: tuple[str, ...] = ()
    home_ro: tuple[str, ...] = ()
    project_config: tuple[str, ...] = ()  # relative to the project: read-only in the jail
    env_prefixes: tuple[str, ...] = ()
    model_hosts: tuple[str, ...] = ()  # where the CLI's model is by default (--sandbox-network model)

    def merged(self, other: JailPaths) -> JailPaths:
        def union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(dict.fromkeys((*a, *b)))

        return JailPaths(union(self.home_rw, other.home_rw), union(self.home_ro, other.home_ro),
                         union(self.project_config, other.project_config),
                         union(self.env_prefixes, other.env_prefixes), union(self.model_hosts, other.model_hosts))


def merge_paths(paths: Iterable[JailPaths]) -> JailPaths:
    merged = JailPaths()
    for item in paths:
        merged = merged.merged(item)
    return merged


@dataclass(frozen=True)
class ProjectFacts:
    """What `sandbox.layout` found on disk (existing paths only, all absolute)."""

    project: Path
    git_dirs: tuple[Path, ...]  # the gitdir, and the common dir of a linked worktree
    loop_readonly: tuple[Path, ...]  # goal file, config.json, runs/, ledger…
    loop_writable: tuple[Path, ...]  # progress.json, handoff.md: the agent's contract files
    protected: tuple[Path, ...]  # protect globs expanded to existing files and directories
    agent_configs: tuple[Path, ...]  # existing project config of the agent CLIs


@dataclass(frozen=True)
class JailPolicy:
    facts: ProjectFacts
    role: JailRole = "agent"
    review_file: Path | None = None  # a reviewer's one writable file
    home: Path | None = None  # replaced by an empty private directory
    home_rw: tuple[Path, ...] = ()
    home_ro: tuple[Path, ...] = ()
    extra_ro: tuple[Path, ...] = ()  # files the child's environment names under a hidden directory
    # Where the programs the jail runs live (the command, the PATH, this Python and kilo_loop itself, for
    # the pre-tool hooks): under /tmp (a clone, a venv, CLIs installed there) they must be bound to be seen.
    programs: tuple[Path, ...] = ()
    network: NetworkMode = "full"
    env_keep: tuple[str, ...] = BASE_ENV
    env_prefixes: tuple[str, ...] = BASE_ENV_PREFIXES
    keep_all_env: bool = False  # the verify command: the user's test suite gets the user's environment
    extra_args: tuple[str, ...] = field(default=())
    bind_ro: tuple[Path, ...] = ()  # bound read-only last, whatever hides them (the proxy's socket directory)


_XDG_DEFAULTS = {"XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share", "XDG_STATE_HOME": ".local/state",
                 "XDG_CACHE_HOME": ".cache"}


def resolve_home_path(entry: str, env: Mapping[str, str]) -> Path | None:
    """`~/x`, `$XDG_*/x` or `$VAR|fallback` against the child's environment; None without a HOME."""
    home = env.get("HOME")
    first, _, fallback = entry.partition("|")
    if first.startswith("$"):
        name, _, rest = first[1:].partition("/")
        value = env.get(name)
        if value:
            return Path(value) / rest if rest else Path(value)
        if name in _XDG_DEFAULTS and home:
            return Path(home) / _XDG_DEFAULTS[name] / rest
        return resolve_home_path(fallback, env) if fallback else None
    if first.startswith("~/") and home:
        return Path(home) / first[2:]
    return Path(first) if first.startswith("/") else None


def filter_env(env: Mapping[str, str], keep: Iterable[str], prefixes: Iterable[str],
               suffixes: Iterable[str] = BASE_ENV_SUFFIXES) -> dict[str, str]:
    names, starts, ends = frozenset(keep), tuple(prefixes), tuple(suffixes)
    return {k: v for k, v in env.items() if k in names or k.startswith(starts) or k.endswith(ends)}


def is_under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def describe(policy: JailPolicy) -> str:
    """One line for the About box, report.md and state.json."""
    facts = policy.facts
    project = "project ro" if policy.role == "reviewer" else "project rw"
    parts = [project, ".git ro", f"{len(facts.protected)} protected", f"network {policy.network}"]
    return "bwrap — " + ", ".join(parts)


PROMPT_LINE = ("The loop runs you in a jail: you may write only the project's work tree; git is read-only here "
               "(the loop checkpoints and commits), the loop's own files and the protected paths are read-only, "
               "HOME and /tmp are private and discarded.")
