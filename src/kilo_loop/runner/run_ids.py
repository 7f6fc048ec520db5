"""Run ids: the time the run started and the process, unique within the project's runs."""

from __future__ import annotations

import os
import time

from kilo_loop.run.layout import ProjectLayout


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid() % 10000:04d}"


def unused_run_id(layout: ProjectLayout) -> str:
    """A new run id; two runs started within the same second get distinct ones."""
    base = new_run_id()
    candidate, n = base, 1
    while (layout.runs / candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate
