"""`kilo-loop redact`: filter stdin to stdout through the secret redactor.

Streaming without per-line cost: each read takes whatever the pipe holds, and while more input is
already waiting (a file, a fast producer) the reads gather up to ``_READ_SIZE`` bytes; the whole
lines are redacted in one scan and written, and the output is flushed whenever no more input is
waiting.  A live pipe (``kilo run --format json | kilo-loop redact | tee log``) still gets every
complete line as soon as it arrives; a partial last line waits for its newline (or the end of the
input).  A big burst (a file, a saved log) is spread over worker processes when cores are idle,
one block of lines each, and written back in order (``kilo_loop.redact``'s worker pool).  Bytes that are not
UTF-8 pass through unchanged.
"""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import click

from kilo_loop.redact import Redactor

if TYPE_CHECKING:
    from kilo_loop.redact import InOrder

_READ_SIZE = 1 << 20
# A block this big with more input waiting is a burst worth worker processes (their start-up,
# ~20 ms, is paid once): the blocks after it go to them.  Anything smaller is redacted here at once.
_POOL_BLOCK = 256 << 10
# Workers are forked with the parent's memory and pay for every page they touch; on text redacted
# faster than this (agent output with few secrets: ~16 MB/s here) they cost more CPU than they save
# (bench_redact, 2 cores: 11.4 MB/s with two workers against 15.7 in one process), while on
# secret-dense text (~3 MB/s) they add a third.  Chosen workers (`workers=N`) are always used.
_POOL_BELOW_MB_S = 8.0
_MAX_WORKERS = 4
PROC_LOADAVG = Path("/proc/loadavg")


def _read_some(stream: BinaryIO, size: int) -> bytes:
    """Whatever is available now, up to ``size`` bytes (blocking only while nothing is)."""
    read1 = getattr(stream, "read1", None)
    return bytes(read1(size)) if read1 is not None else stream.read(size)


def _waiting_probe(stream: BinaryIO) -> Callable[[], bool]:
    """Whether more input can be read at once without blocking.  A stream without a file
    descriptor (in memory) never blocks."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return lambda: True

    def waiting() -> bool:
        try:
            return bool(select.select([fd], [], [], 0)[0])
        except (OSError, ValueError):  # pragma: no cover - a descriptor select cannot watch
            return False

    return waiting


def line_blocks(stream: BinaryIO, size: int = _READ_SIZE) -> Iterator[tuple[bytes, bool]]:
    """Blocks of whole lines in input order, each with whether more input was already waiting
    when it was cut.  A block gathers reads while input is waiting, up to ``size`` bytes; the bytes
    after its last newline are kept for the next block (a line longer than ``size`` keeps growing
    until its newline or the end)."""
    waiting = _waiting_probe(stream)
    pending = b""
    ended = False
    while not ended:
        parts, fresh, more = [pending], 0, True
        while more and fresh < size:
            chunk = _read_some(stream, size - fresh)
            if not chunk:
                ended, more = True, False
                break
            parts.append(chunk)
            fresh += len(chunk)
            more = waiting()
        data = b"".join(parts)
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut], more
        pending = data[cut:]
    if pending:
        yield pending, False


def whole_line_blocks(stream: BinaryIO, size: int = _READ_SIZE) -> Iterator[bytes]:
    """``line_blocks`` without the waiting flags."""
    for block, _ in line_blocks(stream, size):
        yield block


def runnable_others(loadavg: str) -> int | None:
    """How many other tasks are runnable right now, from ``/proc/loadavg``'s text (its fourth
    field, ``running/total``, counts this process too); None when the text has no such field."""
    fields = loadavg.split()
    running = fields[3].partition("/")[0] if len(fields) > 3 else ""
    return max(int(running) - 1, 0) if running.isdigit() else None


def _busy_cores(cores: int) -> float:
    """Cores other work keeps busy: how many other tasks the kernel counts as runnable now (the
    middle of three looks 5 ms apart), or where it does not say, the one-minute load average.
    The average still counts what ended seconds ago, such as the build that wrote the log."""
    samples: list[int] = []
    for look in range(3):
        if look:
            time.sleep(0.005)
        try:
            now = runnable_others(PROC_LOADAVG.read_text(encoding="ascii"))
        except (OSError, UnicodeDecodeError):  # not Linux
            now = None
        if now is None:
            break
        samples.append(now)
    if len(samples) == 3:
        return float(sorted(samples)[1])
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - no load average on this platform
        return float(cores)


def burst_workers(allowed: int | None) -> int:
    """Worker processes for a burst: ``allowed`` when given, else one per idle core (the way
    ``make -l`` counts them, see ``_busy_cores``), up to four; 0 when fewer than two would run.
    On a busy machine workers only add the cost of shipping blocks to them."""
    from kilo_loop.redact import can_fork, usable_cores

    if not can_fork():  # pragma: no cover - platforms without fork
        return 0
    if allowed is None:
        cores = usable_cores()
        allowed = min(cores, _MAX_WORKERS, int(cores - _busy_cores(cores) + 0.5))
    return allowed if allowed >= 2 else 0


def _slow(size: int, seconds: float) -> bool:
    """Whether a block redacted at this rate is worth worker processes (see ``_POOL_BELOW_MB_S``)."""
    return size < _POOL_BELOW_MB_S * 1_000_000 * seconds


def filter_stream(source: BinaryIO, sink: BinaryIO, redactor: Redactor, workers: int | None = None) -> int:
    """Copy ``source`` to ``sink`` redacted; returns the line count.  ``workers``: processes for a
    burst of input (None: one per idle core, up to four; 0 or 1: none)."""
    lines = 0
    header = b""  # what the last block redacted here left open, until a pool takes over
    order: InOrder | None = None
    warm = finished = False
    try:
        for block, more in line_blocks(source, _READ_SIZE):
            lines += block.count(b"\n") + (not block.endswith(b"\n"))
            if order is None and warm and more and (count := burst_workers(workers)):
                from kilo_loop.redact import InOrder

                order = InOrder(redactor, count, header)
            if order is None:
                started = time.perf_counter()
                redacted, header = redactor.redact_block(block, header)
                sink.write(redacted)
                # the workers are forked after one big block: they inherit the DFA states it built
                warm = more and len(block) >= _POOL_BLOCK and (
                    workers is not None or _slow(len(block), time.perf_counter() - started))
            elif more or order.pending:
                order.submit(block)
                while order.pending and (order.pending >= order.window or not more):
                    sink.write(order.next_done())
            else:
                sink.write(order.here(block))
            if not more:
                sink.flush()
        finished = True
    finally:
        if order is not None:
            order.close(finished)
    sink.flush()
    return lines


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's exit-time flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (e.g. under CliRunner)
        pass


def explain_stream(source: BinaryIO, sink: BinaryIO, redactor: Redactor) -> int:
    """For each line a redaction changed: its number, what fired (a rule's name or ``mask
    (<source>)``, never the value) and the redacted line; then a count by what fired.  Returns
    the number of redactions."""
    fired: dict[str, int] = {}
    header, first_line = b"", 1
    for block in whole_line_blocks(source):
        redacted, header, found = redactor.explain_block(block, header)
        lines = redacted.split(b"\n")
        by_line: dict[int, list[str]] = {}
        for index, name in found:
            by_line.setdefault(index, []).append(name)
            fired[name] = fired.get(name, 0) + 1
        for index, names in sorted(by_line.items()):
            shown = lines[index][:_EXPLAIN_WIDTH] + (b"..." if len(lines[index]) > _EXPLAIN_WIDTH else b"")
            sink.write(f"{first_line + index}: {', '.join(dict.fromkeys(names))}: ".encode() + shown + b"\n")
        first_line += block.count(b"\n")
    total = sum(fired.values())
    summary = ", ".join(f"{name} {count}" for name, count in sorted(fired.items(), key=lambda item: -item[1]))
    sink.write(f"{total} redaction(s){': ' + summary if summary else ''}\n".encode())
    sink.flush()
    return total


_EXPLAIN_WIDTH = 160


def _known_values(mask_files: tuple[str, ...], known: bool) -> list[tuple[str, str]]:
    """What this process knows to be secret: its environment's secret-named values,
    ``KILO_LOOP_MASK``, and the values of the mask files given (relative to the current directory)."""
    if not known:
        return []
    from kilo_loop.redact import collect

    return collect(os.environ, Path.cwd(), mask_files).values


@click.command(help="Redact secrets from stdin to stdout, line by line (for pipes and saved logs). "
                    "Values of this environment's secret-named variables (and KILO_LOOP_MASK, one per line) "
                    "are masked too, in every encoding.")
@click.option(
    "-e", "--extra-pattern", "extra_patterns", multiple=True, metavar="REGEX",
    help="also redact whatever this Python regular expression matches (repeatable)",
)
@click.option("--explain", is_flag=True,
              help="instead of the text, print each changed line's number, the rule or mask source that "
                   "fired (never the value) and the redacted line")
@click.option("--mask-file", "mask_files", multiple=True, metavar="GLOB",
              help="also mask the values of these dotenv-style files, e.g. '.env*' (repeatable)")
@click.option("--no-known", is_flag=True, help="do not mask the environment's secret values by value")
def redact_command(extra_patterns: tuple[str, ...], explain: bool, mask_files: tuple[str, ...],
                   no_known: bool) -> None:
    try:
        redactor = Redactor(extra_patterns=extra_patterns, known=_known_values(mask_files, not no_known))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--extra-pattern") from exc
    try:
        if explain:
            explain_stream(sys.stdin.buffer, sys.stdout.buffer, redactor)
        else:
            filter_stream(sys.stdin.buffer, sys.stdout.buffer, redactor)
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        _silence_stdout()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
