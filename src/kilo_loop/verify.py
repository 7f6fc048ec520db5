"""The independent verify gate: the loop runs the stage's check itself.

A verify command runs through `/bin/sh -c` in the project directory, in its own
process group, with stdin from /dev/null. Its combined stdout and stderr are
kept in a bounded buffer (the last `BUFFER_BYTES`), so a test suite printing
gigabytes cannot grow the loop. At the timeout, and also after a normal exit,
the whole group is terminated: a verify never leaves a background server or a
stray `sleep` behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kilo_loop.process_group import terminate_process_group
from kilo_loop.run.state import VerifyResult

if TYPE_CHECKING:
    from kilo_loop.sandbox.jail import Jail

BUFFER_BYTES = 64 * 1024
TAIL_LINES = 40
TAIL_CHARS = 4096
_READ_CHUNK = 16 * 1024
# After the shell exits, how long to wait for the pipe to close once its group
# is gone (a descendant that escaped into another session could hold it open).
_DRAIN_S = 2.0
_SPAWN_GRACE_S = 1.0  # a verify cancelled while it starts gets this long after SIGTERM


class TailBuffer:
    """Keeps only the last `limit` bytes written to it."""

    def __init__(self, limit: int = BUFFER_BYTES) -> None:
        if limit <= 0:
            raise ValueError("limit must be positive")
        self._limit = limit
        self._data = bytearray()
        self.total_bytes = 0

    def write(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        self._data += chunk[-self._limit :]
        excess = len(self._data) - self._limit
        if excess > 0:
            del self._data[:excess]

    def __len__(self) -> int:
        return len(self._data)

    def text(self) -> str:
        return self._data.decode("utf-8", errors="replace")


def output_tail(text: str, max_lines: int = TAIL_LINES, max_chars: int = TAIL_CHARS) -> str:
    """The last `max_lines` lines of `text`, cut to its last `max_chars` characters."""
    lines = text.rstrip("\n").split("\n")[-max_lines:]
    tail = "\n".join(lines)
    return tail[-max_chars:] if len(tail) > max_chars else tail


def child_env(cwd: Path, env: Mapping[str, str] | None) -> dict[str, str]:
    """The verify's environment: `env` (or ours) with PWD naming the project.

    An inherited PWD that names the parent's directory misleads tools that
    trust PWD over getcwd().
    """
    merged = dict(os.environ if env is None else env)
    merged["PWD"] = str(cwd)
    return merged


async def _pump(stream: asyncio.StreamReader, sink: TailBuffer) -> None:
    while chunk := await stream.read(_READ_CHUNK):
        sink.write(chunk)


async def _open_reader(read_fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(loop=loop)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(read_fd, "rb", buffering=0)
    )
    return reader, transport


async def _spawn(
    command: str, cwd: Path, env: Mapping[str, str] | None, jail: Jail | None = None
) -> tuple[asyncio.subprocess.Process, asyncio.StreamReader, asyncio.BaseTransport]:
    """Start the shell with stdout+stderr on a pipe the loop owns.

    asyncio's own PIPE makes `proc.wait()` wait for the pipe to close too, so a
    backgrounded `sleep 300 &` would hold a finished verify open until its
    timeout. With a pipe of our own, `wait()` returns when the shell exits.
    """
    argv, environment = ["/bin/sh", "-c", command], child_env(cwd, env)
    if jail is not None:  # the verify runs code the agent wrote: in the jail, with the user's environment
        argv, environment = jail.wrap(argv, environment, "verify")
    read_fd, write_fd = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=environment,
            stdin=asyncio.subprocess.DEVNULL, stdout=write_fd, stderr=write_fd, start_new_session=True,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    try:
        reader, transport = await _open_reader(read_fd)
    except BaseException:  # cancelled before supervision began: the group must not outlive the caller
        await asyncio.shield(terminate_process_group(proc, _SPAWN_GRACE_S))
        raise
    return proc, reader, transport


async def _supervise(
    proc: asyncio.subprocess.Process, stream: asyncio.StreamReader, sink: TailBuffer,
    timeout_s: float, grace_s: float,
) -> bool:
    """Collect output until the shell exits or times out, then end its group; True if it timed out."""
    reader = asyncio.ensure_future(_pump(stream, sink))
    timed_out = False
    try:
        try:
            async with asyncio.timeout(timeout_s):
                await proc.wait()
        except TimeoutError:
            timed_out = True
        await terminate_process_group(proc, grace_s)
        # With the group gone the pipe reaches EOF at once, unless a descendant
        # escaped into another session and still holds it.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), _DRAIN_S)
    except BaseException:
        await asyncio.shield(terminate_process_group(proc, grace_s))
        raise
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    return timed_out


def _finish(
    command: str, sink: TailBuffer, exit_code: int | None, timed_out: bool, started: float,
    redact: Callable[[str], str], note: str = "",
) -> VerifyResult:
    # Redact the whole buffer before cutting the tail, so a secret split by the
    # cut can't slip through half-masked.
    text = sink.text()
    if note:
        text = text.rstrip("\n") + "\n" + note if text else note
    text = redact(text)
    return VerifyResult(
        command=command,
        exit_code=exit_code,
        passed=exit_code == 0 and not timed_out,
        output_tail=output_tail(text),
        duration_ms=int((time.monotonic() - started) * 1000),
        timed_out=timed_out,
    )


async def run_verify(
    command: str,
    cwd: Path,
    timeout_s: float,
    redact: Callable[[str], str] = lambda s: s,
    env: Mapping[str, str] | None = None,
    *,
    kill_grace_s: float = 3.0,
    jail: Jail | None = None,
) -> VerifyResult:
    """Run `command` with `/bin/sh -c` in `cwd`; passed means exit 0 within `timeout_s` seconds.

    `env` is the complete environment (None: inherit ours); PWD is set to `cwd`.
    A command that cannot start (missing cwd) is a failed outcome, not an
    exception. If the caller is cancelled, the group is still terminated.
    """
    if not command.strip():
        raise ValueError("verify command is empty")
    if not timeout_s > 0:
        raise ValueError(f"verify timeout must be positive, got {timeout_s!r}")
    sink = TailBuffer()
    started = time.monotonic()
    try:
        proc, stream, transport = await _spawn(command, cwd, env, jail)
    except OSError as exc:
        return _finish(command, sink, None, False, started, redact, f"could not start verify in {cwd}: {exc}")
    try:
        timed_out = await _supervise(proc, stream, sink, timeout_s, kill_grace_s)
    finally:
        transport.close()
    if timed_out:
        note = f"[kilo-loop] verify timed out after {timeout_s:g}s; its process group was killed"
        return _finish(command, sink, None, True, started, redact, note)
    return _finish(command, sink, proc.returncode, False, started, redact)
