"""`kilo-loop redact`: filter stdin to stdout through the secret redactor, line by line.

Streaming: every line is written and flushed as soon as it is read, so it works in the middle of
a pipe (``kilo run --format json | kilo-loop redact | tee log``).  Bytes that are not UTF-8 pass
through unchanged (surrogate escapes).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import BinaryIO

import click

from kilo_loop.safety.redact import Redactor

_ENCODING = "utf-8"
_ERRORS = "surrogateescape"


def _lines(stream: BinaryIO) -> Iterator[str]:
    for raw in iter(stream.readline, b""):
        yield raw.decode(_ENCODING, _ERRORS)


def filter_stream(source: BinaryIO, sink: BinaryIO, redactor: Redactor) -> int:
    """Copy ``source`` to ``sink`` redacted, flushing per line; returns the number of lines."""
    count = 0
    for line in redactor.redact_lines(_lines(source)):
        sink.write(line.encode(_ENCODING, _ERRORS))
        sink.flush()
        count += 1
    return count


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's exit-time flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (e.g. under CliRunner)
        pass


@click.command(help="Redact secrets from stdin to stdout, line by line (for pipes and saved logs).")
@click.option(
    "-e", "--extra-pattern", "extra_patterns", multiple=True, metavar="REGEX",
    help="also redact whatever this Python regular expression matches (repeatable)",
)
def redact_command(extra_patterns: tuple[str, ...]) -> None:
    try:
        redactor = Redactor(extra_patterns=extra_patterns)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--extra-pattern") from exc
    try:
        filter_stream(sys.stdin.buffer, sys.stdout.buffer, redactor)
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        _silence_stdout()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
