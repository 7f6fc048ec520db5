"""`kilo-loop doctor`: one line per check (✓ / ! / ✗ and the fix), or `--json`; exit 0 all good,
1 a failure, 2 warnings under `--strict`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import click
import orjson

from kilo_loop.agent.kilo.provider import ProviderConfigMode
from kilo_loop.doctor.checks import Check, exit_code, line
from kilo_loop.doctor.probe import BACKENDS, run_checks
from kilo_loop.errors import ConfigError
from kilo_loop.git import project_root


@dataclass(frozen=True)
class ProjectView:
    """What a run in the project would use: the environment, the runtime, providerConfigMode."""

    environ: dict[str, str]
    picked: str
    problem: Check | None = None
    provider_mode: ProviderConfigMode = "auto"


def project_environ(project: Path) -> ProjectView:
    """The environment the CLIs are looked up in, as a run in `project` sees it: the project's
    `kiloBin` (config.json or KILO_LOOP_KILO_BIN) names the binary as KILO_BIN does; the runtime
    a run would use; its providerConfigMode. A config the run would refuse is a failed check of its own."""
    from kilo_loop.agent.registry import auto_runtime
    from kilo_loop.settings import load_settings

    environ = dict(os.environ)
    try:
        settings = load_settings({}, project_root(project), warn=lambda _line: None)
    except ConfigError as exc:
        return ProjectView(environ, auto_runtime(None, environ),
                           Check("config", "fail", str(exc), "correct that value, or delete the key for its default"))
    if settings.kilo_bin:
        environ["KILO_BIN"] = settings.kilo_bin
    picked = settings.runtime if settings.runtime != "auto" else auto_runtime(None, environ)
    return ProjectView(environ, picked, None, settings.provider_config_mode)


def _redis_url(value: str | None) -> str | None:
    if value is not None and urlsplit(value).scheme not in ("redis", "rediss", "unix"):
        raise click.BadParameter("not a Redis URL: use redis://host:port/db (rediss:// for TLS, unix:// for a socket)")
    return value


@click.command(help="Check the agent CLIs, their flags, provider injection, usage DB, git and the dashboard port.")
@click.option("--json", "as_json", is_flag=True, help="a JSON list of {check, status, detail, fix}")
@click.option("--strict", is_flag=True, help="exit 2 when there are warnings")
@click.option("--runtime", "runtimes", multiple=True, type=click.Choice(BACKENDS),
              help="only this backend (repeatable; default: every backend)")
@click.option("--port", type=click.IntRange(0, 65535), default=7999, show_default=True, help="the dashboard port to check")
@click.option("-C", "--project", type=click.Path(path_type=Path, exists=True, file_okay=False), default=Path("."),
              help="directory the CLIs' config is read in (default: cwd)")
@click.option("--broker", metavar="URL", callback=lambda _ctx, _param, value: _redis_url(value), help="check this fleet Redis (redis://host:port/db): answers, append-only "
              "file, appendfsync, maxmemory-policy (docs/fleet.md) — instead of the agent CLIs; add --runtime for both")
def doctor_command(as_json: bool, strict: bool, runtimes: tuple[str, ...], port: int, project: Path,
                   broker: str | None) -> None:
    checks: list[Check] = []
    if broker:
        from kilo_loop.fleet.broker_checks import broker_checks, broker_facts

        checks += broker_checks(broker_facts(broker))
    if runtimes or not broker:
        view = project_environ(project.resolve())
        checks += [*([view.problem] if view.problem else []),
                   *run_checks(runtimes or BACKENDS, port, project.resolve(), view.environ,
                               None if runtimes else view.picked, view.provider_mode)]
    if as_json:
        click.echo(orjson.dumps([check.as_dict() for check in checks], option=orjson.OPT_INDENT_2).decode())
    else:
        for check in checks:
            click.echo(line(check))
    raise SystemExit(exit_code(checks, strict))
