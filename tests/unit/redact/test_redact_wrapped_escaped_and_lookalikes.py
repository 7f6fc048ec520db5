"""Redactor red-team round 4: values in the lines of a JSON string's text (escaped line breaks),
secrets line-wrapped at a fixed width, and prose or names that only look like a secret's value.

Fake values are random-looking strings made for this file; provider prefixes are concatenated.
"""

from __future__ import annotations

import pytest

from kilo_loop.redact import REDACTED, Redactor


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


def _stable(redactor: Redactor, text: str) -> str:
    out = redactor.redact(text)
    assert redactor.redact(out) == out
    return out


# --- 1. a value in a line of a JSON string's text ends at the escaped line break --------------


@pytest.mark.parametrize(("text", "expected"), [
    # a passphrase of several words at the start of a string or of one of its lines: all of it goes
    ('{"output":"password: correct horse battery\\n  next line"}',
     '{"output":"password: [REDACTED]\\n  next line"}'),
    ('{"output":"APP=1\\nDB_PASSWORD=tr0ub4dor and 3\\nDEBUG=1"}',
     '{"output":"APP=1\\nDB_PASSWORD=[REDACTED]\\nDEBUG=1"}'),
    ('{"output":"$ cat .env\\n  export SECRET_KEY=Wq8 zk2 Lm7\\r\\n  user: x"}',
     '{"output":"$ cat .env\\n  export SECRET_KEY=[REDACTED]\\r\\n  user: x"}'),
    # quoted with escaped quotes: the quotes stay
    ('{"output":"password: \\"Xy7kQ2 mZp9Lw\\"\\n  next line"}',
     '{"output":"password: \\"[REDACTED]\\"\\n  next line"}'),
    # JSON in JSON: the line ends at the inner string's closing quote
    ('{"input":"{\\"text\\":\\"token: aB3 dE6 gH9\\",\\"n\\":1}"}',
     '{"input":"{\\"text\\":\\"token: [REDACTED]\\",\\"n\\":1}"}'),
])
def test_a_value_opening_a_line_of_string_text_runs_to_its_escaped_break(
    redactor: Redactor, text: str, expected: str
) -> None:
    assert _stable(redactor, text) == expected


def test_an_empty_secret_key_hides_the_deeper_lines_of_string_text(redactor: Redactor) -> None:
    text = '{"output":"db:\\n  password:\\n    Xy7kQ2mZp9Lw\\n    q9Wm2Lk8Zp\\n  host: db"}'
    assert _stable(redactor, text) == '{"output":"db:\\n  password:\\n    [REDACTED]\\n    [REDACTED]\\n  host: db"}'
    block = '{"output":"token: |\\n  aB3dE6gH9kL2\\nnext: line"}'
    assert _stable(redactor, block) == '{"output":"token: |\\n  [REDACTED]\\nnext: line"}'


@pytest.mark.parametrize(("text", "expected"), [
    ("password: Xy7kQ2mZp9Lw\\n  next line here", "password: [REDACTED]\\n  next line here"),
    ('"text":"DB_PASSWORD=abc123 \\\\nDEBUG=1"', '"text":"DB_PASSWORD=[REDACTED] \\\\nDEBUG=1"'),
    ("DB_PASSWORD=abc123 \\nDEBUG=1", "DB_PASSWORD=[REDACTED] \\nDEBUG=1"),
])
def test_a_line_start_value_stops_at_an_escaped_break(redactor: Redactor, text: str, expected: str) -> None:
    assert _stable(redactor, text) == expected


# --- 3. prose and names that are not a secret's value --------------------------------------


@pytest.mark.parametrize("text", [
    "Note: authorization: required for all admin endpoints",
    "authorization: required for all admin endpoints",
    "The API returns 401 when Authorization: missing or expired.",
    '{"text":"Authorization: Required for every call, see the docs"}',
    "aws secretsmanager get-secret-value --secret-id prod/db/creds",
    "aws secretsmanager get-secret-value --secret-id arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf",
    '{"SecretId": "prod/db/creds", "VersionStage": "AWSCURRENT"}',
    'client.get_secret_value(SecretId="prod-db-creds")',
    "SECRET_ID=MyAppDatabaseSecret",
])
def test_prose_after_authorization_and_a_stored_secrets_name_stay(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text) == text


@pytest.mark.parametrize(("text", "secret"), [
    ("vault write auth/approle/login role_id=7f1e0a3c-1d2b secret_id=3b9c1e7a-5d2f-4a8b-9c6e-1f0a2b3c4d5e",
     "3b9c1e7a-5d2f-4a8b-9c6e-1f0a2b3c4d5e"),
    ("VAULT_SECRET_ID=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ('secret_id: "deadbeef-aaaa-bbbb-cccc-1234567890ab"', "deadbeef-aaaa-bbbb-cccc-1234567890ab"),
    ("Authorization: SSWS 00Qk7Lm2Zp9Wx4Rt8Vy3", "00Qk7Lm2Zp9Wx4Rt8Vy3"),
    ("curl -H 'Authorization: token abcdef0123456789abcd' api", "abcdef0123456789abcd"),
])
def test_vault_secret_ids_and_real_authorization_values_still_go(redactor: Redactor, text: str, secret: str) -> None:
    out = _stable(redactor, text)
    assert secret not in out
    assert REDACTED in out


# --- 2. a secret line-wrapped at a fixed width keeps no tail ----------------------------------

_B64 = "Zk3qLm9Rt2Vx8Wp4Hs6Jd1Nc5Bf7Gy0Qa2We4Rt6Yu8Io0Pa1Sd3Fg5Hj7Kl9Zx2Cv4Bn6Mq8Wr1Et3Yu5Ip7As9Df0Gh2Jk4"


def _wrapped(head: str, width: int, rows: int) -> tuple[str, list[str]]:
    """``head`` and a long value cut into lines of ``width``: the text and the value's pieces."""
    value = (_B64 * 4)[: width * rows - len(head) + 17]
    first = width - len(head)
    pieces = [value[:first]] + [value[i:i + width] for i in range(first, len(value), width)]
    return head + "\n".join(pieces), pieces


@pytest.mark.parametrize("width", [64, 76, 80])
@pytest.mark.parametrize("head", ["API_TOKEN=", "  client_secret: ", "2026-01-02 10:00:00 INFO token="])
def test_a_value_wrapped_at_a_fixed_width_goes_whole(redactor: Redactor, width: int, head: str) -> None:
    text, pieces = _wrapped(head, width, 3)
    out = _stable(redactor, text + "\nnext line\n")
    assert not [piece for piece in pieces if piece in out]
    assert out.endswith("\nnext line\n")
    lines = (text + "\nnext line\n").splitlines(keepends=True)
    assert "".join(redactor.redact_lines(lines)) == out
    blocks = [line.encode() for line in lines]
    assert b"".join(redactor.redact_blocks(blocks)).decode() == out


@pytest.mark.parametrize("width", [64, 76])
def test_a_value_wrapped_inside_a_json_string_goes_whole(redactor: Redactor, width: int) -> None:
    text, pieces = _wrapped("SECRET_KEY=", width, 3)
    line = '{"output":"' + text.replace("\n", "\\n") + '\\nDEBUG=1"}'
    out = _stable(redactor, line)
    assert not [piece for piece in pieces if piece in out]
    assert out.endswith('\\nDEBUG=1"}')
    nested = '{"output":"APP=1\\n' + text.replace("\n", "\\n") + '"}'
    assert not [piece for piece in pieces if piece in _stable(redactor, nested)]


@pytest.mark.parametrize("follower", ["fi", "done", "}", "EOF", "the job ran fine", "return cfg", "v1.2.3", "---"])
def test_a_value_ending_at_the_edge_keeps_an_ordinary_next_line(redactor: Redactor, follower: str) -> None:
    line = "export API_TOKEN=" + _B64[: 80 - len("export API_TOKEN=")]
    assert len(line) == 80
    out = _stable(redactor, line + "\n" + follower + "\n")
    assert out == "export API_TOKEN=[REDACTED]\n" + follower + "\n"
    escaped = '{"t":"' + line + "\\n" + follower + '"}'
    assert _stable(redactor, escaped) == '{"t":"export API_TOKEN=[REDACTED]\\n' + follower + '"}'


def test_a_short_line_ending_in_a_value_keeps_a_token_like_next_line(redactor: Redactor) -> None:
    text = "API_TOKEN=" + _B64[:30] + "\nabc123XYZ\n"
    assert _stable(redactor, text) == "API_TOKEN=[REDACTED]\nabc123XYZ\n"


@pytest.mark.parametrize("after", ["", "  other: Xy7kQ2mZp9Lw\n"])
def test_a_chain_and_an_indented_block_left_open_together_stream_like_the_whole_text(
    redactor: Redactor, after: str
) -> None:
    text, pieces = _wrapped("  client_secret: ", 64, 2)
    whole = "oauth:\n" + (text.split("\n")[0] + "\n" + after if after else text + "\n") + "done\n"
    out = _stable(redactor, whole)
    assert pieces[0] not in out
    assert "".join(redactor.redact_lines(whole.splitlines(keepends=True))) == out
    if after:
        assert "Xy7kQ2mZp9Lw" not in out
    else:
        assert not [piece for piece in pieces if piece in out]
