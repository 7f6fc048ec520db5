"""`kilo-loop revert`: restore the working tree to a checkpoint taken before iteration N.

Destructive (it deletes files created after the checkpoint), so it shows the
plan first and asks; without a terminal it needs --yes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from kilo_loop.checkpoint.store import (
    CheckpointError,
    RevertPlan,
    RevertResult,
    list_checkpoints,
    plan_revert,
    revert_to_checkpoint,
)
from kilo_loop.errors import KiloLoopError
from kilo_loop.finish.commits import loop_commits_between, move_branch_back
from kilo_loop.git import project_root
from kilo_loop.run.layout import ProjectLayout
from kilo_loop.run.store import resolve_run

SHOW_AT_MOST = 50


def stdin_is_interactive() -> bool:
    """Whether a person can answer the confirmation (tests replace this)."""
    return sys.stdin is not None and sys.stdin.isatty()


def show_path(path: str) -> str:
    """A path as one safe line: names with newlines or control characters are quoted."""
    return path if path.isprintable() else json.dumps(path)


def _list(title: str, paths: Sequence[str], mark: str) -> list[str]:
    if not paths:
        return []
    lines = [f"{title} ({len(paths)}):"]
    lines += [f"  {mark} {show_path(path)}" for path in paths[:SHOW_AT_MOST]]
    if len(paths) > SHOW_AT_MOST:
        lines.append(f"  … and {len(paths) - SHOW_AT_MOST} more")
    return lines


def no_such_checkpoint(run_id: str, iteration: int, available: Sequence[int]) -> str:
    """What --before can be for this run, when the asked one is not there."""
    if not available:
        return (f"run {run_id} has no checkpoints (it ran with --no-checkpoint, or stopped before its first "
                "iteration): there is nothing to revert to")
    if len(available) == 1:
        return f"run {run_id} has no checkpoint before iteration {iteration}, only before {available[0]}: pass --before {available[0]}"
    contiguous = list(available) == list(range(available[0], available[-1] + 1))
    which = f"{available[0]} to {available[-1]}" if contiguous else ", ".join(map(str, available))
    return (f"run {run_id} has no checkpoint before iteration {iteration}: it has one before iterations {which}; "
            "pass one of those to --before")


def describe_plan(plan: RevertPlan, run_id: str) -> str:
    head = plan.checkpoint_head[:12] if plan.checkpoint_head else "no commit yet"
    lines = [f"Checkpoint before iteration {plan.iteration} of run {run_id} (HEAD {head})."]
    lines += _list("Tracked files to restore", plan.restore, "~")
    lines += _list("Files created after the checkpoint to delete", plan.delete, "-")
    if plan.keep:
        lines.append(f"Left alone: {len(plan.keep)} untracked file(s) that existed before or are protected.")
    lines += _list("Untracked files gone since, which the checkpoint kept: written back", plan.bring_back, "+")
    lines += _list("Untracked at the checkpoint but gone now (cannot be brought back)", plan.missing, "!")
    return "\n".join(lines)


def describe_result(result: RevertResult) -> str:
    summary = (f"Reverted to before iteration {result.iteration}: restored {len(result.restored)} "
               f"file(s), deleted {len(result.deleted)} file(s), kept {len(result.kept)}.")
    lines = [summary]
    lines += _list("Deleted", result.deleted, "-")
    return "\n".join(lines)


@click.command(help="Restore the working tree to the checkpoint taken before iteration N of a run.")
@click.option("--run", "run_ref", required=True, help="run id, or 'last' / 'latest'")
@click.option("--before", "iteration", required=True, type=click.IntRange(min=1), help="iteration number N")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
@click.option("-C", "--project", type=click.Path(path_type=Path, exists=True, file_okay=False), help="repository (default: cwd's git root)")
def revert_command(run_ref: str, iteration: int, yes: bool, project: Path | None) -> None:
    root = project_root(project)
    run = resolve_run(ProjectLayout(root), run_ref)  # RunNotFound, CheckpointError: exit 1
    available = [checkpoint.iteration for checkpoint in list_checkpoints(run.checkpoints)]
    if iteration not in available:
        raise CheckpointError(no_such_checkpoint(run.run_id, iteration, available))
    plan = plan_revert(root, run.checkpoints, iteration)
    if plan.head_moved:
        plan = _drop_stage_commits(root, run.run_id, run.checkpoints, plan, yes)
    click.echo(describe_plan(plan, run.run_id))
    if not (plan.restore or plan.delete):
        click.echo("The working tree already matches the checkpoint; nothing to do.")
        return
    if not yes:
        if not stdin_is_interactive():
            raise KiloLoopError("not reverting without confirmation: stdin is not a terminal (use --yes)")
        if not click.confirm(f"Revert the working tree to before iteration {iteration}?", default=False,
                             prompt_suffix=" "):
            click.echo("Revert cancelled; nothing changed.")
            sys.exit(1)
    result = revert_to_checkpoint(root, run.checkpoints, iteration)
    click.echo(describe_result(result))


def _drop_stage_commits(root: Path, run_id: str, checkpoints: Path, plan: RevertPlan, yes: bool) -> RevertPlan:
    """HEAD moved since the checkpoint: when only this run's stage commits (`--finish`) moved it, `--yes`
    moves the branch back to the checkpoint's commit (naming what it drops); anything else is refused."""
    base, head = plan.checkpoint_head, plan.current_head
    commits = loop_commits_between(root, base, head, run_id)
    if commits is None or base is None or head is None:
        raise CheckpointError(
            f"HEAD moved since checkpoint {plan.iteration} ({base or 'no commit'} -> {head or 'no commit'}): "
            "something committed during the run; refusing to revert.")
    dropped = "\n".join(f"  x {line}" for line in commits)
    if not yes:
        raise CheckpointError(
            f"reverting to before iteration {plan.iteration} drops {len(commits)} commit(s) the loop made for "
            f"finished stages:\n{dropped}\npass --yes to move the branch back and drop them (git's reflog "
            "keeps them)")
    move_branch_back(root, base, head)
    click.echo(f"Moved the branch back to {base[:12]}, dropping {len(commits)} stage commit(s) "
               f"(git's reflog keeps them):\n{dropped}")
    return plan_revert(root, checkpoints, plan.iteration)
