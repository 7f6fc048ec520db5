"""Which forge a remote is, and where its REST API lives. Pure: the remote's URL and the environment in,
a `ForgeTarget` (or a message saying which flag names what could not be told) out."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kilo_loop.errors import UsageError

ForgeKind = Literal["github", "gitlab", "gitea"]
TOKEN_VARIABLES: dict[ForgeKind, str] = {"github": "GITHUB_TOKEN", "gitlab": "GITLAB_TOKEN", "gitea": "GITEA_TOKEN"}

# https://host/owner/repo(.git), ssh://git@host(:port)/owner/repo(.git), git@host:owner/repo(.git)
_URL = re.compile(r"^(?:[a-z+]+://)?(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?[:/](?P<path>[^:]+?)(?:\.git)?/?$")


class ForgeUnknown(UsageError, ValueError):
    """The remote does not say which forge or repository it is; the message names the flag to pass."""


@dataclass(frozen=True)
class ForgeTarget:
    kind: ForgeKind
    api: str  # the REST API's base URL, no trailing slash
    repo: str  # OWNER/REPO (GitLab: the project's full path)

    @property
    def token_variable(self) -> str:
        return TOKEN_VARIABLES[self.kind]


def parse_remote(url: str) -> tuple[str, str] | None:
    """(host, OWNER/REPO) of a remote URL; None for a local path or anything else."""
    if url.startswith(("/", ".", "file:")):
        return None
    match = _URL.match(url.strip())
    if not match or "/" not in match["path"]:
        return None
    return match["host"].lower(), match["path"].strip("/")


def guess_kind(host: str) -> ForgeKind | None:
    if host == "github.com" or host.startswith("github."):
        return "github"
    if host == "gitlab.com" or host.startswith("gitlab."):
        return "gitlab"
    if host in ("codeberg.org", "gitea.com") or host.startswith(("gitea.", "forgejo.")):
        return "gitea"
    return None


def default_api(kind: ForgeKind, host: str, env: Mapping[str, str]) -> str:
    """The conventional API base: GITHUB_API_URL, GitLab's CI_API_V4_URL, GITEA_URL, else from the host."""
    if kind == "github":
        return env.get("GITHUB_API_URL") or ("https://api.github.com" if host == "github.com"
                                             else f"https://{host}/api/v3")
    if kind == "gitlab":
        return env.get("CI_API_V4_URL") or f"https://{host}/api/v4"
    base = env.get("GITEA_URL") or f"https://{host}"
    return base.rstrip("/") + "/api/v1"


def forge_target(remote_url: str, env: Mapping[str, str], kind: str = "auto", api: str | None = None,
                 repo: str | None = None) -> ForgeTarget:
    """The forge behind `remote_url`, with --forge / --forge-url / --forge-repo taking precedence."""
    parsed = parse_remote(remote_url)
    host = parsed[0] if parsed else ""
    chosen = guess_kind(host) if kind == "auto" else kind
    if chosen not in TOKEN_VARIABLES:
        raise ForgeUnknown(f"cannot tell which forge the remote {remote_url!r} is: pass --forge github|gitlab|gitea")
    forge: ForgeKind = chosen
    name = repo or (parsed[1] if parsed else None)
    if not name or not re.fullmatch(r"[\w.-]+(/[\w.-]+)+", name):
        raise ForgeUnknown(f"cannot tell the repository from the remote {remote_url!r}: pass --forge-repo OWNER/REPO")
    base = api or (default_api(forge, host, env) if host else None)
    if not base:
        raise ForgeUnknown(f"cannot tell the {forge} API from the remote {remote_url!r}: pass --forge-url URL")
    return ForgeTarget(forge, base.rstrip("/"), name)
