"""`kilo-loop redact`: stdin → stdout in blocks of whole lines, flushed per read so it works inside
a pipe, with the same output as redacting the whole text at once."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading

from click.testing import CliRunner

from kilo_loop.commands.redact import filter_stream, redact_command, whole_line_blocks
from kilo_loop.safety.redact import Redactor
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
