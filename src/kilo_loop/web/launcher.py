"""The launcher's plan operations: list plans with their state, set verify commands (per stage
in the goal file, or once for every run in .kilocode-loop/config.json), mark a plan done or
reopen it, move it to the trash, and turn a start request into run settings.

A client-supplied plan name becomes a path only through `resolve_plan_file`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kilo_loop.goal.registry import discover_plans, named_plans, resolve_plan_file, trash_plan
from kilo_loop.goal.sync import set_all_done, set_stage_verify
from kilo_loop.project_config import config_path, read_project_config
from kilo_loop.run.files import write_json_atomic
from kilo_loop.settings import Settings
from kilo_loop.web.schemas import StartRequest

# Keys of config.json that hold the default verify (ours and the original tool's).
VERIFY_KEYS = ("verify", "defaultVerify", "default_verify")


def config_verify(config: dict[str, Any]) -> str | None:
    for key in VERIFY_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def with_global_verify(config: dict[str, Any], verify: str) -> dict[str, Any]:
    """`config` with its default verify set to `verify` (removed when empty); other keys kept."""
    updated = {key: value for key, value in config.items() if key not in VERIFY_KEYS[1:]}
    command = verify.strip()
    if command:
        updated["verify"] = command
    else:
        updated.pop("verify", None)
    return updated


def set_global_verify(project: Path, verify: str) -> str | None:
    """Write the default verify into config.json atomically; returns the command now in force."""
    updated = with_global_verify(read_project_config(project), verify)
    write_json_atomic(config_path(project), updated)
    return config_verify(updated)


def list_goals(project: Path, named: Path | None = None) -> list[dict[str, Any]]:
    """The discovered plans, and the plan named with `--goal` when discovery does not look there
    (`examples/goal.example.md` in a clone), so the launcher can start it again."""
    plans = discover_plans(project)
    if named is not None and named.is_file():
        known = {(project / plan.file).resolve() for plan in plans}
        plans += [plan for plan in named_plans(project, [named]) if (project / plan.file).resolve() not in known]
    return [plan.wire() for plan in plans]


def resolve_plan(project: Path, file: str) -> Path:
    return resolve_plan_file(project, file).resolve()


def set_plan_verify(project: Path, file: str, stage_index: int | None, verify: str) -> None:
    set_stage_verify(resolve_plan_file(project, file), stage_index, verify)


def set_plan_done(project: Path, file: str, done: bool) -> int:
    return set_all_done(resolve_plan_file(project, file), done)


def trash(project: Path, file: str) -> str:
    """Move the plan to the trash; returns where it went, relative to the project."""
    target = trash_plan(project, file)
    try:
        return target.relative_to(project.resolve()).as_posix()
    except ValueError:
        return target.name


def run_settings(
    base: Settings, request: StartRequest, goal_path: Path, global_verify: str | None
) -> Settings:
    """The settings of a run started from the dashboard: the base settings with the request's choices.

    The custom instruction is not passed here: `prompt_extra` in settings may name a file, and a
    browser must not be able to make the loop read one (the caller sets it on the run's state).
    """
    update: dict[str, Any] = {"goal": goal_path, "goal_text": None, "resume": None, "run_id": None}
    if request.iterations is not None:
        update["iterations"] = request.iterations
    if request.agent is not None:
        update["agent"] = request.agent.strip() or None
    if request.hitl is not None:
        update["hitl"] = request.hitl
    if request.dry_run is not None:
        update["dry_run"] = request.dry_run
    if global_verify is not None:
        update["verify"] = global_verify or None
    update["force"] = request.force
    return base.model_copy(update=update)

