"""`kilo-loop init`'s decisions as data: what the user chose, the config.json it becomes, which files
it would replace, and the command that starts the first real run. Pure: the command module asks and
writes."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kilo_loop.agent.registry import RUNTIMES

# The order `init` offers the runtimes in, and picks the first installed one from.
PREFERENCE = ("kilo", "opencode", "claude", "codex", "gemini", "cursor")


@dataclass(frozen=True)
class Choices:
    runtime: str
    model: str | None = None
    max_cost: float | None = None
    dashboard: bool = True
    plan: str | None = None  # a short description: the first plan's title


def default_runtime(installed: list[str]) -> str:
    """The first installed CLI in PREFERENCE order; kilo when none is."""
    return next((name for name in PREFERENCE if name in installed), "kilo")


def config_document(choices: Choices, existing: dict[str, Any] | None = None) -> dict[str, Any]:
    """config.json: the existing keys (under --force) with the chosen ones written over them."""
    document = dict(existing or {})
    document["runtime"] = choices.runtime
    for key, value in (("model", choices.model), ("maxCost", choices.max_cost)):
        if value is None:
            document.pop(key, None)
        else:
            document[key] = value
    document["dashboard"] = choices.dashboard
    return document


def install_hint(runtime: str) -> str:
    return RUNTIMES[runtime].install


def first_run_command(plan: str | None, project: Path, cwd: Path, runtime: str, as_root: bool,
                      environ_sandbox: bool) -> str:
    """The command line to paste: the plan (or an inline goal), `-C` when run from elsewhere, and
    Claude Code's sandbox variable when root needs it."""
    words = ["kilo-loop"]
    if project.resolve() != cwd.resolve():
        words += ["-C", str(project)]
    words += ["--goal", plan] if plan else ["--goal-text", "Describe the change you want here"]
    prefix = "IS_SANDBOX=1 " if runtime == "claude" and as_root and not environ_sandbox else ""
    return prefix + shlex.join(words)


def conflicts(paths: list[Path], force: bool) -> list[Path]:
    """The files `init` would replace; each one stops it unless --force."""
    return [] if force else [path for path in paths if path.exists()]
