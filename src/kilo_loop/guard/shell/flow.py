"""What the shell knows between commands: working directories and variables, joined the way
bash's `&&`, `||` and `;` let commands run or be skipped."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

from kilo_loop.guard.shell.model import READ, UNKNOWN, normalize_path


def chdir(cwd: str | None, target: str, cdpath: bool = False) -> str | None:
    """The directory `cd target` leads to from `cwd`, or None when it cannot be known.

    With a CDPATH in force a relative target not starting with `./` or `../` may land anywhere."""
    if not target or UNKNOWN in target:
        return None
    if target.startswith("/"):
        return normalize_path(target)
    if cwd is None or (cdpath and not target.startswith(("./", "../")) and target not in (".", "..")):
        return None
    return normalize_path(posixpath.join(cwd, target))


class State(NamedTuple):
    """What the shell knows at one point: possible working directories and assigned variables.

    A variable mapped to None was assigned a value that cannot be known; an absent
    variable comes from the environment.
    """

    cwds: frozenset[str | None]
    vars: Mapping[str, str | None] = MappingProxyType({})

    def join(self, other: State) -> State:
        if other is self:
            return self
        merged: dict[str, str | None] = {}
        for name in set(self.vars) | set(other.vars):
            mine, theirs = self.vars.get(name, UNKNOWN), other.vars.get(name, UNKNOWN)
            # a value that may have been read from stdin stays so (rm "$f" after `read f` is judged as data)
            merged[name] = mine if mine == theirs and mine != UNKNOWN else READ if READ in (mine, theirs) else None
        return State(self.cwds | other.cwds, merged)

    def with_var(self, name: str, value: str | None) -> State:
        return State(self.cwds, {**self.vars, name: value})

    def with_cwds(self, cwds: frozenset[str | None]) -> State:
        return State(cwds, self.vars)

    def child_shell(self, env: Mapping[str, str | None]) -> State:
        """A new shell process: unexported variables are gone, so every known one becomes unknown
        (IFS and CDPATH keep their taint: a child may inherit them)."""
        return State(self.cwds, {**{name: None for name in self.vars}, **env})


Flow = tuple[State, State]
"""The state after a command succeeded, and after it failed (or was skipped)."""
Step = Callable[[State], Flow]
Outcome = tuple[State, State, str | None]
"""A command's flow, plus what it prints when that is plain data (for `echo … | sh`)."""


def fold(items: Sequence[tuple[str | None, Step]], state: State) -> Flow:
    """Run `op step` items left to right with bash's `&&`, `||` and `;` semantics."""
    succ = fail = state
    for index, (op, step) in enumerate(items):
        if index == 0:
            succ, fail = step(state)
        elif op == "&&":
            s, f = step(succ)
            succ, fail = s, fail.join(f)
        elif op == "||":
            s, f = step(fail)
            succ, fail = succ.join(s), f
        else:
            succ, fail = step(succ.join(fail))
    return succ, fail
