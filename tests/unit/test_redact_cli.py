"""`kilo-loop redact`: stdin → stdout, line by line, flushed per line so it works inside a pipe."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from pathlib import Path

from click.testing import CliRunner

from kilo_loop.commands.redact import filter_stream, redact_command
from kilo_loop.safety.redact import Redactor

SRC = Path(__file__).resolve().parents[2] / "src"


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
