"""`kilo-loop redact`: filter stdin to stdout through the secret redactor.

Streaming without per-line cost: each read takes whatever the pipe holds (up to ``_READ_SIZE``
bytes), the whole lines in it are redacted in one scan, written and flushed at once.  A live pipe
(``kilo run --format json | kilo-loop redact | tee log``) still gets every complete line as soon
as it arrives, because a read returns as soon as some bytes are there; a file or a fast producer
is handled a megabyte at a time.  A partial last line waits for its newline (or the end of the
input).  Bytes that are not UTF-8 pass through unchanged.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import BinaryIO

import click

from kilo_loop.safety.redact import Redactor

_READ_SIZE = 1 << 20


def _read_some(stream: BinaryIO, size: int) -> bytes:
    """Whatever is available now, up to ``size`` bytes (blocking only while nothing is)."""
    read1 = getattr(stream, "read1", None)
    return bytes(read1(size)) if read1 is not None else stream.read(size)


def whole_line_blocks(stream: BinaryIO, size: int = _READ_SIZE) -> Iterator[bytes]:
    """Blocks of whole lines in input order; the bytes after the last newline are kept for the
    next block (a line longer than a read keeps growing until its newline or the end)."""
    pending = b""
    while chunk := _read_some(stream, size):
        data = pending + chunk
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        pending = data[cut:]
    if pending:
        yield pending


def filter_stream(source: BinaryIO, sink: BinaryIO, redactor: Redactor) -> int:
    """Copy ``source`` to ``sink`` redacted, flushing after each block; returns the line count."""
    lines = 0

    def counted() -> Iterator[bytes]:
        nonlocal lines
        for block in whole_line_blocks(source):
            lines += block.count(b"\n") + (not block.endswith(b"\n"))
            yield block

    for redacted in redactor.redact_blocks(counted()):
        sink.write(redacted)
        sink.flush()
    return lines


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
