"""The verify runner and the process-group terminator, with real processes."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

import pytest

from kilo_loop import verify as verify_module
from kilo_loop.process_group import parse_proc_stat, terminate_process_group
from kilo_loop.verify import BUFFER_BYTES, TailBuffer, output_tail, run_verify


def live_members(pgid: int) -> list[int]:
    """Pids of non-zombie processes in group `pgid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parsed = parse_proc_stat((entry / "stat").read_text())
        except OSError:
            continue
        if parsed is not None and parsed[1] == pgid and parsed[0] != "Z":
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        parsed = parse_proc_stat(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return False
    return parsed is not None and parsed[0] != "Z"


def number(label: str, text: str) -> int:
    match = re.search(rf"{label}=(\d+)", text)
    assert match, text
    return int(match.group(1))


async def test_passing_command(tmp_path: Path) -> None:
    outcome = await run_verify("echo ok", tmp_path, 30)
    assert outcome.passed and outcome.exit_code == 0 and not outcome.timed_out
    assert outcome.command == "echo ok" and outcome.output_tail == "ok" and outcome.duration_ms >= 0


async def test_failing_command_keeps_the_tail_of_both_streams(tmp_path: Path) -> None:
    outcome = await run_verify("for i in $(seq 1 100); do echo line$i; done; echo boom >&2; exit 2", tmp_path, 30)
    assert not outcome.passed and outcome.exit_code == 2 and not outcome.timed_out
    lines = outcome.output_tail.split("\n")
    assert len(lines) == 40 and lines[-1] == "boom" and lines[-2] == "line100" and "line60" not in lines


async def test_timeout_kills_the_whole_group_without_orphans(tmp_path: Path) -> None:
    outcome = await run_verify('sleep 300 & echo "bg=$!"; echo "pgid=$$"; sleep 300', tmp_path, 1)
    assert outcome.timed_out and not outcome.passed and outcome.exit_code is None
    assert "timed out after 1s" in outcome.output_tail
    assert not alive(number("bg", outcome.output_tail))
    assert live_members(number("pgid", outcome.output_tail)) == []


async def test_background_leftovers_are_cleaned_after_a_normal_exit(tmp_path: Path) -> None:
    outcome = await run_verify('sleep 300 & echo "bg=$!"', tmp_path, 120)
    assert outcome.passed and not outcome.timed_out
    assert not alive(number("bg", outcome.output_tail))


async def test_redact_is_applied_to_the_tail(tmp_path: Path) -> None:
    outcome = await run_verify(
        "echo 'token=SECRET123 ok'; exit 1", tmp_path, 30, redact=lambda s: s.replace("SECRET123", "[REDACTED]")
    )
    assert outcome.output_tail == "token=[REDACTED] ok"


async def test_huge_output_stays_bounded(tmp_path: Path) -> None:
    outcome = await run_verify("yes 0123456789abcdef | head -c 20000000; echo END", tmp_path, 60)
    assert outcome.passed
    assert len(outcome.output_tail) <= 4096 and outcome.output_tail.endswith("END")
    assert len(outcome.output_tail.split("\n")) <= 40


def test_tail_buffer_keeps_only_the_last_bytes() -> None:
    buffer = TailBuffer()
    for index in range(1000):
        buffer.write(bytes([index % 256]) * 10_000)
    assert len(buffer) == BUFFER_BYTES and buffer.total_bytes == 10_000_000
    huge = TailBuffer(8)
    huge.write(b"0123456789abcdef")
    assert huge.text() == "89abcdef"


def test_output_tail_cuts_lines_then_characters() -> None:
    assert output_tail("a\nb\nc\n", max_lines=2) == "b\nc"
    assert output_tail("x" * 10, max_chars=4) == "xxxx"


async def test_runs_in_cwd_with_the_given_environment_and_no_stdin(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "FOO": "bar", "PWD": "/somewhere/else"}
    outcome = await run_verify('pwd; echo "$FOO $PWD"; wc -c', tmp_path, 30, env=env)
    real = os.path.realpath(tmp_path)
    assert outcome.output_tail.split("\n") == [real, f"bar {tmp_path}", "0"]


async def test_missing_directory_is_a_failed_outcome(tmp_path: Path) -> None:
    outcome = await run_verify("true", tmp_path / "missing", 30)
    assert not outcome.passed and outcome.exit_code is None and "could not start verify" in outcome.output_tail


async def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        await run_verify("  ", tmp_path, 30)
    with pytest.raises(ValueError, match="timeout"):
        await run_verify("true", tmp_path, 0)


async def cancel_mid_verify_and_wait_for_the_group(tmp_path: Path) -> list[int]:
    """Start a verify that records its group and sleeps, cancel its caller once the group exists, and
    return the group's live members once they are gone or a deadline passed (a deadline, not a pause)."""
    pid_file = tmp_path / "pgid"
    task = asyncio.create_task(run_verify(f"echo $$ > '{pid_file}'; sleep 300", tmp_path, 300))
    for _ in range(400):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.025)
    pgid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = asyncio.get_running_loop().time() + 15
    while live_members(pgid) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    return live_members(pgid)


async def test_cancelling_the_caller_still_kills_the_group(tmp_path: Path) -> None:
    assert await cancel_mid_verify_and_wait_for_the_group(tmp_path) == []


async def test_cancelling_while_the_verify_starts_still_kills_the_group(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The window between the shell's start and its supervision: a cancel there left the group running."""
    never = asyncio.Event()

    async def stuck_reader(read_fd: int) -> object:
        await never.wait()  # the caller is cancelled while the reader is being set up
        raise AssertionError("unreachable")

    monkeypatch.setattr(verify_module, "_open_reader", stuck_reader)
    assert await cancel_mid_verify_and_wait_for_the_group(tmp_path) == []


async def test_terminate_escalates_to_sigkill() -> None:
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", "trap '' TERM; sleep 300 & sleep 300", start_new_session=True
    )
    await asyncio.sleep(0.2)  # let the trap be installed
    await terminate_process_group(proc, grace_s=0.3)
    assert proc.returncode == -signal.SIGKILL
    assert live_members(proc.pid) == []


async def test_terminate_tolerates_dead_processes_and_groups() -> None:
    proc = await asyncio.create_subprocess_exec("true", start_new_session=True)
    await proc.wait()
    await terminate_process_group(proc, grace_s=0.1)
    await terminate_process_group(proc, grace_s=0.1)
    assert proc.returncode == 0


async def test_terminate_without_own_group_signals_only_the_process() -> None:
    proc = await asyncio.create_subprocess_exec("sleep", "300")
    await terminate_process_group(proc, grace_s=1)
    assert proc.returncode == -signal.SIGTERM


def test_parse_proc_stat_handles_odd_command_names() -> None:
    assert parse_proc_stat("123 (a b) c) S 1 456 456 0 -1") == ("S", 456)
    assert parse_proc_stat("garbage") is None
