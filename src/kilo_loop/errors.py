"""The root of kilo-loop's user-facing errors and the exit code each one ends the CLI with.

Every error a person should read (bad config, bad goal, no repository, no such run, a checkpoint
that cannot be reverted to) derives from `KiloLoopError`; the CLI turns any of them into
`kilo-loop: <message>` on stderr and `exit_code`, in one place (`kilo_loop.cli.LazyGroup.invoke`).
The codes stay the seed's: 1 for a failure, 2 for a usage or set-up problem (nothing was started).
This module imports nothing, so the cheapest command can raise and catch these.
"""

from __future__ import annotations

from typing import ClassVar

EXIT_FAILURE = 1
EXIT_USAGE = 2


class KiloLoopError(Exception):
    """A problem the user can act on; the message says what and, where it can, what to do."""

    exit_code: ClassVar[int] = EXIT_FAILURE
    label: ClassVar[str] = ""  # what the CLI puts before the message ("goal error"), if anything

    def headline(self) -> str:
        """The one line the CLI prints (after `kilo-loop: `)."""
        return f"{self.label}: {self}" if self.label else str(self)


class UsageError(KiloLoopError):
    """Found before anything was started: wrong flags, config, goal or project."""

    exit_code: ClassVar[int] = EXIT_USAGE


class ConfigError(UsageError, ValueError):
    """A wrong value in the config file or environment; the message names the source and key."""


def report_error(exc: KiloLoopError) -> int:
    """The one place a user-facing error becomes output and an exit code (its class carries the code):
    every command run through `cli.main` ends here, and so does a run's set-up in `run_main`."""
    import click  # here, not at the top: this module stays free of imports for the cheapest commands

    click.echo(f"kilo-loop: {exc.headline()}", err=True)
    return exc.exit_code
