"""Saved runs as the dashboard reads them from disk: the list, one run's state paged by
iteration (from `iterations/NN-report.json`), its log tail, reports and checkpoints.

Everything read here is passed through the caller's redactor before it is sent, and every
run id goes through `valid_run_id` (via `resolve_run`) before it becomes a path.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson

from kilo_loop.checkpoint.store import CheckpointError, list_checkpoints, read_checkpoint_patch
from kilo_loop.run.layout import ProjectLayout, RunLayout, valid_run_id
from kilo_loop.run.report import run_report_md
from kilo_loop.run.state import RunState
from kilo_loop.run.store import RunNotFound, list_run_dirs, read_log_lines, resolve_run
from kilo_loop.settings import Settings
from kilo_loop.web.snapshot import slim_event

MAX_LISTED_RUNS = 200
MAX_PAGE = 200
DEFAULT_PAGE = 50
LOG_LINES = 300
MAX_PATCH_BYTES = 2 * 1024 * 1024
MAX_REPORT_BYTES = 4 * 1024 * 1024
MAX_STATE_BYTES = 64 * 1024 * 1024
_SUMMARY_KEYS = (
    "runId",
    "status",
    "goalTitle",
    "goalSource",
    "iteration",
    "maxIterations",
    "lastPercent",
    "startedAt",
    "finishedAt",
    "dryRun",
    "runtime",
    "agent",
    "stopReason",
)

Redact = Callable[[Any], Any]


def find_run(project: ProjectLayout, run_id: str) -> RunLayout:
    """A saved run by id (`last`/`latest` too); RunNotFound for anything else."""
    if run_id not in {"last", "latest"} and not valid_run_id(run_id):
        raise RunNotFound(f"invalid run id {run_id!r}")
    return resolve_run(project, run_id)


def read_state_wire(run: RunLayout) -> dict[str, Any]:
    try:
        if run.state.stat().st_size > MAX_STATE_BYTES:
            raise RunNotFound(f"state.json of run {run.run_id} is too large to load")
        data = orjson.loads(run.state.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise RunNotFound(f"cannot read the state of run {run.run_id}: {exc}") from exc
    if not isinstance(data, dict):
        raise RunNotFound(f"the state of run {run.run_id} is not a JSON object")
    return data


def read_state(run: RunLayout) -> RunState:
    try:
        return RunState.model_validate(read_state_wire(run))
    except ValueError as exc:
        raise RunNotFound(f"the state of run {run.run_id} cannot be read: {exc}") from exc


def duration_ms(started: Any, finished: Any) -> int | None:
    """Milliseconds between two ISO timestamps; None when either is missing or unreadable."""
    try:
        start = datetime.fromisoformat(str(started))
        end = datetime.fromisoformat(str(finished))
    except ValueError:
        return None
    if (start.tzinfo is None) != (end.tzinfo is None):
        return None
    return max(0, round((end - start).total_seconds() * 1000))


def run_summary(state: dict[str, Any]) -> dict[str, Any]:
    summary = {key: state.get(key) for key in _SUMMARY_KEYS}
    totals = state.get("totals")
    summary["tokens"] = totals.get("tokens", 0) if isinstance(totals, dict) else 0
    summary["cost"] = totals.get("cost", 0.0) if isinstance(totals, dict) else 0.0
    summary["iterationsTotal"] = len(known_iterations(state))
    stages, completed = state.get("stages"), state.get("completedStages")
    summary["stagesTotal"] = len(stages) if isinstance(stages, list) else 0
    summary["stagesDone"] = len(completed) if isinstance(completed, list) else 0
    summary["durationMs"] = duration_ms(state.get("startedAt"), state.get("finishedAt"))
    return summary


def budget_of(settings: Settings) -> dict[str, Any]:
    """The limits a run's chart draws its budget lines at (null: no limit)."""
    return {"maxCost": settings.max_cost, "maxTokens": settings.max_tokens, "maxIterations": settings.iterations}


def known_iterations(state: dict[str, Any]) -> list[Any]:
    """One entry per iteration of the run, oldest first. state.json keeps only the newest; an older
    one is a stub `{"iteration": n}` here, filled from its NN-report.json when a page is read."""
    raw = state.get("iterations")
    items = [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []
    total = state.get("iterationsTotal")
    total = max(total if isinstance(total, int) else 0, len(items))
    if total == len(items):
        return items
    by_number = {item.get("iteration"): item for item in items}
    return [by_number.get(number, {"iteration": number}) for number in range(1, total + 1)]


def list_runs(project: ProjectLayout, redact: Redact) -> list[dict[str, Any]]:
    """The newest saved runs first, one summary each (unreadable runs are skipped)."""
    found: list[dict[str, Any]] = []
    for run in list_run_dirs(project)[:MAX_LISTED_RUNS]:
        try:
            found.append(run_summary(read_state_wire(run)))
        except RunNotFound:
            continue
    return list(redact(found))


def page_bounds(total: int, offset: int | None, limit: int | None) -> tuple[int, int]:
    """(start, end) positions of a page; without an offset, the newest page."""
    size = min(max(limit if limit is not None else DEFAULT_PAGE, 1), MAX_PAGE)
    start = max(total - size, 0) if offset is None else min(max(offset, 0), total)
    return start, min(start + size, total)


def read_iteration_report(run: RunLayout, iteration: int) -> dict[str, Any] | None:
    try:
        data = orjson.loads(run.iteration_file(iteration, "report.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("iteration") == iteration else None


def page_iterations(run: RunLayout, known: list[Any], start: int, end: int) -> list[dict[str, Any]]:
    """Iterations at positions [start, end): each from its NN-report.json, else as the state has it."""
    page: list[dict[str, Any]] = []
    for entry in known[start:end]:
        if not isinstance(entry, dict):
            continue
        number = entry.get("iteration")
        from_disk = read_iteration_report(run, number) if isinstance(number, int) and number >= 1 else None
        page.append(from_disk or entry)
    return page


def log_tail(run: RunLayout, lines: int = LOG_LINES) -> list[dict[str, Any]]:
    return [slim_event(event) for event in deque(read_log_lines(run.events), maxlen=lines)]


def iteration_report_md(run: RunLayout, iteration: int) -> str:
    path = run.iteration_file(iteration, "report.md")
    try:
        data = path.read_bytes()[:MAX_REPORT_BYTES]
    except OSError:
        raise RunNotFound(f"no report for iteration {iteration} in run {run.run_id}") from None
    return data.decode("utf-8", errors="replace")


def run_report(run: RunLayout, state: RunState | None) -> str:
    """report.md as written at the end of the run; while it runs, built from the live state."""
    try:
        return run.report.read_bytes()[:MAX_REPORT_BYTES].decode("utf-8", errors="replace")
    except OSError:
        pass
    if state is None:
        state = RunState.model_validate(read_state_wire(run))
    return run_report_md(state)


def checkpoint_list(run: RunLayout) -> list[dict[str, Any]]:
    return [
        {
            "iteration": cp.iteration,
            "head": cp.head,
            "createdAt": cp.created_at,
            "patchBytes": cp.patch_bytes,
            "dirty": cp.dirty,
            "untracked": len(cp.untracked),
            "changed": len(cp.changed),
        }
        for cp in list_checkpoints(run.checkpoints)
    ]


def checkpoint_patch(run: RunLayout, iteration: int) -> str:
    try:
        text = read_checkpoint_patch(run.checkpoints, iteration)
    except CheckpointError as exc:
        raise RunNotFound(str(exc)) from exc
    if len(text) > MAX_PATCH_BYTES:
        text = text[:MAX_PATCH_BYTES] + f"\n… (patch truncated at {MAX_PATCH_BYTES} bytes)\n"
    return text
