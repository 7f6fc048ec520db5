"""Bad input through the whole redactor (the masks and the rules): a 100 MB line, bytes that are not
UTF-8, strings holding lone surrogates, structures nested past any sane depth, an environment value
that is JSON nested too deep to parse.  Bounded time and memory, nothing raised, no line lost, no
secret left; what cannot be judged is redacted whole (fail closed).  Every value here is a fake."""

from __future__ import annotations

import json
import resource
import time

from kilo_loop.redact import REDACTED, Redactor, from_env

VALUE = "Qm4vT9xLp2Wz7Rk1Bn8Hc5Yd3Fg6Js0Ue"  # matches no pattern rule alone: only its mask finds it
GITHUB = "ghp_" + "aB3" * 12


def _redactor() -> Redactor:
    return Redactor(known=[(VALUE, "environment")])


def test_a_100_mb_line_in_bounded_time_and_memory() -> None:
    line = b"abcdefghij0123456789 " * 5_000_000
    block = VALUE.encode() + b" " + line + b"password=hunter2x token " + GITHUB.encode() + b" " + VALUE.encode()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    started = time.perf_counter()
    out, header = _redactor().redact_block(block)
    seconds = time.perf_counter() - started
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert seconds < 60 and grown < 8 * len(block), (seconds, grown)
    assert out.startswith(REDACTED.encode() + b" abcdefghij") and header == b""
    assert out.endswith(b"password=[REDACTED] token ghp_[REDACTED] [REDACTED]")
    assert VALUE.encode() not in out and out.count(b"\n") == 0


def test_bytes_that_are_not_utf8_keep_their_place_and_the_secrets_around_them_go() -> None:
    block = (b"\xff\xfe\x00 binary " + VALUE.encode() + b" \x80\x81\n"
             b"latin-1 caf\xe9 password=hunter2x\n"
             b"\xc3\x28 " + GITHUB.encode() + b"\n")
    out, _ = _redactor().redact_block(block)
    assert out == (b"\xff\xfe\x00 binary [REDACTED] \x80\x81\n"
                   b"latin-1 caf\xe9 password=[REDACTED]\n"
                   b"\xc3\x28 ghp_[REDACTED]\n")


def test_explaining_binary_input_names_each_redaction_by_its_line() -> None:
    block = bytes(range(256)) * 4 + b"\n" + VALUE.encode() + b"\npassword=hunter2x\n"
    out, _, fired = _redactor().explain_block(block)
    assert out.count(b"\n") == block.count(b"\n") and VALUE.encode() not in out
    line = block[:block.index(VALUE.encode())].count(b"\n")  # the bytes hold line breaks of their own
    assert fired == [(line, "mask (environment)"), (line + 1, "keyword")]


def test_a_string_holding_lone_surrogates_is_redacted_not_raised_on() -> None:
    text = f"\udcff\udcfe {VALUE} password=hunter2x \ud800"
    assert _redactor().redact(text) == "\udcff\udcfe [REDACTED] password=[REDACTED] \ud800"
    assert _redactor().redact_value({"out": text.encode("utf-8", "surrogatepass")}) == {
        "out": "\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd [REDACTED] password=[REDACTED] \ufffd\ufffd\ufffd"}


def test_structures_nested_past_any_sane_depth_fail_closed_without_recursion() -> None:
    deep: dict[str, object] = {"note": VALUE}
    for _ in range(100_000):
        deep = {"a": deep, "note": VALUE}
    out = _redactor().redact_value(deep)
    depth = 0
    while isinstance(out, dict):
        assert out["note"] == REDACTED
        out, depth = out["a"], depth + 1
    assert out == REDACTED and depth < 100


def test_a_deeply_nested_json_text_is_redacted_in_bounded_time() -> None:
    text = '{"a":' * 100_000 + json.dumps(VALUE) + "}" * 100_000 + f" token={GITHUB}"
    started = time.perf_counter()
    out = _redactor().redact(text)
    assert time.perf_counter() - started < 20
    assert VALUE not in out and GITHUB not in out and out.endswith("token=[REDACTED]")


def test_an_environment_value_of_json_nested_too_deep_to_parse_is_masked_whole() -> None:
    deep = '{"a":' * 100_000 + json.dumps(VALUE) + "}" * 100_000
    assert from_env({"ACME_DEPLOY_TOKEN": deep}, "environment") == [(deep, "environment")]
