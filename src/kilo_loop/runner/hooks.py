"""The loop's I/O hooks into the safety modules: checkpoint, verify, tick the goal file."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from kilo_loop.checkpoint.store import (
    capture_checkpoint,
)
from kilo_loop.gitstatus import TreeStatus
from kilo_loop.goal.model import Goal, GoalError, Stage
from kilo_loop.goal.sync import mark_stage_done
from kilo_loop.run.state import VerifyResult
from kilo_loop.sandbox.jail import Jail
from kilo_loop.verify import run_verify


class SafetyHooks:
    def __init__(self, redact: Callable[[str], str], jail: Jail | None = None) -> None:
        self._redact = redact
        self._jail = jail

    async def checkpoint(self, project: Path, checkpoints_dir: Path, iteration: int,
                         status: TreeStatus | None = None) -> str:
        cp = await asyncio.to_thread(capture_checkpoint, project, checkpoints_dir, iteration, status)
        note = f"HEAD {str(cp.head or 'none')[:10]}, {len(cp.untracked)} untracked, patch {cp.patch_bytes} bytes"
        if cp.untracked_left_out:  # a revert cannot bring these back: say which
            shown = ", ".join(cp.untracked_left_out[:5]) + (" …" if len(cp.untracked_left_out) > 5 else "")
            note += f"; {len(cp.untracked_left_out)} untracked file(s) too large to keep: {shown}"
        return note

    async def verify(self, command: str, cwd: Path, timeout_s: float) -> VerifyResult:
        return await run_verify(command, cwd, timeout_s, self._redact, jail=self._jail)

    def sync_markdown(self, goal: Goal, stage: Stage) -> bool:
        try:
            # Not fsynced: the loop fsyncs state.json (which records the stage done) right after, which
            # commits the file system's journal with this rename; a kill -9 cannot tear either.
            return mark_stage_done(goal, stage, True, durable=False)
        except GoalError:
            return False  # the plan was moved or made read-only mid-run; the caller warns
