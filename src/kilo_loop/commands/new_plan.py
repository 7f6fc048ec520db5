"""`kilo-loop new-plan "<title>"`: scaffold `.kilo/plans/<epoch-ms>-<slug>.md` from the project template."""

from __future__ import annotations

from pathlib import Path

import click

from kilo_loop.git import project_root
from kilo_loop.goal.scaffold import DEFAULT_DIR, build_plan, write_plan


@click.command("new-plan")
@click.argument("title")
@click.option("--slug", help="File-name slug (default: made from the title).")
@click.option("--epoch", "epoch_ms", type=int, metavar="MS",
              help="Timestamp in milliseconds for the file name and {{date}} (default: now).")
@click.option("--dir", "directory", default=DEFAULT_DIR, show_default=True, metavar="DIR",
              help="Directory for the plan, relative to the project.")
@click.option("--project", "-C", "project", metavar="DIR",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Project root (default: the git root of the current directory, else the current directory).")
@click.option("--print", "print_only", is_flag=True, help="Print the plan to stdout and write nothing.")
@click.option("--force", is_flag=True, help="Overwrite an existing plan file.")
def new_plan_command(
    title: str,
    slug: str | None,
    epoch_ms: int | None,
    directory: str,
    project: Path | None,
    print_only: bool,
    force: bool,
) -> None:
    """Scaffold a plan from <project>/.kilo/templates/plan.md ({{title}}, {{date}}, {{slug}})."""
    root = project.resolve() if project else project_root()
    plan = build_plan(root, title, slug=slug, epoch_ms=epoch_ms, directory=directory)  # ScaffoldError: exit 2 for a bad argument, else 1
    if print_only:
        click.echo(f"# would write {plan.relative}", err=True)
        click.echo(plan.content, nl=False)
        return
    write_plan(plan, force=force)
    click.echo(f"Created {plan.relative}")
    click.echo(f"Run it:  kilo-loop --goal {plan.relative}")
    if not plan.discoverable:
        click.echo(
            "warning: this plan will not appear in the dashboard or --list-goals: it needs '- [ ]' items "
            "and a location under plans/, .kilo/plans/ or .kilocode-loop/goals/",
            err=True,
        )
