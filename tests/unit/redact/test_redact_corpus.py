"""The redactor over Yelp detect-secrets' fixtures (``tests/corpora/detect-secrets/test_data``,
Apache-2.0, copied verbatim with its LICENSE).

Every file of the corpus is listed below with exactly the lines redaction changes (line number →
expected text); every other line must come through byte-identical.  What changes, and why:

* real findings: AWS keys, the basic-auth URL, the OpenSSH private key body, passwords/secrets in
  config.env/.ini/.yaml/.md, every each_secret.py example but the ``DEADBEEF`` red herring;
* a YAML tag before a value stays (``!!binary [REDACTED]``): it says how to read the value, not what it is;
* ``# pragma: allowlist secret`` is not honoured: an allow-listed secret is still hidden;
* values under a secret-named key are hidden whatever they look like: ``SUPER_SECRET_VALUE`` in
  ``files/tmp/file_with_no_secrets.py`` (an ordinary sentence), ``hashed_secret`` digests in
  ``baseline.file`` and ``sample.diff``, the ``detect-secrets = …`` entry point in ``sample.diff``
  (the key ends in "secrets"), and everything indented under ``credentials:`` in config.yaml;
* ``allowlisted_id`` in config.yaml, ``id`` in each_secret.py and ``foreign_key_id`` in config.ini
  hold random-looking values (mixed case, scattered digits) and are hidden by the generic rule
  whatever the key is called (detect-secrets skips ``*_id`` keys; the redactor does not).

Left alone on purpose: short or hex-only strings outside secret-named keys (``len("012345678a")``
and ``"2b00042f…"`` in sample.diff, ``keyA``/``keyB`` in config.ini — a hex digest cannot be told
from a git SHA or a content hash, which must pass), the UUID, ``DEADBEEF`` and the word list.
"""

from __future__ import annotations

import re

import pytest

from kilo_loop.redact import REDACTED, Redactor
from tests.support.paths import CORPORA

DATA = CORPORA / "detect-secrets" / "test_data"

R = REDACTED
UNCHANGED: dict[int, str] = {}
EXPECTED: dict[str, dict[int, str]] = {
    "config.env": {1: f"mimi={R}"},
    "config.ini": {
        2: f"password = {R}",
        10: f"aws_secret_key = {R}",
        26: f"password = {R}  # pragma: allowlist secret",
        32: f"real_secret_which_isnt_an_i_d = {R}",
        33: f"foreign_key_id = {R}",
    },
    "config.md": {10: f'key="{R}"'},
    "config.yaml": {
        2: f"    some_value_here: {R}",
        3: f"    other_value_here: {R}",
        5: f"        value: {R}",
        6: f"        other_value: {R}",
        12: f"test_agent::allowlisted_api_key: '{R}'  # pragma: allowlist secret",
        13: f"low_entropy_binary_secret: !!binary {R}",
        16: f"allowlisted_id: '{R}'",
    },
    "config2.yaml": {2: f"high_entropy_hex_binary_secret: !!binary {R}"},
    "each_secret.py": {
        2: f"id = '{R}'",
        4: f"base64_secret = '{R}'",
        5: f"hex_secret = '{R}'",
        6: f"basic_auth = '{R}'",
        8: f"aws_access_key = '{R}'",
        9: f"aws_secret_access_key = '{R}'",
    },
    "files/file_with_custom_secrets.py": UNCHANGED,
    "files/file_with_no_secrets.py": UNCHANGED,
    "files/file_with_secrets.py": {
        3: f"SUPER_SEECRET_VALUE = '{R}'",
        4: f"VERY_SECRET_TOO = '{R}'  # pragma: allowlist secret",
    },
    "files/private_key": {2: R},
    "files/tmp/__init__.py": UNCHANGED,
    "files/tmp/file_with_no_secrets.py": {3: f"SUPER_SECRET_VALUE = '{R}'"},
    "files/tmp/file_with_secrets.py": {3: f"SUPER_SECRET_VALUES = '{R}', '{R}'"},
    "only_comments.yaml": UNCHANGED,
    "performance/best-songs.txt": UNCHANGED,
    "performance/long-file.test.json": UNCHANGED,
    "performance/long-lines.test.json": UNCHANGED,
    "sample.diff": {
        59: f"             'detect-secrets = {R}'",
        69: f"             'detect-secrets = {R}'",
        72: f'+        "hashed_secret": "{R}",',
    },
    "short_files/first_line.php": {1: f"secret = '{R}'"},
    "short_files/last_line.ini": {3: f"    {R}", 4: f"    {R}", 5: f"    {R}"},
    "short_files/middle_line.yml": {4: f"        secure: {R}"},
    "word_list.txt": UNCHANGED,
}

# Secrets that appear in the fixtures and must be gone after redaction (provider-shaped ones are
# split so that this file itself holds no scannable token).
KNOWN_SECRETS = {
    "config.env": ["gX69YO4CvBsVjzAwYxdGyDd30t5+9ez31gKATtj4"],
    "config.ini": [
        "123456789a1234", "23456789a1", "12345678901234", "vh987tyw9ehy8ghis7vwyhiwbwitefy7w3ASDGYDGUASDG",
    ],
    "config.md": ["ToCynx5Se4e2PtoZxEhW7lUJcOX15c54"],
    "config.yaml": [
        "AK" + "IATESTTESTTESTTEST", "ToCynx5Se4e2PtoZxEhW7lUJcOX15c54",
        "MjNjcnh1IDJieXJpdXYyeXJpaTJidnl1MnI4OXkyb3UwMg",
    ],
    "config2.yaml": ["MmIwMDA0MmY3NDgxYzdiMDU2YzRiNDEwZDI4ZjMzY2Y"],
    "each_secret.py": [
        "YW1pYWx3YXlzZ2VuZXJhdGluZ3Bhe", "c2VjcmV0IG1lc3NhZ2Ugc28",
        "8b1118b376c313ed420e5133ba91307817ed52c2",
        "whywouldyouusehttpforpasswords", "AK" + "IAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
    ],
    "files/file_with_secrets.py": ["c3VwZXIgbG9uZyBzdHJpbmcg", "f6CGV4aMM9zedoh3OUNbSakBymo7yplB"],
    "files/private_key": ["somethingSuperRandomAndSecretHereThatShouldNeverBeShared"],
    "files/tmp/file_with_secrets.py": [
        "60b725f10c9c85c70d97880dfe8191b3", "3b5d5c3712955042212316173ccf37be",
    ],
    "short_files/first_line.php": ["notHighEnoughEntropy"],
    "short_files/last_line.ini": ["hunter2", "password123", "BEEF0123456789a"],
    "short_files/middle_line.yml": ["thequickbrownfoxjumpsoverthelazydog"],
}


def _corpus_files() -> list[str]:
    return sorted(str(p.relative_to(DATA)) for p in DATA.rglob("*") if p.is_file())


def _read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


def test_every_corpus_file_has_an_expectation() -> None:
    assert set(_corpus_files()) == set(EXPECTED) | {"baseline.file"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exactly_the_expected_lines_change(redactor: Redactor, name: str) -> None:
    original = _read(name)
    redacted = redactor.redact(original)
    expected = original.splitlines()
    for number, line in EXPECTED[name].items():
        assert expected[number - 1] != line, f"{name}:{number} is already in its expected form"
        expected[number - 1] = line
    assert redacted.splitlines() == expected
    assert redacted.endswith("\n") == original.endswith("\n")


@pytest.mark.parametrize("name", sorted(KNOWN_SECRETS))
def test_known_secrets_are_gone(redactor: Redactor, name: str) -> None:
    original = _read(name)
    redacted = redactor.redact(original)
    for secret in KNOWN_SECRETS[name]:
        assert secret in original
        assert secret not in redacted


def test_private_key_markers_stay_and_the_body_goes(redactor: Redactor) -> None:
    assert redactor.redact(_read("files/private_key")).splitlines() == [
        "-----BEGIN OPENSSH PRIVATE KEY-----", REDACTED, "-----END OPENSSH PRIVATE KEY-----",
    ]


def test_scanner_baseline_only_loses_its_hashed_secrets(redactor: Redactor) -> None:
    original = _read("baseline.file")
    hashed = re.compile(r'("hashed_secret": ")[0-9a-f]{40}(")')
    assert len(hashed.findall(original)) == 29
    assert redactor.redact(original) == hashed.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(2)}", original)


@pytest.mark.parametrize("name", _corpus_files())
def test_streaming_and_idempotence_on_the_corpus(redactor: Redactor, name: str) -> None:
    original = _read(name)
    redacted = redactor.redact(original)
    assert "".join(redactor.redact_lines(original.splitlines(keepends=True))) == redacted
    assert redactor.redact(redacted) == redacted
