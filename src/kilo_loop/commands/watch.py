"""`kilo-loop watch [RUN|URL]`: the run view in the terminal (Textual), over the dashboard's own API."""

from __future__ import annotations

from pathlib import Path

import click

from kilo_loop.tui.target import resolve_target


@click.command(help="Watch and steer a running loop in the terminal (a Textual UI over the dashboard's API).\n\n"
                    "Stages, Now, clock, budget, log, questions, notes, pause/stop/revert. RUN is a run id or last "
                    "(default); URL a dashboard's http://127.0.0.1:PORT/?token=… (a fleet's with &run=ID). "
                    "q leaves; the run goes on.")
@click.argument("what", metavar="[RUN|URL]", required=False)
@click.option("--run", "fleet_run", metavar="ID", help="with a fleet dashboard's URL: the run to watch")
@click.option("-C", "--project", type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="repository (default: cwd's git root)")
def watch_command(what: str | None, fleet_run: str | None, project: Path | None) -> None:
    target = resolve_target(what, project, fleet_run)
    from kilo_loop.tui.app import WatchApp  # Textual loads only for this command
    from kilo_loop.tui.client import DashboardClient

    WatchApp(DashboardClient(target)).run()
