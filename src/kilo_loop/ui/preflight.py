"""The pre-flight confirmation: show the resolved scenario, ask before anything is created."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from kilo_loop.goal.model import Goal
from kilo_loop.review.preflight import review_row
from kilo_loop.sandbox.setup import preview as sandbox_preview
from kilo_loop.settings import Settings


def should_confirm(settings: Settings, stdin_fd: int | None = None, stdout_fd: int | None = None) -> bool:
    """Ask only on an interactive terminal, and only when neither --yes nor config said otherwise."""
    if not settings.confirm:
        return False
    fd_in = sys.stdin.fileno() if stdin_fd is None else stdin_fd
    fd_out = sys.stdout.fileno() if stdout_fd is None else stdout_fd
    try:
        return os.isatty(fd_in) and os.isatty(fd_out)
    except (OSError, ValueError):
        return False


def scenario_rows(settings: Settings, goal: Goal, project: Path, runtime: str, dashboard_url: str | None,
                  agent: str | None) -> list[tuple[str, str]]:
    context = "one shared session (growing context)" if settings.shared_context else \
        "fresh session per iteration (handoff)"
    mode = "dry run (simulated agent, no API calls)" if settings.dry_run else f"live ({runtime})"
    return [
        ("Goal", goal.title),
        ("Source", str(goal.source) if goal.source else "inline text"),
        ("Project", str(project)),
        ("Agent", agent or "(CLI default)"),
        ("Iterations", str(settings.iterations)),
        ("Context", context),
        ("HITL", settings.hitl),
        ("Auto-approve", "yes" if settings.auto else "no"),
        ("Dashboard", dashboard_url or "off"),
        ("Mode", mode),
        ("Sandbox", sandbox_preview(settings.sandbox, settings.dry_run,
                                    len({g for stage in goal.stages for g in goal.protected_for(stage)}),
                                    settings.sandbox_network)),
        *([row] if (row := review_row(settings, goal)) else []),
    ]


def render_preflight(console: Console, rows: list[tuple[str, str]], goal: Goal) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, value)
    console.print(Panel(table, title="About to run", title_align="left"))
    for number, stage in enumerate(goal.stages, 1):
        console.print(f"{number}. [{'x' if stage.done else ' '}] {stage.title}", markup=False, highlight=False)


def ask_start(read_line: Callable[[str], str]) -> bool:
    """Enter or y starts; anything else (including EOF) cancels."""
    try:
        reply = read_line("Start this run? [Y/n] ")
    except (EOFError, KeyboardInterrupt):
        return False
    return reply.strip().lower() in ("", "y", "yes")
