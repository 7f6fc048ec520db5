"""Before a parallel plan's result lands: its verify commands, run on the merged result (the operator's
tree with the plan's changes merged in), in the jail like any verify. A plan that passed on its own base
can fail once merged with what landed before it; then it is `needs-merge`, never "done" with a broken tree."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from kilo_loop.fleet.worktree import MergedCheck
from kilo_loop.goal.parse import load_goal
from kilo_loop.sandbox.setup import run_jail
from kilo_loop.verify import run_verify


def plan_verify_commands(goal: Path, global_verify: str | None) -> list[str]:
    """Each distinct verify command of the plan's stages (a stage without one uses the global one)."""
    commands: list[str] = []
    for stage in load_goal(goal).stages:
        command = (stage.verify or global_verify or "").strip()
        if command and command not in commands:
            commands.append(command)
    return commands


def verify_on_merge(commands: Sequence[str], sandbox: str, timeout_s: float,
                    warn: Callable[[str], None]) -> MergedCheck | None:
    """The check `offer_result` runs on the merged tree; None when the plan has nothing to verify."""
    if not commands:
        return None

    def check(tree: Path) -> str | None:
        jail = run_jail(sandbox, False, tree, (), None, None, warn)
        for command in commands:
            result = asyncio.run(run_verify(command, tree, timeout_s, jail=jail))
            if not result.passed:
                why = "timed out" if result.timed_out else f"exit {result.exit_code}"
                tail = result.output_tail.strip().splitlines()[-3:]
                return f"verify `{command}` failed on the merged result ({why})" + (
                    ": " + " / ".join(tail) if tail else "")
        return None

    return check
