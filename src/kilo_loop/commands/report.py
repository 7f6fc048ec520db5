"""`kilo-loop report`: show a saved run's report — read-only, starts nothing."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from kilo_loop.git import project_root
from kilo_loop.redact import Redactor
from kilo_loop.run.layout import ProjectLayout
from kilo_loop.run.receipts import stage_receipts
from kilo_loop.run.report import run_report_md
from kilo_loop.run.store import load_state, resolve_run


@click.command(help="Print a saved run's report.md (default: the most recent run), or its state with --json.")
@click.argument("run_id", required=False)
@click.option("--last", "--latest", "last", is_flag=True, help="the most recent run (the default)")
@click.option("--json", "as_json", is_flag=True, help="print the redacted run state as JSON")
@click.option("-C", "--project", type=click.Path(path_type=Path, exists=True, file_okay=False), help="repository (default: cwd's git root)")
def report_command(run_id: str | None, last: bool, as_json: bool, project: Path | None) -> None:
    if run_id and last:
        raise click.UsageError(f"pass either a RUN_ID ({run_id}) or --last, not both")
    layout = ProjectLayout(project_root(project))
    run = resolve_run(layout, run_id or "last")  # RunNotFound: exit 1
    state = load_state(run)
    redactor = Redactor()
    if as_json:
        wire = {**state.wire(), "stageReceipts": [r.wire() for r in stage_receipts(state)]}
        click.echo(orjson.dumps(redactor.redact_value(wire), option=orjson.OPT_INDENT_2).decode())
        return
    text = run.report.read_text(encoding="utf-8") if run.report.is_file() else run_report_md(state)
    click.echo(redactor.redact(text), nl=False)
