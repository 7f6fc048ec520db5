"""The redactor against an adversarial corpus (``tests/corpora/secrets_adversarial.toml``): secrets
in the places a tester who read the code found it blind (passwords in command flags, .netrc and
.pgpass lines, URL signatures, Vault and Datadog keys, a lone AWS secret key, percent-encoded
separators, PEM keys behind log prefixes or in string literals, keys split by colour codes, base64
env files, CSV credential rows, values ending in "="), and lines that must pass unchanged (base64
images, CamelCase names, go.sum hashes, checksummed addresses, ordinary lines near the new rules).

The score per kind is printed (``pytest -s``); every secret must go and every clean line stay.
All values in the corpus are randomly generated fakes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections import defaultdict
from typing import Any

import pytest

from kilo_loop.redact import REDACTED, Redactor
from tests.support.paths import CORPORA, SRC

CORPUS = CORPORA / "secrets_adversarial.toml"
DATA: dict[str, list[dict[str, Any]]] = tomllib.loads(CORPUS.read_text(encoding="utf-8"))
SECRETS = DATA["secret"]
CLEAN = DATA["clean"]


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def test_the_corpus_is_big_enough_and_every_secret_sits_in_its_text() -> None:
    assert sum(len(case["secrets"]) for case in SECRETS) >= 100
    assert len({case["kind"] for case in SECRETS}) >= 18
    for case in SECRETS:
        assert all(secret in case["text"] for secret in case["secrets"]), case["kind"]


def test_score_per_kind(redactor: Redactor) -> None:
    removed: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    for case in SECRETS:
        out = redactor.redact(case["text"])
        for secret in case["secrets"]:
            removed[case["kind"]][1] += 1
            if secret in out:
                misses.append((case["kind"], out))
            else:
                removed[case["kind"]][0] += 1
    wrong: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    changed = []
    for case in CLEAN:
        wrong[case["kind"]][1] += 1
        out = redactor.redact(case["text"])
        if out != case["text"]:
            wrong[case["kind"]][0] += 1
            changed.append((case["kind"], out))
    print("\nsecrets removed, by kind:")
    for kind, (done, total) in sorted(removed.items()):
        print(f"  {done:3}/{total:<3} {kind}")
    print("clean lines wrongly changed, by kind:")
    for kind, (bad, total) in sorted(wrong.items()):
        print(f"  {bad:3}/{total:<3} {kind}")
    total_removed = sum(done for done, _ in removed.values())
    total = sum(count for _, count in removed.values())
    print(f"total: {total_removed}/{total} secrets removed, {len(changed)}/{len(CLEAN)} clean lines changed")
    assert not misses, misses
    assert not changed, changed


@pytest.mark.parametrize("case", SECRETS, ids=[f"{i}-{c['kind']}" for i, c in enumerate(SECRETS)])
def test_secret_is_gone_in_every_mode(redactor: Redactor, case: dict[str, Any]) -> None:
    """Whole text, line by line and in byte blocks: the same output, no secret, and stable."""
    text = case["text"]
    out = redactor.redact(text)
    assert REDACTED in out
    assert not [secret for secret in case["secrets"] if secret in out]
    assert "".join(redactor.redact_lines(_lines(text))) == out
    blocks = [line.encode() for line in _lines(text)]
    assert b"".join(redactor.redact_blocks(blocks)).decode() == out
    assert redactor.redact(out) == out


@pytest.mark.parametrize("case", CLEAN, ids=[f"{i}-{c['kind']}" for i, c in enumerate(CLEAN)])
def test_clean_line_passes_unchanged(redactor: Redactor, case: dict[str, Any]) -> None:
    assert redactor.redact(case["text"]) == case["text"]
    assert "".join(redactor.redact_lines(_lines(case["text"]))) == case["text"]


def test_the_cli_removes_every_secret_end_to_end(redactor: Redactor) -> None:
    """The whole corpus through ``python -m kilo_loop redact`` (a real subprocess and pipe): the
    output is what ``Redactor.redact`` gives, with no secret left and every clean line intact."""
    text = "\n".join(case["text"] for case in [*SECRETS, *CLEAN]) + "\n"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-m", "kilo_loop", "redact"], input=text.encode(), capture_output=True,
        env=env, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode()
    assert out == redactor.redact(text)
    assert not [secret for case in SECRETS for secret in case["secrets"] if secret in out]
    assert all(case["text"] in out for case in CLEAN)
