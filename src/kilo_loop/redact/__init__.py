"""Redaction: the one boundary every event line, state file, report, archived prompt/handoff,
console line, dashboard stream item and notification passes through (``Redactor``).

What is replaced, and with what (the secret part always becomes ``[REDACTED]``):

* HTTP auth: ``Bearer [REDACTED]``, ``Basic [REDACTED]`` (the scheme is kept).
* Provider tokens keep their recognisable prefix: ``sk-ant-[REDACTED]``, ``sk-[REDACTED]``,
  ``ghp_[REDACTED]`` (``gho_ ghu_ ghs_ ghr_ github_pat_`` alike), ``glpat-[REDACTED]``,
  ``xoxb-[REDACTED]``, ``AKIA[REDACTED]``/``ASIA[REDACTED]``, ``eyJ[REDACTED]`` (JWT),
  ``sk_live_[REDACTED]`` (``rk_live_ pk_live_ *_test_ whsec_``), ``AIza[REDACTED]``, ``ya29.``,
  ``GOCSPX-``, ``hf_[REDACTED]``, ``npm_[REDACTED]``, ``SG.[REDACTED]`` (SendGrid),
  ``SK[REDACTED]`` (Twilio), ``123456789:[REDACTED]`` (Telegram; the bot id stays),
  ``https://hooks.slack.com/services/[REDACTED]``, Discord webhooks (id kept) and bot tokens,
  Mailgun, Mailchimp, Shopify, PyPI, DigitalOcean, Linear, Postman, Groq, Replicate, xAI,
  Perplexity, Databricks, Square, age, Supabase, Notion, Atlassian, Vault (``hvs.[REDACTED]``),
  Tailscale, Pulumi, Grafana, New Relic, Dynatrace, and more of gitleaks' prefixes (Docker Hub,
  Doppler, Sentry, PlanetScale, RubyGems, Heroku, JFrog, Alibaba, OpenShift, Facebook, …); an
  Entra ID client secret from its ``8Q~``.
* URL signatures keep the parameter: Azure SAS ``sig=[REDACTED]``, S3 presigned
  ``X-Amz-Signature=[REDACTED]`` / ``X-Amz-Security-Token=``, v2 ``Signature=``.
* Passwords given as command arguments: ``mysql -p[REDACTED]``, ``sshpass -p [REDACTED]``,
  ``docker login -p [REDACTED]``, ``-passin pass:[REDACTED]``, the password options of mongosh,
  redis-cli, sqlcmd, ldapsearch, 7z/zip, keytool (``-storepass``) and redis (``--requirepass``,
  ``requirepass`` in redis.conf), HTML form fields (``name="csrf_token" value=…``), ``.netrc`` (``machine h login u
  password [REDACTED]``) and ``.pgpass`` lines (``host:port:db:user:[REDACTED]``); Datadog
  keys (32/40 hex) named in prose.
* Secrets handed over in code: ``os.Setenv("TOKEN", "[REDACTED]")``, ``environ["API_KEY"] = …``,
  setters and builders (``.setApiKey("[REDACTED]")``, ``.password("[REDACTED]")``), a user and a
  password (``new UsernamePasswordCredentials("u", "[REDACTED]")``, ``auth=("u", "[REDACTED]")``,
  ``smtp.login(u, "[REDACTED]")``), Go and Oracle DSNs (``u:[REDACTED]@tcp(…)``, ``u/[REDACTED]@db``),
  ODBC's braced ``Pwd={[REDACTED]}``; in command lines: ``config set KEY [REDACTED]``, ``setenv``,
  ``echo [REDACTED] | docker login --password-stdin`` (``sudo -S``, ``chpasswd``), ``htpasswd -b``,
  secret-store values (``gh secret set N --body [REDACTED]``), argv lists (``"--password", "[REDACTED]"``),
  single-dash and camelCase flags (``-token``, ``-apiKey``); entries whose name and value are apart
  (``- name: DB_PASSWORD`` / ``value: [REDACTED]``, ``ParameterKey=…,ParameterValue=``, a Terraform
  variable's ``default``); TOML/Python triple-quoted strings under a secret-named key.
* Secret-named assignments keep key, separator and quotes: ``password=[REDACTED]``,
  ``"apiKey": "[REDACTED]"``, ``token: [REDACTED]``, ``export GITHUB_TOKEN=[REDACTED]``,
  ``Authorization: Bearer [REDACTED]``, ``--token [REDACTED]``, ``--password=[REDACTED]``,
  ``curl -u user:[REDACTED]``.  At the start of a line (env, YAML, INI, TOML) the value runs to
  the end of the line (a trailing `` # comment`` stays); inline (``?token=x&b=1``, flags, prose)
  it is one token.  A secret-named key with an empty value (``password:``, ``|``, ``(``) hides the
  more-indented lines under it.  Left alone: placeholders (``null``, type names, ``$VAR``,
  ``${VAR}``, ``{{ x }}``, ``<your-token>``, ``****``, versions) and code (``auth=auth``,
  ``password=self.password``, ``token = get_token()``, ``auth: AuthTypes | None = None``).
* A random-looking value (20+ characters mixing cases and digits) after any ``=`` or ``:``:
  ``mimi=[REDACTED]``.
  Not a CamelCase name, a ``go.sum`` ``h1:`` hash or a checksummed ``0x…`` address.
* Percent-encoded separators count (``password%3D[REDACTED]%26…``, ``Bearer%20[REDACTED]``, twice
  encoded ``%253D``), and so do JSON's ``\\u0022`` quotes and the HTML entity ``&#61;``.
* URL userinfo keeps the user: ``https://user:[REDACTED]@host``.
* PEM private keys (and SSH2 ``---- BEGIN SSH2 … PRIVATE KEY ----`` ones) keep their BEGIN/END lines; every body line
  becomes ``[REDACTED]`` (behind a log prefix like ``api-1  | ``, a CRI or syslog head, a
  line-number gutter, ``> `` or a diff's ``-``/``+`` too, and in string literals); a PuTTY key's
  ``Private-Lines``.
* A 40-character AWS secret key alone on its line or on a line about AWS; a base64 run that
  decodes to an env file holding a secret (a wrapped blob goes whole); in CSV under a header
  naming secret columns (``user,password``, or ``| user | password |`` in query output and
  markdown), those cells.
* Terminal colour codes are looked through, also written out as escapes (``\\u001b[32m``): a key
  split by them is still found.

Git SHAs, UUIDs, ``ses_…``/``msg_…`` ids, ``sha512-…`` integrity hashes and prose pass unchanged.
``redact_value`` redacts strings inside dicts/lists/tuples and, under a secret-named key, the whole
string.  Redaction is idempotent, never raises (an internal failure yields ``[REDACTED]`` for the
whole input: fail closed), and ``redact_lines`` yields exactly what ``redact`` gives for the joined
text, one output per input line, lazily.

The values the loop knows to be secret (its environment's tokens, the provider keys it injects,
the project's ``.env`` values, ``maskValues``) are collected at start (``collect``) and masked by
value in every encoding before the rules run (``Redactor(known=…)``).

This module is the package's one public face; the modules behind it are private.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kilo_loop.redact._known import DEFAULT_MASK_FILES, KnownSecrets, collect, from_env, screen
from kilo_loop.redact._patterns import REDACTED
from kilo_loop.redact._redactor import Redactor, default_redactor, redact_stream

if TYPE_CHECKING:
    from kilo_loop.redact._pool import InOrder, can_fork, usable_cores

__all__ = [
    "DEFAULT_MASK_FILES",
    "REDACTED",
    "InOrder",
    "KnownSecrets",
    "Redactor",
    "can_fork",
    "collect",
    "default_redactor",
    "from_env",
    "redact_stream",
    "screen",
    "usable_cores",
]

_POOL_NAMES = frozenset({"InOrder", "can_fork", "usable_cores"})


def __getattr__(name: str) -> Any:
    """The worker pool's names, imported on first use: ``multiprocessing`` costs start-up that only
    ``kilo-loop redact`` on a big input needs."""
    if name in _POOL_NAMES:
        from kilo_loop.redact import _pool

        return getattr(_pool, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
