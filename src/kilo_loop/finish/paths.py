"""Which changed paths belong to a finished stage: what differs from HEAD now, less what was already
dirty when the run began (the user's own work in progress) and less the loop's own files. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kilo_loop.run.layout import LOOP_DIR


@dataclass(frozen=True)
class StagePaths:
    commit: tuple[str, ...]  # the stage's own changes
    left_out: tuple[str, ...]  # changed now, but already dirty before the run: not the stage's to commit


def stage_paths(changed: Iterable[str], dirty_at_start: Iterable[str], loop_files: Iterable[str]) -> StagePaths:
    """Split `changed` (paths relative to the work tree, `/`-separated) into what the stage commits and
    what it leaves out; the loop's files (`.kilocode-loop/`, the goal file) are neither."""
    before, own = set(dirty_at_start), set(loop_files)
    commit: list[str] = []
    left_out: list[str] = []
    for path in sorted(set(changed)):
        if path in own or path == LOOP_DIR or path.startswith(LOOP_DIR + "/"):
            continue
        (left_out if path in before else commit).append(path)
    return StagePaths(tuple(commit), tuple(left_out))
