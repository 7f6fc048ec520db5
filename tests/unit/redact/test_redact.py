"""The secret redactor: token formats, assignments, URLs, PEM blocks, things that must pass
unchanged, structured values, streaming, and properties (never raises, idempotent).

Fake credentials are assembled at runtime from parts, so no literal token sits in this file.
"""

from __future__ import annotations

import functools
import random
import re
import string
import tomllib
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kilo_loop.redact import REDACTED, Redactor, default_redactor, redact_stream
from kilo_loop.redact import _patterns as sp
from kilo_loop.redact._engine import Engine
from tests.support.paths import CORPORA

_RNG = random.Random(20240611)
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_UPPER_NUM = string.ascii_uppercase + string.digits


def _rand(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _mixed(n: int) -> str:
    """n random letters and digits, sure to hold both cases and a digit, like real keys."""
    return "aZ9" + _rand(_ALNUM, n - 3)


def _join(*parts: str) -> str:
    return "".join(parts)


# (name, secret text, expected redaction) — the expected form keeps the vendor prefix.
def _token_cases() -> list[tuple[str, str, str]]:
    bot_id = "123456789"
    return [
        ("anthropic", _join("sk", "-ant-", "api03-", _mixed(90)), "sk-ant-[REDACTED]"),
        ("openai legacy", _join("s", "k-", _mixed(48)), "sk-[REDACTED]"),
        ("openai project", _join("sk", "-proj-", _mixed(64)), "sk-[REDACTED]"),
        ("github ghp", _join("gh", "p_", _mixed(36)), "ghp_[REDACTED]"),
        ("github gho", _join("gh", "o_", _mixed(36)), "gho_[REDACTED]"),
        ("github ghu", _join("gh", "u_", _mixed(36)), "ghu_[REDACTED]"),
        ("github ghs", _join("gh", "s_", _mixed(36)), "ghs_[REDACTED]"),
        ("github ghr", _join("gh", "r_", _mixed(36)), "ghr_[REDACTED]"),
        ("github fine-grained", _join("github", "_pat_", _mixed(22), "_", _mixed(59)),
         "github_pat_[REDACTED]"),
        ("gitlab", _join("gl", "pat-", _mixed(20)), "glpat-[REDACTED]"),
        ("slack bot", _join("xo", "xb-", "1234567890-", _mixed(24)), "xoxb-[REDACTED]"),
        ("slack user", _join("xo", "xp-", "1234567890-", _mixed(24)), "xoxp-[REDACTED]"),
        ("slack app", _join("xa", "pp-1-", _mixed(30)), "xapp-[REDACTED]"),
        ("aws key id", _join("AK", "IA", _rand(_UPPER_NUM, 16)), "AKIA[REDACTED]"),
        ("aws sts id", _join("AS", "IA", _rand(_UPPER_NUM, 16)), "ASIA[REDACTED]"),
        ("stripe secret", _join("sk", "_live_", _mixed(24)), "sk_live_[REDACTED]"),
        ("stripe restricted", _join("rk", "_live_", _mixed(24)), "rk_live_[REDACTED]"),
        ("stripe publishable", _join("pk", "_live_", _mixed(24)), "pk_live_[REDACTED]"),
        ("stripe test", _join("sk", "_test_", _mixed(24)), "sk_test_[REDACTED]"),
        ("stripe webhook", _join("wh", "sec_", _mixed(32)), "whsec_[REDACTED]"),
        ("google api", _join("AI", "za", _mixed(35)), "AIza[REDACTED]"),
        ("google oauth", _join("ya", "29.", _mixed(60)), "ya29.[REDACTED]"),
        ("google client secret", _join("GOC", "SPX-", _mixed(28)), "GOCSPX-[REDACTED]"),
        ("hugging face", _join("h", "f_", _mixed(34)), "hf_[REDACTED]"),
        ("npm", _join("np", "m_", _mixed(36)), "npm_[REDACTED]"),
        ("telegram", _join(bot_id, ":", "AA", _mixed(33)), f"{bot_id}:[REDACTED]"),
        ("sendgrid", _join("S", "G.", _mixed(22), ".", _mixed(43)), "SG.[REDACTED]"),
        ("twilio api key", _join("S", "K", _rand(_HEX, 32)), "SK[REDACTED]"),
        ("mailgun", _join("ke", "y-", _rand(_HEX, 32)), "key-[REDACTED]"),
        ("mailchimp", _join(_rand(_HEX, 32), "-us", "12"), REDACTED),
        ("shopify", _join("shp", "at_", _rand(_HEX, 32)), "shpat_[REDACTED]"),
        ("pypi", _join("py", "pi-", "AgEIcHlwaS5vcmc", _mixed(60)), "pypi-[REDACTED]"),
        ("digitalocean", _join("do", "p_v1_", _rand(_HEX, 64)), "dop_v1_[REDACTED]"),
        ("linear", _join("lin", "_api_", _mixed(40)), "lin_api_[REDACTED]"),
        ("postman", _join("PM", "AK-", _rand(_HEX, 24), "-", _rand(_HEX, 34)), "PMAK-[REDACTED]"),
        ("groq", _join("gs", "k_", _mixed(52)), "gsk_[REDACTED]"),
        ("replicate", _join("r", "8_", _mixed(37)), "r8_[REDACTED]"),
        ("xai", _join("xa", "i-", _mixed(80)), "xai-[REDACTED]"),
        ("perplexity", _join("pp", "lx-", _mixed(48)), "pplx-[REDACTED]"),
        ("databricks", _join("da", "pi", _rand(_HEX, 32)), "dapi[REDACTED]"),
        ("square", _join("sq", "0atp-", _mixed(22)), "sq0atp-[REDACTED]"),
        ("age", _join("AGE-", "SECRET-KEY-1", _rand(_UPPER_NUM, 58)), "AGE-SECRET-KEY-1[REDACTED]"),
        ("supabase", _join("sb", "p_", _rand(_HEX, 40)), "sbp_[REDACTED]"),
        ("notion", _join("nt", "n_", _mixed(46)), "ntn_[REDACTED]"),
        ("atlassian", _join("ATA", "TT3", _mixed(60)), "ATATT3[REDACTED]"),
        ("jwt", _join("ey", "JhbGciOiJIUzI1NiJ9.", "ey", "JzdWIiOiIxMjM0NSJ9.", _mixed(43)), "eyJ[REDACTED]"),
        ("slack webhook", _join("https://hooks.", "slack.com/services/T0", _mixed(8), "/B0", _mixed(8), "/",
                                _mixed(24)), "https://hooks.slack.com/services/[REDACTED]"),
    ]


def _discord_token() -> str:
    import base64

    head = base64.b64encode(b"812345678901234567").decode().rstrip("=")
    return _join(head, ".", _mixed(6), ".", _mixed(38))


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


@pytest.mark.parametrize(("name", "secret", "expected"), _token_cases(), ids=[c[0] for c in _token_cases()])
def test_provider_tokens_keep_prefix_and_lose_the_secret(redactor: Redactor, name: str, secret: str,
                                                         expected: str) -> None:
    line = f"the agent printed {secret} in its log"
    out = redactor.redact(line)
    assert out == f"the agent printed {expected} in its log"
    assert secret not in out


def test_discord_bot_token_and_webhook(redactor: Redactor) -> None:
    token = _discord_token()
    assert redactor.redact(f"bot token {token} here") == f"bot token {REDACTED} here"
    hook = _join("https://discord.com/api/webhooks/", "123456789012345678/", _mixed(68))
    assert redactor.redact(hook) == f"https://discord.com/api/webhooks/123456789012345678/{REDACTED}"


def test_telegram_token_inside_a_bot_api_url(redactor: Redactor) -> None:
    token = _join("987654321:", "AA", _mixed(33))
    out = redactor.redact(f"POST https://api.telegram.org/bot{token}/sendMessage")
    assert out == f"POST https://api.telegram.org/bot987654321:{REDACTED}/sendMessage"


@pytest.mark.parametrize(("text", "expected"), [
    ("Authorization: Bearer abcDEF123456789xyz", "Authorization: Bearer [REDACTED]"),
    ('curl -H "Authorization: Bearer abcDEF123456789xyz" x', 'curl -H "Authorization: Bearer [REDACTED]" x'),
    ("header bearer abcDEF123456789xyz", "header bearer [REDACTED]"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"),
    ("sent Basic dXNlcjpwYXNzd29yZA== upstream", "sent Basic [REDACTED] upstream"),
    ('{"headers": {"Authorization": "Bearer abcDEF123456789xyz"}}',
     '{"headers": {"Authorization": "Bearer [REDACTED]"}}'),
])
def test_auth_headers_keep_the_scheme(redactor: Redactor, text: str, expected: str) -> None:
    assert redactor.redact(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # env files
    ("PASSWORD=hunter2", "PASSWORD=[REDACTED]"),
    ("export GITHUB_TOKEN=abc123def", "export GITHUB_TOKEN=[REDACTED]"),
    ("ANTHROPIC_API_KEY=abc123def", "ANTHROPIC_API_KEY=[REDACTED]"),
    ("OPENAI_KEY=abc123def", "OPENAI_KEY=[REDACTED]"),
    ("DB_PASS=hunter2", "DB_PASS=[REDACTED]"),
    ("client_secret=abc123", "client_secret=[REDACTED]"),
    # JSON, also JSON inside a JSON string
    ('{"password": "hunter2", "user": "bob"}', '{"password": "[REDACTED]", "user": "bob"}'),
    ('{"apiKey":"abc","access_key":"def","accessToken":"ghi"}',
     '{"apiKey":"[REDACTED]","access_key":"[REDACTED]","accessToken":"[REDACTED]"}'),
    ('{"input":"{\\"password\\": \\"hunter2\\"}"}', '{"input":"{\\"password\\": \\"[REDACTED]\\"}"}'),
    ('{"pin_password": 1234}', '{"pin_password": [REDACTED]}'),
    # YAML / INI / TOML: the value runs to the end of the line; a trailing comment stays
    ("password: correct horse battery staple", "password: [REDACTED]"),
    ("  - secret: abc # rotate monthly", "  - secret: [REDACTED] # rotate monthly"),
    ("password = 12345678901234  # pragma: allowlist secret",
     "password = [REDACTED]  # pragma: allowlist secret"),
    ('auth_token = "abc123"', 'auth_token = "[REDACTED]"'),
    ("SUPER_SECRET_VALUES = 'aaa', 'bbb'", "SUPER_SECRET_VALUES = '[REDACTED]', '[REDACTED]'"),
    ('    password: str = "hunter2"', '    password: str = "[REDACTED]"'),
    ('def f(token: str = "abc123"):', 'def f(token: str = "[REDACTED]"):'),
    ("password: Hunter2", "password: [REDACTED]"),
    ('STRIPE_KEY = "abc123def"', 'STRIPE_KEY = "[REDACTED]"'),
    # inline: one token
    ("https://api.example.com/v1?token=abc123&x=1", "https://api.example.com/v1?token=[REDACTED]&x=1"),
    ("login with password: hunter2 then continue", "login with password: [REDACTED] then continue"),
    ("//registry.npmjs.org/:_authToken=abc123", "//registry.npmjs.org/:_authToken=[REDACTED]"),
    # CLI flags
    ("deploy --token xyz123 --verbose", "deploy --token [REDACTED] --verbose"),
    ("deploy --password=hunter2 --user bob", "deploy --password=[REDACTED] --user bob"),
    ("--api-key 'abc def' --x", "--api-key '[REDACTED]' --x"),
    ("curl -u admin:s3cret https://x", "curl -u admin:[REDACTED] https://x"),
    # headers
    ("x-api-key: abcdef123456", "x-api-key: [REDACTED]"),
    ("Cookie: session=abc123; other=def", "Cookie: [REDACTED]"),
])
def test_secret_named_assignments(redactor: Redactor, text: str, expected: str) -> None:
    assert redactor.redact(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("https://user:pass@host.com/path", "https://user:[REDACTED]@host.com/path"),
    ("postgres://app:pw@db:5432/app", "postgres://app:[REDACTED]@db:5432/app"),
    ("redis://:s3cret@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"),
    ("mongodb+srv://u:p%40ss@cluster0.example.net/db", "mongodb+srv://u:[REDACTED]@cluster0.example.net/db"),
])
def test_url_userinfo_keeps_the_user(redactor: Redactor, text: str, expected: str) -> None:
    assert redactor.redact(text) == expected


def _pem(kind: str = "RSA ") -> tuple[str, str]:
    begin, end = f"-----BEGIN {kind}PRIVATE KEY-----", f"-----END {kind}PRIVATE KEY-----"
    body = "\n".join(_mixed(64) for _ in range(3))
    return f"{begin}\n{body}\n{end}", f"{begin}\n{REDACTED}\n{REDACTED}\n{REDACTED}\n{end}"


@pytest.mark.parametrize("kind", ["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "])
def test_pem_private_key_body_is_redacted_whole(redactor: Redactor, kind: str) -> None:
    block, expected = _pem(kind)
    assert redactor.redact(f"key follows:\n{block}\ndone\n") == f"key follows:\n{expected}\ndone\n"


def test_pem_inside_a_json_string_and_unterminated(redactor: Redactor) -> None:
    begin, end = "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----"
    body = _mixed(40)
    assert (redactor.redact(f'{{"key": "{begin}\\n{body}\\n{end}\\n", "n": 1}}')
            == f'{{"key": "{begin}{REDACTED}{end}\\n", "n": 1}}')
    # an unterminated block is redacted while its lines look like key material, then stops
    out = redactor.redact(f"{begin}\n{body}\n{body}\nthen ordinary prose, with spaces.\n")
    assert out == f"{begin}\n{REDACTED}\n{REDACTED}\nthen ordinary prose, with spaces.\n"


def test_pem_after_a_secret_named_key(redactor: Redactor) -> None:
    begin, end = "-----BEGIN EC PRIVATE KEY-----", "-----END EC PRIVATE KEY-----"
    text = f"private_key: {begin}\n  {_mixed(40)}\n  {end}\n"
    assert redactor.redact(text) == f"private_key: {begin}\n  {REDACTED}\n  {end}\n"


@pytest.mark.parametrize(("text", "expected"), [
    ("password:\n  secure: abc\n  nested:\n    deep: x\nnext: 1",
     "password:\n  secure: [REDACTED]\n  nested:\n    deep: [REDACTED]\nnext: 1"),
    ("secrets_for_no_one_to_find =\n    hunter2\n    password123\n\n    after_blank",
     "secrets_for_no_one_to_find =\n    [REDACTED]\n    [REDACTED]\n\n    after_blank"),
    ("password: |\n  line one\n  line two\nfoo: bar", "password: |\n  [REDACTED]\n  [REDACTED]\nfoo: bar"),
    ("password: # the db one\n  hunter2\nx: 1", "password: # the db one\n  [REDACTED]\nx: 1"),
    ("token:\n  - abc\n  - def\n", "token:\n  - [REDACTED]\n  - [REDACTED]\n"),
    ('"secrets": [\n    "abc",\n    "def"\n]', '"secrets": [\n    "[REDACTED]",\n    "[REDACTED]"\n]'),
])
def test_empty_value_hides_the_indented_block(redactor: Redactor, text: str, expected: str) -> None:
    assert redactor.redact(text) == expected


_SHA512 = "Xk7Bd4S2NJ/aGw6xOBk2SfRH8p9Ve6ZJ7A7sVbq3zJ+Q0MwPvuYqI4Da1h5zZ0yCWbfYbKnE6qRJb3S5f3rL+A=="


@pytest.mark.parametrize("text", [
    "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    '"snapshot":"4b825dc642cb6eb9a060e54bf8d69288fbee4904","hash":"8b1118b376c313ed420e5133ba91307817ed52c2"',
    "id: 203db13e-70c7-462b-9a3d-bf32640cb0be",
    '{"runId": "203DB13E-70C7-462B-9A3D-BF32640CB0BE"}',
    '"sessionID":"ses_4f3a1b2c3d4eAbCdEfGhIjKlMn","messageID":"msg_9f8e7d6c5b4aZyXwVuTsRqPo"',
    '"callID":"toolu_01ABCdefGHIjklMNOpqrSTUv","id":"prt_a1b2c3d4e5f6G7H8I9J0K1L2"',
    f'"integrity": "sha512-{_SHA512}",',
    "  integrity sha1-2aXbSmkxz8JfSH0+d3KB6DqVXwQ=",
    f"resolution: {{integrity: sha512-{_SHA512}}}",
    "--hash=sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "The token budget was exceeded; the secret to success is testing. Passwords are hashed.",
    "the bearer of bad news; bearer authentication; basic functionality",
    '{"tokens":{"input":1234,"output":56,"reasoning":0},"max_tokens":4096,"token_count":5}',
    "password_min_length: 8\npassword_file: /run/secrets/db\ntoken_type: Bearer",
    "password: ${DB_PASSWORD}\ntoken: {{ secrets.TOKEN }}\napi_key: <your-api-key>\nsecret: ********",
    "password: null\ntoken: None\nauth: false",
    '"basic-auth": "^2.0.1", "jsonwebtoken": "~9.0.0"',
    "PWD=/work/main\nOLDPWD=/home/dev",
    "use crate::token::Token;\nauth::login(user)",
    "  token = await getSessionToken(user)\napi_key = os.environ['API_KEY']",
    "interface Login { user: string; password: string }",
    # code, not data: variables, references, annotations, lookup-key constants, usage text
    "self.password = password\nlogin(user, password=password)\napi_key=settings.API_KEY",
    "def send(self, auth: AuthTypes | None = None, token: Optional[str] = None) -> None:",
    "    auth: AuthTypes | UseClientDefault = USE_CLIENT_DEFAULT,\n    cookie: str | None",
    'CACHE_KEY = "user_profile"\ncookie = "cookie"',
    "Sets an appropriate 'Cookie:' header; send `Authorization: Bearer` or `?token=` once.",
    "usage: tool --token <TOKEN> --auth [USER PASS]",
    "git clone https://github.com/owner/repo.git && ssh://git@host/x && http://localhost:3000/@fs/x",
    "model: anthropic/claude-sonnet-4-20250514 and claude-3-5-sonnet-20241022",
    "task-runner sk-learn risk-assessment-2024-version-numbers",
    "title: FixTypeErrorInUserProfileComponent",
    "Über-naïve café — 日本語のテキスト, emoji 🎉 and tabs\tare fine",
])
def test_ordinary_text_passes_unchanged(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text) == text


def test_generic_random_value_after_any_key(redactor: Redactor) -> None:
    value = "gX69YO4CvBsVjzAwYxdGyDd30t5+9ez31gKATtj4"
    assert redactor.redact(f"mimi={value}") == "mimi=[REDACTED]"
    assert redactor.redact(f'key="{value}"') == 'key="[REDACTED]"'
    # a JWT after a key is left to the JWT rule, which keeps its prefix
    jwt = _join("ey", "JhbGciOiJIUzI1NiJ9.", "ey", "JzdWIiOiIxMjM0NSJ9.", _mixed(43))
    assert redactor.redact(f"id_hint: {jwt}") == "id_hint: eyJ[REDACTED]"


def test_secret_inside_code_expression_is_still_caught(redactor: Redactor) -> None:
    token = _join("gh", "p_", _mixed(36))
    assert redactor.redact(f'token = get_token("{token}")') == 'token = get_token("ghp_[REDACTED]")'


@pytest.mark.parametrize("line", [
    "echo password=hunter2secret", "x token=hunter2secret", "a secret=hunter2secret", "then password=abc9password",
])
def test_a_value_that_ends_in_a_secret_word_is_still_a_value(redactor: Redactor, line: str) -> None:
    """Only a name with a joint (``api_key``, ``apiKey``) is taken for a variable: digits join nothing."""
    assert redactor.redact(line) == line.rsplit("=", 1)[0] + "=[REDACTED]"


@pytest.mark.parametrize("line", ['"X-Api-Key": api_key,', 'headers={"X-Api-Key": apiKey}'])
def test_a_variable_named_for_a_secret_is_code(redactor: Redactor, line: str) -> None:
    assert redactor.redact(line) == line


def test_crlf_lines_keep_their_line_endings(redactor: Redactor) -> None:
    assert redactor.redact("password=abc\r\nuser=bob\r\n") == "password=[REDACTED]\r\nuser=bob\r\n"


# --- structured values ------------------------------------------------------------------------


def test_redact_value_recurses_and_judges_keys(redactor: Redactor) -> None:
    token = _join("gh", "p_", _mixed(36))
    value = {
        "password": "hunter2",
        "apiKey": "plain-looking",
        "Authorization": "Bearer abc",
        "pin_password": 1234,
        "token_count": 12,
        "tokens": {"input": 5, "output": 3},
        "secrets": ["a", "b"],
        "enabled": True,
        "nested": [{"command": f"export TOKEN={token}"}, ("x", f"see {token}")],
        "url": "https://u:p@h/x",
        "empty_secret": "",
        3: "numeric key",
    }
    assert redactor.redact_value(value) == {
        "password": REDACTED,
        "apiKey": REDACTED,
        "Authorization": f"Bearer {REDACTED}",
        "pin_password": REDACTED,
        "token_count": 12,
        "tokens": {"input": 5, "output": 3},
        "secrets": [REDACTED, REDACTED],
        "enabled": True,
        "nested": [{"command": "export TOKEN=[REDACTED]"}, ("x", "see ghp_[REDACTED]")],
        "url": "https://u:[REDACTED]@h/x",
        "empty_secret": "",
        3: "numeric key",
    }
    assert value["password"] == "hunter2"  # the input is not mutated


def test_redact_value_survives_cycles_and_odd_objects(redactor: Redactor) -> None:
    loop: list[object] = []
    loop.append(loop)
    out = redactor.redact_value(loop)
    assert isinstance(out, list)
    marker = object()
    assert redactor.redact_value({"k": marker})["k"] is marker
    assert redactor.redact_value(None) is None


def test_disabled_redactor_is_the_identity() -> None:
    off = Redactor(enabled=False)
    text = "password=hunter2 " + _join("gh", "p_", _mixed(36))
    assert off.redact(text) == text
    assert list(off.redact_lines([text, "x"])) == [text, "x"]
    value = {"password": "hunter2"}
    assert off.redact_value(value) is value


def test_extra_patterns_are_applied_and_validated() -> None:
    custom = Redactor(extra_patterns=[r"ACME-[0-9]{6}", r"x*"])
    assert custom.redact("ticket ACME-123456 and password=a") == "ticket [REDACTED] and password=[REDACTED]"
    assert list(custom.redact_lines(["ACME-000001\n"])) == ["[REDACTED]\n"]
    with pytest.raises(ValueError, match="invalid extra redaction pattern"):
        Redactor(extra_patterns=["(unclosed"])


def test_never_raises_on_odd_input(redactor: Redactor) -> None:
    lone = "lone \ud800 surrogate"
    assert redactor.redact(f"{lone} password=abc") == f"{lone} password=[REDACTED]"
    assert redactor.redact(b"token=abc" if False else "") == ""
    assert redactor.redact(None) == ""  # type: ignore[arg-type]
    assert redactor.redact(b"password=abc") == "password=[REDACTED]"  # type: ignore[arg-type]
    assert redactor.redact("\x00\x01 password=\x00abc") == "\x00\x01 password=[REDACTED]"
    long_line = "a=" + "Ab1" * 200_000
    assert redactor.redact(long_line) == "a=[REDACTED]"


def test_default_redactor_is_cached_and_redact_stream_uses_it() -> None:
    assert default_redactor() is default_redactor()
    assert list(redact_stream(["token=abc\n", "ok\n"])) == ["token=[REDACTED]\n", "ok\n"]


# --- streaming --------------------------------------------------------------------------------


def test_redact_lines_is_lazy() -> None:
    consumed: list[str] = []

    def source() -> Iterator[str]:
        for line in ("password=a\n", "b\n", "c\n"):
            consumed.append(line)
            yield line

    stream = Redactor().redact_lines(source())
    assert next(stream) == "password=[REDACTED]\n"
    assert consumed == ["password=a\n"]


def test_redact_lines_carries_blocks_across_lines(redactor: Redactor) -> None:
    block, expected = _pem()
    text = f"a\npassword:\n  one\n  two\nb: 1\n{block}\nafter\n"
    lines = text.splitlines(keepends=True)
    out = list(redactor.redact_lines(lines))
    assert len(out) == len(lines)
    assert "".join(out) == redactor.redact(text)
    assert "".join(out) == f"a\npassword:\n  {REDACTED}\n  {REDACTED}\nb: 1\n{expected}\nafter\n"


def test_lines_without_newlines_are_still_lines(redactor: Redactor) -> None:
    block, expected = _pem()
    assert list(redactor.redact_lines(block.split("\n"))) == expected.split("\n")


# --- engines and properties -------------------------------------------------------------------


def _sample() -> str:
    cases = "\n".join(f"{name}: {secret}" for name, secret, _ in _token_cases())
    block, _ = _pem()
    return f"{cases}\n{block}\npassword:\n  x\nPASSWORD=abc\nhttps://u:p@h\nplain prose.\n"


_ADVERSARIAL = tomllib.loads(
    (CORPORA / "secrets_adversarial.toml").read_text(encoding="utf-8")
)["secret"]


def test_re2_and_python_re_engines_agree() -> None:
    text = _sample() + "\n".join(case["text"] for case in _ADVERSARIAL)
    fast, _ = Engine(use_re2=True).redact(text)
    slow, _ = Engine(use_re2=False).redact(text)
    assert fast == slow
    assert fast != text


@pytest.mark.parametrize(("pattern", "loose"), [
    ("\\b(gh[pousr]_)[A-Za-z0-9]{36,}", "(gh[pousr]_)[A-Za-z0-9]"),  # a trailing run: its first character
    ("(AKIA)[A-Z0-9]{16}\\b", "(AKIA)[A-Z0-9]"),
    ("x[^\\]a]+", "x[^\\]a]"),
    ("(?:-p)([^ ]+)", "(?:-p)([^ ])"),
    ("(?:-p)([^ ]+)@", "(?:-p)([^ ]+)@"),  # not the last item, or a "*" run: left as they are
    ("k=[a-z]*", "k=[a-z]*"),
])
def test_loosening_counts_bounds_and_trailing_runs(pattern: str, loose: str) -> None:
    assert sp._loosen(pattern) == loose


def test_loose_scan_patterns_find_every_exact_match() -> None:
    """The RE2 pass runs loosened patterns; wherever an exact rule matches, its loose form must
    match at the same start, or the secret would never reach the exact check."""
    hook = _join("https://discord.com/api/webhooks/", "123456789012345678/", _mixed(68))
    extras = [_discord_token(), hook, "mimi=gX69YO4CvBsVjzAwYxd9Gy", "y: abcdefghij12Xyz12345Ab",
              "x=vh987tyw9ehy8ghis7vwyhiwbwitefy7w3ASDG", "curl -u a:b", "--token abc",
              "Bearer abcDEF123456789xyz", "Basic dXNlcjpwYXNzd29yZA=="]
    text = _sample() + "\n".join(extras) + "\n" + "\n".join(case["text"] for case in _ADVERSARIAL)
    for rule in sp.RULES:
        exact = re.compile(rule.pattern)
        loose = re.compile(rule.scan or sp._loosen(rule.pattern))
        matches = list(exact.finditer(text))
        assert matches, f"the sample exercises {rule.name}"
        for match in matches:
            assert loose.match(text, match.start()), (rule.name, match.group())


_SECRETISH = st.sampled_from([
    "password", "token", "secret", "api_key", "Bearer ", "basic ", "=", ": ", ":", "\"", "'", "\n", " ",
    "  ", "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "https://", "u:p@", "--token ",
    "ghp_", "sk-", "AKIA", "eyJ", "[REDACTED]", "\\\"", "#", "|", "-u ", "xoxb-", "\r\n", "\t", "{", "}",
    "://", "--password=", "-----BEGIN RSA PRIVATE KEY-----", "Cookie: ", "123456789:AA",
    "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8",
    "Authorization: ", "export ", "- ", "(", ")", "[", "]", "$VAR", "null", ",", "@", ".",
    "\x1b[0m", "\x1b[32m", "mysql -p", "sshpass -p ", "machine h login u password ", "password ",
    "user,password\n", "a,b\n", ";", "\t", "h:5432:db:u:", "&sig=", "hvs.", "%3D", "%3A%20", "%20",
    "api-1  | ", "[pod/x] ", "\"MIIEvAbc\\n\" +", "-passin pass:", "X-Amz-Signature=", "datadog ",
    "0123456789abcdef0123456789abcdef", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzEXAMPLEKEY",
    "UEFTU1dPUkQ9aHVudGVyMgpBUElfVE9LRU49YWJjZGVmZ2hpams=", "Hunter2=",
])
_WORDISH = st.text(alphabet=_ALNUM + "+/_-.@", max_size=40)
_TEXT = st.lists(st.one_of(_SECRETISH, _WORDISH), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_TEXT, st.text(max_size=200)))
def test_property_never_raises_and_is_idempotent(text: str) -> None:
    redactor = default_redactor()
    once = redactor.redact(text)
    assert isinstance(once, str)
    assert redactor.redact(once) == once


@functools.cache
def _bare_engine() -> Engine:
    return Engine()


@settings(max_examples=300, deadline=None)
@given(_TEXT)
@example("  - Authorization%3D'x1y2' | None\n")
def test_property_the_engine_itself_never_fails(text: str) -> None:
    """``Redactor`` fails closed, which hides an internal error behind ``[REDACTED]`` (a whole
    CLI block of them): the engine under it must not raise at all."""
    _bare_engine().scan(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize(("text", "expected"), [
    ("password%3D'x1y2'&a=1", "password%3D'[REDACTED]'&a=1"),
    ("?auth%3D", "?auth%3D"),
    ("token%3D%26x", "token%3D%26x"),
])
def test_percent_encoded_separator_before_a_quote_or_nothing(redactor: Redactor, text: str, expected: str) -> None:
    assert redactor.redact(text) == expected
    assert redactor.redact(expected) == expected


def _lines(text: str) -> list[str]:
    """Split after each "\\n" only, the way a pipe or a log file is read (no "\\r" breaks)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


@settings(max_examples=200, deadline=None)
@given(_TEXT)
def test_property_streaming_equals_whole_text(text: str) -> None:
    redactor = default_redactor()
    assert "".join(redactor.redact_lines(_lines(text))) == redactor.redact(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.ascii_lowercase + " .,!?'\n", max_size=300))
def test_property_text_without_secret_characters_is_unchanged(text: str) -> None:
    assert default_redactor().redact(text) == text


@settings(max_examples=200, deadline=None)
@given(_TEXT, st.lists(st.integers(min_value=1, max_value=6), max_size=20))
def test_property_blocks_of_lines_equal_whole_text(text: str, sizes: list[int]) -> None:
    """``redact_blocks`` (the CLI's path) over any grouping of whole lines gives ``redact``'s result."""
    lines = [line.encode("utf-8", "surrogatepass") for line in _lines(text)]
    blocks, at = [], 0
    for size in [*sizes, len(lines)]:
        if at < len(lines):
            blocks.append(b"".join(lines[at:at + size]))
            at += size
    out = b"".join(default_redactor().redact_blocks(blocks)).decode("utf-8", "surrogatepass")
    assert out == default_redactor().redact(text)


# --- the engine's shortcuts decide what the full judgement decides ---------------------------

_VALUE_CHARS = string.ascii_letters + string.digits + "_+/=-.$<>%[]{}*xX ,;:'\"" + "\u2022"


@settings(max_examples=3000, deadline=None)
@given(
    value=st.one_of(
        st.text(alphabet=_VALUE_CHARS, max_size=40),
        st.text(alphabet=string.ascii_letters + string.digits + "_+/=-", min_size=1, max_size=60),
    ),
    key=st.sampled_from(["password", "GITHUB_TOKEN", "api_key", "CACHE_KEY", "token", "x1y2", "Abc123"]),
)
def test_the_plain_token_shortcut_judges_a_value_as_every_question_does(value: str, key: str) -> None:
    from kilo_loop.redact._values import _judged_edit, value_edit

    data = b"k=" + value.encode() + b"\n"
    end = len(data) - 1
    assert value_edit(data, 2, end, key) == _judged_edit(data, 2, end, key)


def test_short_strings_redact_the_same_every_time_and_their_results_stay_bounded() -> None:
    from kilo_loop.redact import _redactor as engine

    redactor = Redactor()
    token = "gh" + "p_" + "aB3" * 12
    for _ in range(3):
        assert redactor.redact(f"token={token}") == "token=[REDACTED]"
        assert redactor.redact("completed") == "completed"
    assert Redactor(extra_patterns=[r"complete\w*"]).redact("completed") == REDACTED
    assert Redactor(enabled=False).redact(f"token={token}") == f"token={token}"
    for n in range(engine._SHORT_ENTRIES + 10):
        redactor.redact(f"item {n}")
    assert len(redactor._short) <= engine._SHORT_ENTRIES
    assert redactor.redact(f"token={token}") == "token=[REDACTED]"
