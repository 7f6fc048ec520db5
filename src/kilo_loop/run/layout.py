"""Where everything lives under `<project>/.kilocode-loop/` (the seed's layout).

The layouts are NamedTuples, not dataclasses: `kilo_loop.git` imports this module, and the guard's
pre-tool hook imports `kilo_loop.git` on every agent tool call (dataclasses costs ~8 ms to import).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

LOOP_DIR = ".kilocode-loop"
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_IGNORED = ("runs/", "trash/", "worktrees/", "progress.json", "answers.json", "handoff.md", "review.json",
            "review-*.json", "ledger/", ".gitignore")
_GITIGNORE = "# kilo-loop working files (goals/ and config.json may be committed)\n" + "".join(f"{p}\n" for p in _IGNORED)


def valid_run_id(run_id: str) -> bool:
    return bool(RUN_ID_PATTERN.fullmatch(run_id)) and run_id not in {".", ".."}


class ProjectLayout(NamedTuple):
    project: Path

    @property
    def root(self) -> Path:
        return self.project / LOOP_DIR

    @property
    def progress(self) -> Path:
        return self.root / "progress.json"

    @property
    def answers(self) -> Path:
        return self.root / "answers.json"

    @property
    def handoff(self) -> Path:
        return self.root / "handoff.md"

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    def run(self, run_id: str) -> RunLayout:
        if not valid_run_id(run_id):
            raise ValueError(f"invalid run id {run_id!r}: use letters, digits, '.', '_' or '-'")
        return RunLayout(self.runs / run_id)

    def ensure(self) -> None:
        self.runs.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text(_GITIGNORE, encoding="utf-8")
            return
        # A file written by an older version gains the entries added since (e.g. worktrees/).
        lines = ignore.read_text(encoding="utf-8").splitlines()
        missing = [entry for entry in _IGNORED if entry not in lines]
        if missing:
            ignore.write_text("\n".join([*lines, *missing]) + "\n", encoding="utf-8")


class RunLayout(NamedTuple):
    dir: Path

    @property
    def run_id(self) -> str:
        return self.dir.name

    @property
    def state(self) -> Path:
        return self.dir / "state.json"

    @property
    def events(self) -> Path:
        return self.dir / "events.jsonl"

    @property
    def report(self) -> Path:
        return self.dir / "report.md"

    @property
    def iterations(self) -> Path:
        return self.dir / "iterations"

    @property
    def checkpoints(self) -> Path:
        return self.dir / "checkpoints"

    @property
    def handoff_pending(self) -> Path:
        """The handoff packet the next fresh session gets (moved here from the project, redacted)."""
        return self.dir / "handoff-pending.md"

    def iteration_file(self, iteration: int, suffix: str) -> Path:
        return self.iterations / f"{iteration:02d}-{suffix}"

    def ensure(self) -> None:
        self.iterations.mkdir(parents=True, exist_ok=True)
        self.checkpoints.mkdir(parents=True, exist_ok=True)
