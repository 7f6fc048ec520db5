"""The `kilo-loop` command (and `python -m kilo_loop`).

`guard check` and `guard hook` run before agent tool calls, often once per call, so the command
lines they are given are answered without importing Click (`commands/guard_fast.py`); every other
command line goes to the Click CLI in `kilo_loop.cli`.
"""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["guard"]:
        from kilo_loop.commands.guard_fast import run

        code = run(args[1:])
        if code is not None:
            sys.exit(code)
    from kilo_loop.cli import main as cli_main

    cli_main()
