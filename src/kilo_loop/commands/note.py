"""`kilo-loop note`: a note to the agent of a running loop, through the run's dashboard API with its token
(read from the run's api.json, never printed). The run answers whether it took the note and its id."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import httpx

from kilo_loop.errors import KiloLoopError
from kilo_loop.git import project_root
from kilo_loop.run.layout import ProjectLayout
from kilo_loop.run.store import resolve_run
from kilo_loop.web.api_file import read_api_file


class NoteNotTaken(KiloLoopError):
    """The run refused the note (or withdrawal) and said why."""


@click.command(help="Send a note to the agent of a running loop, or withdraw one still queued.\n\n"
                    'kilo-loop note "use utils/, not a new helper" reaches a serve session at once, else the next '
                    "iteration's prompt, first thing.")
@click.argument("text", required=False)
@click.option("--run", "run_id", default="last", show_default=True, help="the run's id, or last")
@click.option("--withdraw", "withdraw", metavar="ID", help="withdraw a still-queued note (n1, n2, …) instead")
@click.option("-C", "--project", type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="repository (default: cwd's git root)")
def note_command(text: str | None, run_id: str, withdraw: str | None, project: Path | None) -> None:
    if (text is None) == (withdraw is None):
        raise click.UsageError('give the note\'s TEXT ("-" reads it from stdin), or --withdraw ID')
    if text == "-":
        text = sys.stdin.read()
    run = resolve_run(ProjectLayout(project_root(project)), run_id)
    api = read_api_file(run.dir)
    headers = {"authorization": f"Bearer {api.token}"}
    try:
        with httpx.Client(base_url=api.url, headers=headers, timeout=30.0) as client:
            if withdraw is not None:
                response = client.post(f"api/notes/{withdraw}/withdraw", params={"source": "cli"}, json={})
            else:
                response = client.post("api/notes", params={"source": "cli"}, json={"text": text})
    except httpx.HTTPError as exc:
        raise NoteNotTaken(f"run {run.dir.name}'s dashboard did not answer ({exc}): is the run still going?") from None
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    if response.status_code >= 400:
        raise NoteNotTaken(f"run {run.dir.name} refused: {body.get('error') or response.text[:300]}")
    if withdraw is not None:
        click.echo(f"note {body.get('id')} withdrawn from run {run.dir.name}")
        return
    masked = " (a secret in it was masked: the agent and every record see [REDACTED])" if body.get("masked") else ""
    click.echo(f"note {body.get('id')} queued for run {run.dir.name}{masked}; its life shows in the log and "
               f"`kilo-loop report`")
