"""Ending a child process together with everything it started.

Children the loop spawns (the agent CLI, verify commands) run in their own
session (`start_new_session=True`), so the child's pid is also the id of a
process group holding every descendant that did not detach itself. Killing
the group, not just the child, is what leaves no orphan behind: a test runner
that forked a dev server, or `sh -c 'sleep 300 & sleep 300'`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

_POLL_S = 0.05
# SIGKILL is delivered asynchronously; wait this long for the group to be gone
# so that callers can rely on "no member left running" once we return.
_KILL_SETTLE_S = 2.0
_PROC = Path("/proc")


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` (0 only probes) to a process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        # A member changed credentials (setuid helper); nothing we may do about it.
        return False
    return True


def group_has_live_members(pgid: int) -> bool:
    """True while a non-zombie process belongs to group `pgid`.

    `killpg(pgid, 0)` alone also counts zombies, and an orphaned grandchild can
    stay a zombie for a while when pid 1 does not reap (containers), which
    would stretch every grace period to its end. /proc tells them apart.
    """
    if not signal_group(pgid, 0):
        return False
    if not _PROC.is_dir():
        return True
    return any(state != "Z" for state in _group_states(pgid))


def _group_states(pgid: int) -> list[str]:
    states: list[str] = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        parsed = parse_proc_stat(stat)
        if parsed is not None and parsed[1] == pgid:
            states.append(parsed[0])
    return states


def parse_proc_stat(stat: str) -> tuple[str, int] | None:
    """(state, pgrp) from a /proc/<pid>/stat line; the comm field may hold spaces and parens."""
    close = stat.rfind(")")
    if close < 0:
        return None
    fields = stat[close + 1 :].split()
    if len(fields) < 3 or not fields[2].lstrip("-").isdigit():
        return None
    return fields[0], int(fields[2])


def _is_group_leader(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        # Already gone (or reaped): whatever group it led is addressed by its pid.
        return True


async def _wait_group_gone(proc: asyncio.subprocess.Process, pgid: int, deadline: float) -> bool:
    remaining = deadline - time.monotonic()
    if remaining > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), remaining)
    # The leader is gone; descendants may still be handling SIGTERM. There is no
    # event for "group empty", so poll briefly.
    while group_has_live_members(pgid):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL_S)
    return True


async def terminate_process_group(proc: asyncio.subprocess.Process, grace_s: float = 3.0) -> None:
    """SIGTERM the process's group, wait up to `grace_s`, SIGKILL what is left, reap the child.

    `proc` must have been started with `start_new_session=True`; if it is not a
    group leader only the process itself is signalled (never the caller's own
    group). Safe to call on a process or group that has already exited.
    """
    pgid = proc.pid
    if proc.returncode is None and not _is_group_leader(pgid):
        await _terminate_single(proc, grace_s)
        return
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + max(grace_s, 0.0)
    if not await _wait_group_gone(proc, pgid, deadline):
        signal_group(pgid, signal.SIGKILL)
        await _wait_group_gone(proc, pgid, time.monotonic() + _KILL_SETTLE_S)
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


async def _terminate_single(proc: asyncio.subprocess.Process, grace_s: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), max(grace_s, 0.0))
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
