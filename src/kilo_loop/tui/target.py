"""What `kilo-loop watch` attaches to: a local run (its api.json, found the way `kilo-loop note` finds it),
or a dashboard URL with its token (a run's, or a fleet's with `run=ID`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from kilo_loop.errors import KiloLoopError
from kilo_loop.git import project_root
from kilo_loop.run.layout import ProjectLayout
from kilo_loop.run.locate import resolve_run
from kilo_loop.web.api_file import read_api_file


class BadTarget(KiloLoopError):
    """The URL given to `watch` cannot name a dashboard."""


@dataclass(frozen=True)
class Target:
    base: str  # the dashboard's root URL, ending in /
    token: str | None
    run_id: str | None = None  # a fleet's run; None for a run's own dashboard (it has one active run)
    label: str = ""


def from_url(url: str, run_id: str | None = None) -> Target:
    """`http://127.0.0.1:PORT/?token=…` (a fleet's also takes `&run=ID`, or --run)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadTarget(f"{url!r} is not a dashboard URL: give http://HOST:PORT/?token=… as kilo-loop printed it")
    query = dict(parse_qsl(parts.query))
    token = query.pop("token", None)
    run = run_id or query.pop("run", None)
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    base = urlunsplit((parts.scheme, parts.netloc, path, urlencode(query), ""))
    return Target(base, token, run, label=f"{parts.netloc}{' run ' + run if run else ''}")


def from_run(project: Path | None, run_id: str) -> Target:
    """A local run by id (or `last`): its api.json names the dashboard and token while it runs."""
    run = resolve_run(ProjectLayout(project_root(project)), run_id)
    api = read_api_file(run.dir)
    url = api.url if api.url.endswith("/") else api.url + "/"
    return Target(url, api.token, None, label=f"run {run.dir.name}")


def resolve_target(what: str | None, project: Path | None, fleet_run: str | None = None) -> Target:
    if what is not None and "://" in what:
        return from_url(what, fleet_run)
    return from_run(project, what or "last")
