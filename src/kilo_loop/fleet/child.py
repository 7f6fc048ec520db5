"""One plan as its own `kilo-loop` process: the command line it gets, and the flags of the
parent's command line that belong to the parent (goals, parallelism, the dashboard) and not to it."""

from __future__ import annotations

import contextlib
import ctypes
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from kilo_loop.run.controls import INBOX_ENV as INBOX_ENV

_PR_SET_PDEATHSIG = 1

# The parent's own flags: with a value, and without.
_VALUED = {"--goal", "--goal-text", "--parallel", "--merge", "-C", "--project", "--run-id", "--resume",
           "-p", "--port", "--host", "--keep-open-for", "--broker", "--repo", "--ref"}
_BARE = {"--lan", "--local", "--keep-open", "--dashboard", "--no-dashboard", "--no-confirm", "--yes", "--quiet",
         "--list-goals", "--push-branch", "--keep-branches"}


def plan_flags(argv: Sequence[str]) -> list[str]:
    """The run flags to hand every plan: the parent's argv without its own flags."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _BARE:
            continue
        if name in _VALUED:
            skip = "=" not in arg
            continue
        if re.fullmatch(r"-[Cp].+", arg):  # -C/path, -p8000 glued to their value
            continue
        kept.append(arg)
    return kept


def parent_only_flags(argv: Sequence[str]) -> list[str]:
    """The flags `plan_flags` leaves out of a plan's command line, by name, in the order typed."""
    kept = set(plan_flags(argv))
    names = [arg.split("=", 1)[0] for arg in argv if arg not in kept and arg.startswith("-")]
    return list(dict.fromkeys(name if name in _VALUED | _BARE else name[:2] for name in names))


def child_argv(goal: str, project: Path, run_id: str, flags: Sequence[str], resume: bool = False) -> list[str]:
    """A plan's process: quiet, no dashboard and no confirmation (the parent shows and steers it)."""
    argv = [sys.executable, "-m", "kilo_loop", "--goal", goal, "-C", str(project),
            "--no-dashboard", "--no-confirm", "--quiet"]
    argv += ["--resume", run_id] if resume else ["--run-id", run_id]
    return argv + list(flags)


def plan_label(goal: Path, taken: set[str]) -> str:
    """A short, unique, run-id-safe name for a plan (its file's stem)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", goal.stem).strip("-.") or "plan"
    label, n = base[:40], 2
    while label in taken:
        label, n = f"{base[:36]}-{n}", n + 1
    taken.add(label)
    return label


def die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """The plan's process gets SIGTERM (a clean, resumable stop) when its parent — the parallel
    runner or a fleet worker — dies, even by kill -9: no plan is left running with nobody to steer it."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
