"""The plans a project offers: discovery, their state, safe lookup by name, and trashing.

Plans live in fixed places under the project:

- `.kilocode-loop/goals/**` — JSON and markdown goals (a broken one is listed with its error);
- `.kilocode-loop/goal.json`, `.kilocode-loop/goal.md` — the legacy single goal;
- `plans/**` and `.kilo/plans/**` — markdown files that contain at least one `- [ ]` item.

Hidden files and directories below those roots, files over 1 MB, unreadable files and
symlinks that lead outside the project are skipped; symlinked directories are not entered.
`resolve_plan_file` is the only way a client-supplied plan name becomes a path.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import orjson
from pydantic import Field

from kilo_loop.goal.model import Goal, GoalError
from kilo_loop.goal.parse import (
    JSON_SUFFIXES,
    MARKDOWN_SUFFIXES,
    iter_items,
    parse_json_goal,
    parse_markdown_goal,
    read_goal_text,
    split_lines,
)
from kilo_loop.run.layout import LOOP_DIR, ProjectLayout
from kilo_loop.run.state import WireModel
from kilo_loop.run.store import list_run_dirs

MAX_PLAN_BYTES = 1024 * 1024
MAX_PLAN_FILES = 2000
MAX_SCANNED_FILES = 20000
MAX_STATE_BYTES = 64 * 1024 * 1024
GOALS_ROOT = (LOOP_DIR, "goals")
LEGACY_GOALS = ((LOOP_DIR, "goal.json"), (LOOP_DIR, "goal.md"))
CHECKLIST_ROOTS = (("plans",), (".kilo", "plans"))
TRASH_DIR = (LOOP_DIR, "trash")
SEARCHED_LOCATIONS = (
    f"{LOOP_DIR}/goals/**/*.json, *.md",
    f"{LOOP_DIR}/goal.json, {LOOP_DIR}/goal.md",
    "plans/**/*.md with '- [ ]' items",
    ".kilo/plans/**/*.md with '- [ ]' items",
)

PlanType = Literal["json", "markdown"]


class PlanStage(WireModel):
    index: int
    id: str
    title: str
    done: bool
    verify: str | None = None


class LastRun(WireModel):
    run_id: str
    status: str
    iterations: int = 0
    cost: float = 0.0
    finished_at: str | None = None


class PlanInfo(WireModel):
    file: str  # relative to the project, posix separators
    title: str
    type: PlanType
    done: int = 0
    total: int = 0
    percent: int = 0
    stages: list[PlanStage] = Field(default_factory=list)
    verify: str | None = None  # a JSON goal's plan-wide verify
    error: str | None = None
    last_run: LastRun | None = None


# ---------------------------------------------------------------- locations (pure)


def _plan_type(name: str) -> PlanType | None:
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in JSON_SUFFIXES:
        return "json"
    return None


def is_plan_location(parts: tuple[str, ...]) -> bool:
    """Whether a project-relative path (split into parts) is somewhere a plan may live."""
    if parts in LEGACY_GOALS:
        return True
    kind = _plan_type(parts[-1]) if parts else None
    for root, kinds in ((GOALS_ROOT, {"json", "markdown"}), *((r, {"markdown"}) for r in CHECKLIST_ROOTS)):
        below = parts[len(root) :]
        if parts[: len(root)] == root and below and kind in kinds:
            return not any(part.startswith(".") for part in below)
    return False


def needs_checklist(parts: tuple[str, ...]) -> bool:
    return any(parts[: len(root)] == root for root in CHECKLIST_ROOTS)


def _clean_relative(file: str) -> tuple[str, ...]:
    """Split a client-supplied relative path, rejecting anything that could point elsewhere."""
    if not file or not file.strip():
        raise GoalError("no plan file given: pass a path like plans/my-plan.md")
    if "\0" in file:
        raise GoalError("the plan file name contains a NUL byte")
    if "\\" in file:
        raise GoalError(f"use '/' in plan paths, not '\\': {file!r}")
    pure = PurePosixPath(file)
    if pure.is_absolute() or (len(file) > 1 and file[1] == ":"):
        raise GoalError(f"plan paths are relative to the project, not absolute: {file!r}")
    parts = tuple(part for part in pure.parts if part != ".")
    if ".." in parts:
        raise GoalError(f"plan paths may not contain '..': {file!r}")
    if not is_plan_location(parts):
        raise GoalError(f"{file!r} is not a plan location: plans live under " + "; ".join(SEARCHED_LOCATIONS))
    return parts


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop on older Pythons
        return False


def resolve_plan_file(project: Path, file: str) -> Path:
    """The path of a plan named relative to the project; GoalError unless it is a plan location
    that exists as a regular file inside the project (after following symlinks)."""
    parts = _clean_relative(file)
    root = project.resolve()
    path = root.joinpath(*parts)
    if not _inside(path, root):
        raise GoalError(f"{file!r} leads outside the project (symlink): refusing to use it")
    if not path.is_file():
        raise GoalError(f"no plan file {file!r} in {root}: refresh the plan list")
    return path


# ---------------------------------------------------------------- discovery (I/O)


def _walk(root: Path) -> Iterator[Path]:
    """Files below `root`, sorted, skipping hidden entries and not entering symlinked directories."""
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(name for name in dirnames if not name.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(directory, name)


def _candidate_paths(project: Path) -> Iterator[Path]:
    for parts in LEGACY_GOALS:
        yield project.joinpath(*parts)
    for root_parts in (GOALS_ROOT, *CHECKLIST_ROOTS):
        root = project.joinpath(*root_parts)
        if root.is_dir() and _inside(root, project):
            yield from _walk(root)


def _read_small(path: Path, project: Path) -> str | None:
    """The text of a regular file inside the project up to MAX_PLAN_BYTES, else None."""
    try:
        if not path.is_file() or not _inside(path, project) or path.stat().st_size > MAX_PLAN_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _parse(text: str, path: Path, kind: PlanType) -> Goal:
    if kind == "json":
        return parse_json_goal(text, path)
    return parse_markdown_goal(text, path)


def _error_text(exc: GoalError) -> str:
    return f"line {exc.line}: {exc.message}" if exc.line is not None else exc.message


def plan_info(file: str, path: Path, text: str, kind: PlanType) -> PlanInfo:
    """Summarise one plan file's content (a parse error becomes `error`)."""
    try:
        goal = _parse(text, path, kind)
    except GoalError as exc:
        return PlanInfo(file=file, title=path.stem, type=kind, error=_error_text(exc))
    stages = [
        PlanStage(index=index, id=stage.id, title=stage.title, done=stage.done, verify=stage.verify)
        for index, stage in enumerate(goal.stages)
    ]
    done = sum(stage.done for stage in stages)
    total = len(stages)
    return PlanInfo(file=file, title=goal.title, type=kind, done=done, total=total,
                    percent=done * 100 // total if total else 0, stages=stages, verify=goal.verify)


def discover_plans(project: Path) -> list[PlanInfo]:
    """Every plan in the project with its completion and last run, in a stable order."""
    root = project.resolve()
    plans: dict[Path, PlanInfo] = {}
    for scanned, path in enumerate(_candidate_paths(root)):
        if len(plans) >= MAX_PLAN_FILES or scanned >= MAX_SCANNED_FILES:
            break
        parts = path.relative_to(root).parts
        kind = _plan_type(path.name)
        if kind is None or not is_plan_location(parts):
            continue
        text = _read_small(path, root)
        if text is None:
            continue
        if needs_checklist(parts) and next(iter_items(split_lines(text)), None) is None:
            continue
        real = path.resolve()
        if real not in plans:
            plans[real] = plan_info("/".join(parts), path, text, kind)
    _attach_last_runs(root, plans)
    return list(plans.values())


def named_plans(project: Path, files: list[Path]) -> list[PlanInfo]:
    """`--list-goals --goal FILE…`: the named files wherever they are (not only where discovery looks),
    each relative to the current directory, else to the project; one that cannot be read says why."""
    root = project.resolve()
    plans: dict[Path, PlanInfo] = {}
    for given in files:
        path = given.expanduser()
        if not path.is_absolute() and not path.exists() and (root / path).exists():
            path = root / path
        real = path.resolve()
        label = "/".join(real.relative_to(root).parts) if _inside(real, root) else str(given)
        kind = _plan_type(path.name) or "markdown"
        try:
            text = read_goal_text(real)
        except GoalError as exc:
            plans[real] = PlanInfo(file=label, title=path.stem, type=kind, error=_error_text(exc))
            continue
        plans.setdefault(real, plan_info(label, path, text, kind))
    _attach_last_runs(root, plans)
    return list(plans.values())


# ---------------------------------------------------------------- last runs


def _run_summary(state: Any, project: Path) -> tuple[Path, LastRun] | None:
    """(resolved goal path, summary) from a state.json document, or None if it lacks them."""
    if not isinstance(state, dict):
        return None
    source, run_id, status = state.get("goalSource"), state.get("runId"), state.get("status")
    if not (isinstance(source, str) and source and isinstance(run_id, str) and isinstance(status, str)):
        return None
    totals = state.get("totals")
    cost = totals.get("cost") if isinstance(totals, dict) else None
    iteration = state.get("iteration")
    finished = state.get("finishedAt")
    try:
        goal_path = (project / source).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return goal_path, LastRun(
        run_id=run_id, status=status,
        iterations=iteration if isinstance(iteration, int) and not isinstance(iteration, bool) else 0,
        cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0,
        finished_at=finished if isinstance(finished, str) else None,
    )


def _read_state(path: Path) -> Any:
    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            return None
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _attach_last_runs(project: Path, plans: dict[Path, PlanInfo]) -> None:
    """Give each plan the newest saved run (by state.json mtime) whose goalSource is that plan."""
    try:
        runs = list_run_dirs(ProjectLayout(project))
    except OSError:
        return
    waiting = set(plans)
    for run in runs:
        if not waiting:
            return
        summary = _run_summary(_read_state(run.state), project)
        if summary is not None and summary[0] in waiting:
            plans[summary[0]].last_run = summary[1]
            waiting.discard(summary[0])


# ---------------------------------------------------------------- trash


def trash_plan(project: Path, file: str, now: datetime | None = None) -> Path:
    """Move a plan to `.kilocode-loop/trash/<YYYYmmdd-HHMMSS>-<name>` (git-ignored) and return
    where it went."""
    source = resolve_plan_file(project, file)
    trash = project.resolve().joinpath(*TRASH_DIR)
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    try:
        trash.mkdir(parents=True, exist_ok=True)
        ignore = trash / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
        target = _free_name(trash, f"{stamp}-{source.name}")
        shutil.move(source, target)
    except OSError as exc:
        raise GoalError(f"cannot move {file!r} to the trash ({exc.strerror or exc})") from None
    return target


def _free_name(directory: Path, name: str) -> Path:
    target = directory / name
    counter = 1
    while target.exists() or target.is_symlink():
        stem, dot, suffix = name.rpartition(".")
        target = directory / (f"{stem}-{counter}{dot}{suffix}" if dot else f"{name}-{counter}")
        counter += 1
    return target
