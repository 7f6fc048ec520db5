"""`kilo-loop redact`: stdin → stdout in blocks of whole lines, flushed per read so it works inside
a pipe, with the same output as redacting the whole text at once."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.commands.redact import filter_stream, redact_command, whole_line_blocks
from kilo_loop.redact import Redactor
from tests.support.paths import SRC

SRC = SRC


def _token() -> str:
    return "gh" + "p_" + "aZ9" * 12


def test_cli_redacts_stdin_to_stdout() -> None:
    stdin = f"export GITHUB_TOKEN={_token()}\nplain line\nhttps://u:secret@host/x\n"
    result = CliRunner().invoke(redact_command, [], input=stdin)
    assert result.exit_code == 0, result.output
    assert result.output == "export GITHUB_TOKEN=[REDACTED]\nplain line\nhttps://u:[REDACTED]@host/x\n"


def test_cli_carries_a_private_key_across_lines_and_keeps_a_last_line_without_newline() -> None:
    stdin = "-----BEGIN PRIVATE KEY-----\nMIIEvAbc123\n-----END PRIVATE KEY-----\ntail"
    result = CliRunner().invoke(redact_command, [], input=stdin)
    assert result.exit_code == 0
    assert result.output == "-----BEGIN PRIVATE KEY-----\n[REDACTED]\n-----END PRIVATE KEY-----\ntail"


def test_cli_extra_patterns_and_a_bad_pattern() -> None:
    ok = CliRunner().invoke(redact_command, ["-e", r"ACME-\d+"], input="ticket ACME-42\n")
    assert ok.output == "ticket [REDACTED]\n"
    bad = CliRunner().invoke(redact_command, ["--extra-pattern", "(oops"], input="x\n")
    assert bad.exit_code == 2
    assert "invalid extra redaction pattern" in bad.output


def test_non_utf8_bytes_pass_through_unchanged() -> None:
    source = io.BytesIO(b"caf\xe9 password=hunter2\n\xff\xfe raw\n")
    sink = io.BytesIO()
    assert filter_stream(source, sink, Redactor()) == 2
    assert sink.getvalue() == b"caf\xe9 password=[REDACTED]\n\xff\xfe raw\n"


def test_a_real_pipe_gets_each_line_before_stdin_closes() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    code = "from kilo_loop.commands.redact import redact_command; redact_command()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None
    try:
        lines: list[bytes] = []
        for sent in (f"token={_token()}\n", "second line\n"):
            stdin.write(sent.encode())
            stdin.flush()
            reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
            reader.start()
            reader.join(timeout=60)  # a hang guard, not a speed assertion
            assert not reader.is_alive(), "no output while stdin is still open: the filter is not streaming"
        assert lines == [b"token=[REDACTED]\n", b"second line\n"]
    finally:
        stdin.close()
        assert proc.wait(timeout=60) == 0
        stdout.close()


def test_blocks_of_any_size_give_the_whole_text_result() -> None:
    """Tiny reads split lines and multi-line blocks (a PEM key, an indented secret) across reads;
    the output must still be what one ``redact`` of the whole text gives."""
    begin, end = "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----"
    text = (f"a\n{begin}\nMIIEvAbc123\nMIIEvAbc456\n{end}\npassword:\n  one\n  two\nb: 1\n"
            f"export GITHUB_TOKEN={_token()}\ncaf\u00e9 token=x\nlast line without newline")
    expected = Redactor().redact(text).encode()
    for size in (1, 2, 3, 7, 16, 64, 1 << 20):
        blocks = list(whole_line_blocks(io.BytesIO(text.encode()), size))
        assert all(block.endswith(b"\n") for block in blocks[:-1])
        assert b"".join(blocks) == text.encode()
        sink = io.BytesIO()
        assert filter_stream(_Chunked(text.encode(), size), sink, Redactor()) == text.count("\n") + 1
        assert sink.getvalue() == expected, size


class _Chunked(io.BytesIO):
    """A stream whose read1 returns at most ``size`` bytes, like a pipe fed slowly."""

    def __init__(self, data: bytes, size: int) -> None:
        super().__init__(data)
        self._size = size

    def read1(self, size: int = -1) -> bytes:
        return super().read1(min(self._size, size if size > 0 else self._size))


def test_a_failure_inside_a_block_fails_closed_and_keeps_the_line_count() -> None:
    class Broken(Redactor):
        def _redact_extra_bytes(self, block: bytes) -> bytes:
            raise RuntimeError("boom")

    out = list(Broken().redact_blocks([b"password=a\nb\n", b"c"]))
    assert out == [b"[REDACTED]\n[REDACTED]\n", b"[REDACTED]"]


def test_cli_masks_the_environments_secret_values_and_explains_without_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # in this repository the values are in a tracked file: this one
    value = "Pq8Lm2Zx7Wk4Rt9Vb"
    env = {"ACME_DEPLOY_TOKEN": value, "KILO_LOOP_MASK": "Hh3Jj4Kk5Ll6\n"}
    stdin = f"plain\nsaw {value}\nsaw Hh3Jj4Kk5Ll6 and password=hunter2abc\n"
    masked = CliRunner().invoke(redact_command, [], input=stdin, env=env)
    assert masked.output == "plain\nsaw [REDACTED]\nsaw [REDACTED] and password=[REDACTED]\n"
    explained = CliRunner().invoke(redact_command, ["--explain"], input=stdin, env=env)
    assert explained.exit_code == 0, explained.output
    assert explained.output.splitlines() == [
        "2: mask (environment): saw [REDACTED]",
        "3: keyword, mask (KILO_LOOP_MASK): saw [REDACTED] and password=[REDACTED]",
        "3 redaction(s): mask (environment) 1, keyword 1, mask (KILO_LOOP_MASK) 1",
    ]
    off = CliRunner().invoke(redact_command, ["--no-known"], input=stdin, env=env)
    assert value in off.output


def test_cli_mask_file_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env.local").write_text("WIDGET=Nn1Bb2Vv3Cc4\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(redact_command, ["--mask-file", ".env*", "--explain"], input="x Nn1Bb2Vv3Cc4\n")
    assert result.output.splitlines()[0] == "1: mask (mask file .env.local): x [REDACTED]"
