"""`kilo-loop redact` on a burst of input: blocks go to worker processes and come back in order,
with exactly the bytes one process gives — also when a PEM key or an indented secret runs over a
block boundary, when a worker fails, and through the real CLI with a file or a pipe as stdin."""

from __future__ import annotations

import io
import os
import random
import string
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kilo_loop.commands import redact as redact_cli
from kilo_loop.commands.redact import filter_stream, line_blocks
from kilo_loop.redact import REDACTED, Redactor
from kilo_loop.redact import _pool as redact_pool
from tests.support.paths import SRC

SRC = SRC
_ALNUM = string.ascii_letters + string.digits


def _secret_lines(rng: random.Random) -> list[str]:
    """Credential-bearing lines, built from parts so no literal token sits in the source."""
    word = lambda n: "".join(rng.choices(_ALNUM, k=n))  # noqa: E731 - a local shorthand
    return [
        "export GITHUB_TOKEN=" + "gh" + "p_" + word(36),
        "  password: " + word(14),
        "mysql -u root -p" + word(12) + " app",
        "https://u:" + word(16) + "@db.internal/app",
        "-----BEGIN " + "RSA PRIVATE KEY-----\n" + "\n".join(word(64) for _ in range(3))
        + "\n-----END " + "RSA PRIVATE KEY-----",
        "password:\n  " + word(20) + "\n  " + word(20),
        "user,password\nalice," + word(12) + "\nbob," + word(12),
    ]


def _corpus(lines: int, seed: int) -> bytes:
    rng = random.Random(seed)
    out = []
    for index in range(lines):
        if index % 3 == 0:
            out.append(rng.choice(_secret_lines(rng)))
        else:
            out.append(f"{index:06d} INFO the loop ran stage {rng.randint(1, 9)} " + "x" * rng.randint(0, 60))
    return ("\n".join(out) + "\n").encode()


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 4 kB and a pool for any of 1 kB, so a small input makes many blocks."""
    monkeypatch.setattr(redact_cli, "_READ_SIZE", 4096)
    monkeypatch.setattr(redact_cli, "_POOL_BLOCK", 1024)


def _single_process(data: bytes) -> bytes:
    sink = io.BytesIO()
    filter_stream(io.BytesIO(data), sink, Redactor(), workers=0)
    return sink.getvalue()


def _submits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    submit = redact_pool.InOrder.submit

    def counting(self: redact_pool.InOrder, block: bytes) -> None:
        sizes.append(len(block))
        submit(self, block)

    monkeypatch.setattr(redact_pool.InOrder, "submit", counting)
    return sizes


def test_the_pool_gives_the_bytes_one_process_gives(small_blocks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _corpus(3000, seed=1)
    expected = _single_process(data)
    assert expected.count(REDACTED.encode()) > 1000
    assert expected == Redactor().redact(data.decode()).encode()
    submitted = _submits(monkeypatch)
    sink = io.BytesIO()
    assert filter_stream(io.BytesIO(data), sink, Redactor(), workers=2) == data.count(b"\n")
    assert len(submitted) > 20, "the blocks did not go to the workers"
    assert sink.getvalue() == expected


def test_a_key_running_over_a_block_boundary_is_redone_with_its_header(
    small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each block boundary falls inside a PEM body or an indented secret: every block after the
    first is redacted by a worker without the header and must be redone with it."""
    body = "\n".join("".join(random.Random(n).choices(_ALNUM, k=64)) for n in range(200))
    pem = "-----BEGIN " + "PRIVATE KEY-----\n" + body + "\n-----END " + "PRIVATE KEY-----\n"
    yaml = "secret:\n" + "".join(f"  {n:04d}{''.join(random.Random(n).choices(_ALNUM, k=30))}\n" for n in range(300))
    data = ("head\n" + pem + "middle\n" + yaml + "tail: 1\n").encode()
    expected = _single_process(data)
    assert body.splitlines()[100].encode() not in expected and b"tail: 1\n" in expected
    submitted = _submits(monkeypatch)
    sink = io.BytesIO()
    filter_stream(io.BytesIO(data), sink, Redactor(), workers=2)
    assert len(submitted) >= 4
    assert sink.getvalue() == expected


def _explode(block: bytes) -> tuple[bytes, bytes]:
    raise RuntimeError("a worker died")


def test_a_failing_worker_costs_nothing(small_blocks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _corpus(600, seed=2)
    expected = _single_process(data)
    monkeypatch.setattr(redact_pool, "_redact_alone", _explode)  # the forked workers inherit it
    sink = io.BytesIO()
    filter_stream(io.BytesIO(data), sink, Redactor(), workers=2)
    assert sink.getvalue() == expected


def test_extra_patterns_reach_the_workers(small_blocks: None) -> None:
    data = b"".join(b"ticket ACME-%d in line %d\n" % (n, n) for n in range(2000))
    sink = io.BytesIO()
    filter_stream(io.BytesIO(data), sink, Redactor(extra_patterns=[r"ACME-\d+"]), workers=2)
    assert sink.getvalue() == b"".join(b"ticket [REDACTED] in line %d\n" % n for n in range(2000))


def test_workers_follow_the_idle_cores(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(redact_pool, "usable_cores", lambda: 8)
    monkeypatch.setattr(redact_cli, "PROC_LOADAVG", tmp_path / "not-linux")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert redact_cli.burst_workers(None) == 4  # at most four
    monkeypatch.setattr(os, "getloadavg", lambda: (5.6, 0.0, 0.0))
    assert redact_cli.burst_workers(None) == 2
    monkeypatch.setattr(os, "getloadavg", lambda: (7.0, 0.0, 0.0))
    assert redact_cli.burst_workers(None) == 0  # one idle core: redact in-process
    assert redact_cli.burst_workers(3) == 3
    assert redact_cli.burst_workers(1) == 0


def test_line_blocks_say_whether_more_input_was_waiting() -> None:
    read, write = os.pipe()
    with os.fdopen(read, "rb") as source, os.fdopen(write, "wb") as sink:
        sink.write(b"one\ntwo\nthr")
        sink.flush()
        blocks = line_blocks(source, 1024)
        assert next(blocks) == (b"one\ntwo\n", False)  # the pipe is empty now: nothing waits
        sink.write(b"ee\n" + b"x" * 2000 + b"\nlast")
        sink.close()
        rest = list(blocks)
    assert b"".join(block for block, _ in rest) == b"three\n" + b"x" * 2000 + b"\nlast"
    assert rest[-1] == (b"last", False)


def _generated_file(tmp_path: Path, megabytes: int) -> Path:
    path = tmp_path / "burst.log"
    path.write_bytes(_corpus(megabytes * 16000, seed=3))
    return path


def test_the_cli_redacts_a_file_on_stdin(tmp_path: Path) -> None:
    """Through the real entry point: a 3 MB file on stdin (a burst: select says more is always
    waiting; workers run when cores are idle) gives what the in-process filter gives."""
    path = _generated_file(tmp_path, 3)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with path.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "kilo_loop", "redact"], stdin=stdin, capture_output=True, env=env,
            timeout=300, check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == _single_process(path.read_bytes())


def test_a_burst_on_a_live_pipe_is_written_before_stdin_closes(tmp_path: Path) -> None:
    """A producer that writes 2 MB at once and then waits: every line of the burst comes out
    while stdin is still open (the pool is drained when no more input waits)."""
    data = _generated_file(tmp_path, 2).read_bytes()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kilo_loop", "redact"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None
    received: list[bytes] = []
    wanted = data.count(b"\n")

    def read_all_lines() -> None:
        while sum(chunk.count(b"\n") for chunk in received) < wanted:
            chunk = stdout.read1(1 << 16)
            if not chunk:
                return
            received.append(chunk)

    try:
        writer = threading.Thread(target=lambda: (stdin.write(data), stdin.flush()), daemon=True)
        writer.start()
        reader = threading.Thread(target=read_all_lines, daemon=True)
        reader.start()
        reader.join(timeout=300)  # a hang guard, not a speed assertion
        assert not reader.is_alive(), "the burst was held back while stdin stayed open"
        writer.join(timeout=60)
        assert b"".join(received) == _single_process(data)
    finally:
        stdin.close()
        assert proc.wait(timeout=60) == 0
        stdout.close()


def test_runnable_tasks_now_outweigh_a_load_average_of_work_just_finished(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The build that made the log ended seconds ago: the one-minute average still counts it,
    the kernel's count of runnable tasks does not (and it sees work that began just now)."""
    loadavg = tmp_path / "loadavg"
    monkeypatch.setattr(redact_cli, "PROC_LOADAVG", loadavg)
    monkeypatch.setattr(redact_pool, "usable_cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.9, 1.5, 0.3))
    loadavg.write_text("1.90 1.50 0.30 1/92 9252\n")  # only this process runs
    assert redact_cli.burst_workers(None) == 2
    loadavg.write_text("1.90 1.50 0.30 2/92 9252\n")  # one other task: one core idle
    assert redact_cli.burst_workers(None) == 0
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    loadavg.write_text("0.10 0.10 0.10 4/92 9252\n")  # a job began a moment ago
    assert redact_cli.burst_workers(None) == 0
    loadavg.write_text("0.10 0.10\n")  # no runnable count: the average decides
    assert redact_cli.burst_workers(None) == 2


def test_runnable_others_reads_the_fourth_field() -> None:
    assert redact_cli.runnable_others("0.34 0.52 0.77 2/92 9252\n") == 1
    assert redact_cli.runnable_others("0.34 0.52 0.77 1/92 9252") == 0
    assert redact_cli.runnable_others("0.34 0.52") is None
    assert redact_cli.runnable_others("0.34 0.52 0.77 x/92 1") is None


def test_a_fast_burst_stays_in_one_process_and_a_slow_one_gets_workers() -> None:
    """Workers pay off only where redaction is slow (secret-dense text); chosen workers always run."""
    assert not redact_cli._slow(1_000_000, 0.05)  # 20 MB/s: typical agent output
    assert redact_cli._slow(1_000_000, 0.33)  # 3 MB/s: half the lines hold a secret
