"""What a command wrapper runs: the `Unwrapped` result every wrapper handler returns.

A handler (`Unwrap`) takes the wrapper's arguments and says what they run: an argv, a shell
string, or stdin; `NOEXEC` when this use runs nothing (`sudo -l`, `tmux ls`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple


class Unwrapped(NamedTuple):
    argv: list[str]
    chdir: str | None = None
    script: str | None = None
    env: Mapping[str, str | None] = MappingProxyType({})
    xargs_replace: str | None = None
    noexec: bool = False
    reads_stdin: bool = False
    """The wrapper runs the shell code it reads on stdin (`at now`, `batch`)."""
    remote: str | None = None
    """The code runs on another machine (`ssh host …`)."""
    local_scripts: tuple[str, ...] = ()
    """Extra shell strings the wrapper itself runs here (`ssh -o ProxyCommand=…`)."""


NOEXEC = Unwrapped([], noexec=True)
Unwrap = Callable[[list[str]], "Unwrapped | None"]
