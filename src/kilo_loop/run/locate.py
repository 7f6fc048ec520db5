"""Finding a saved run under `.kilocode-loop/runs/`: by id, or `last` for the newest. Light on purpose (no
pydantic, no state model): `kilo-loop note` and `kilo-loop watch` find a run with it and load nothing else."""

from __future__ import annotations

from kilo_loop.errors import KiloLoopError
from kilo_loop.run.layout import ProjectLayout, RunLayout, valid_run_id


class RunNotFound(KiloLoopError, LookupError):
    """No saved run by that id (or no run at all)."""


def list_run_dirs(layout: ProjectLayout) -> list[RunLayout]:
    """Saved runs, newest first (by state.json modification time)."""
    if not layout.runs.is_dir():
        return []
    runs = [RunLayout(d) for d in layout.runs.iterdir() if d.is_dir() and (d / "state.json").is_file()]
    return sorted(runs, key=lambda run: run.state.stat().st_mtime_ns, reverse=True)


def resolve_run(layout: ProjectLayout, run_id: str) -> RunLayout:
    """A run id, or `last` / `latest` for the most recent saved run."""
    if run_id in {"last", "latest"}:
        runs = list_run_dirs(layout)
        if not runs:
            raise RunNotFound(f"no saved runs under {layout.runs}")
        return runs[0]
    if not valid_run_id(run_id):
        raise RunNotFound(f"invalid run id {run_id!r}")
    run = layout.run(run_id)
    if not run.state.is_file():
        raise RunNotFound(f"no saved run {run_id!r} under {layout.runs}")
    return run
