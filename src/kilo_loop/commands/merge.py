"""`kilo-loop merge RUN`: land a parallel plan's result that was left `needs-merge` (a conflict, or its
verify failing on the merged result), once the operator has fixed what stood in the way."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from kilo_loop.errors import KiloLoopError
from kilo_loop.fleet.merge_check import plan_verify_commands, verify_on_merge
from kilo_loop.fleet.worktree import offer_result, open_worktree, remove_worktree
from kilo_loop.git import project_root
from kilo_loop.run.layout import LOOP_DIR


class NeedsMerge(KiloLoopError):
    """The result still cannot land; the message says why and the patch is kept."""


def plan_goal(project: Path, worktree: Path, run_id: str) -> Path | None:
    """The plan's goal file as its run recorded it (relative to its worktree), if the run left a state."""
    for runs in (worktree / LOOP_DIR / "runs", project / LOOP_DIR / "runs"):
        try:
            source = orjson.loads((runs / run_id / "state.json").read_bytes()).get("goalSource")
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(source, str) and source:
            path = Path(source) if Path(source).is_absolute() else worktree / source
            return path if path.is_file() else None
    return None


@click.command(help="Land a parallel plan's result left needs-merge, after a fix (verified on the merged result).\n\n"
                    "The merge check against your tree, the plan's verify commands on the merged result, then "
                    "the result applied to your working tree, whole or not at all.")
@click.argument("run_id")
@click.option("--keep-branch", is_flag=True, help="keep the plan's kilo-loop/<runId> branch after it landed")
@click.option("--sandbox", type=click.Choice(["auto", "bwrap", "off"]), default="auto", show_default=True,
              help="jail the verify commands in bubblewrap")
@click.option("-C", "--project", type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="repository (default: cwd's git root)")
def merge_command(run_id: str, keep_branch: bool, sandbox: str, project: Path | None) -> None:
    root = project_root(project)
    plan = open_worktree(root, run_id)  # WorktreeError: no such plan worktree
    goal = plan_goal(root, plan.path, run_id)
    commands = plan_verify_commands(goal, None) if goal is not None else []
    check = verify_on_merge(commands, sandbox, 600.0, lambda line: click.echo(f"kilo-loop: warning: {line}", err=True))
    outcome = offer_result(plan, check)
    if not outcome.applied:
        hints = "\n".join(f"  {line}" for line in outcome.resolve_commands(plan))
        raise NeedsMerge(f"{run_id} still needs a merge: {outcome.message}\n{hints}".rstrip())
    remove_worktree(plan, keep_branch=keep_branch)
    checked = f" (verified on the merged result: {', '.join(f'`{c}`' for c in commands)})" if commands else ""
    click.echo(f"{run_id}: " + ("no change to apply" if outcome.empty else f"result applied to your working tree{checked}"))
