"""What a secret looks like: the pattern table and the small judgements the redactor makes.

Every regular expression here is written in the common subset of RE2 and Python ``re`` syntax
(no look-around, no back-references, no ``\\s``/``^``/``$``) so the same source runs on both
engines over UTF-8 bytes.  The judgements (is this key secret-named? is this value a placeholder?
does this string look random?) are pure functions on ``str``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import itertools
import re
from dataclasses import dataclass
from enum import Enum

REDACTED = "[REDACTED]"


class Kind(Enum):
    """How a rule's match is turned into edits (see ``_engine``)."""

    PEM = "pem"
    USERINFO = "userinfo"
    KEEP_PREFIX = "keep_prefix"  # group 1 is kept, the rest of the match becomes [REDACTED]
    KEYWORD = "keyword"  # secret-named key followed by a separator; the value is parsed in Python
    FLAG = "flag"  # --token xyz
    CURL_USER = "curl_user"  # -u user:pass
    BEARER = "bearer"
    BASIC = "basic"
    GENERIC = "generic"  # random-looking value after = or :
    ARG = "arg"  # group 1 is a password given as a command argument (mysql -pX, sshpass -p X)
    LINE_ARG = "line_arg"  # like ARG, but only when the match is a line of its own (.netrc, .pgpass)
    B64_RUN = "b64_run"  # a long base64 run: an AWS secret key, or an encoded env file
    CSV_HEADER = "csv_header"  # a CSV header naming secret columns; the rows below lose those cells
    DSN_AT = "dsn_at"  # ``user:pass@tcp(``: the match is the "@…(", the password is read backwards
    NAME_VALUE = "name_value"  # group 1 names a secret whose value is a separate entry (k8s env, HCL)


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: str
    kind: Kind
    check: str = ""  # name of an extra validator for KEEP_PREFIX rules ("" = none)
    scan: str = ""  # candidate pattern for the RE2 pass when the automatic loosening is too loose
    lane: str = ""  # rules of one lane share an RE2 DFA; "" = the shared "text" lane


# --- key words --------------------------------------------------------------------------------

_KEY_QUALIFIERS = (
    "api|access|private|secret|encryption|signing|master|app|license|service|account|shared|consumer"
    "|client|subscription|webhook|deploy|ssh|storage|auth|session|sas|admin|application"
)
_KEY_SUFFIX = "(?:[_.-]?(?:id|value|secret|data|string))?"

# A superset of the keys ``is_secret_key`` accepts, anchored at the secret word; the key's
# leading part is found by scanning backwards in Python.
KEYWORD_RE = (
    "(?i:(?:passw(?:or)?d|passphrase|passcode|secret|credential|creds|pwd|authorization)[A-Za-z0-9_.-]*"
    "|token(?:[_.-]?(?:secret|key|value|string|str))?"
    "|auth(?:[_.-]?(?:key|secret|token|header|value|string))?"
    "|cookie"
    f"|(?:{_KEY_QUALIFIERS})[_.-]?key{_KEY_SUFFIX}"
    "|[_.-]pass)"
    "|[A-Z0-9]_KEY(?:_(?:ID|VALUE|SECRET|DATA|STRING))?"
)
KEY_SEPARATOR_RE = (
    # also JSON's \u0022 quotes, quotes escaped once or more (JSON in a JSON string), and the
    # full-width colon and equals sign (U+FF1A, U+FF1D)
    "(?:(?:\\\\*[\"']|\\\\u002[27])?[ \t]*(?::=|=>|===?|!==?|=|:|\uff1a|\uff1d)"
    # code: a string key and a string value as two arguments or items (``Setenv("TOKEN", "x")``), a
    # subscript assignment (``environ["API_KEY"] = "x"``), a setter call (``.setApiKey("x")``)
    "|\\\\*[\"'][ \t]*,[ \t]*\\\\*[\"']|[\"'][ \t]*\\][ \t]*=|\\([ \t]*\\\\*[\"']"
    # percent-encoded, once or twice: %3D, %22%3A%22, %253D; an HTML entity: &#61;
    "|(?:%2[27])?%(?:25)?3[DdAa](?:%20)*(?:%2[27])?|&#(?:61|[xX]0*3[Dd]);)"
)
FLAG_WORD_RE = "(?i:password|passwd|pass|pwd|token|secret|key|auth|credentials?|cookie|passphrase|bearer)"

# the last word of a camelCase flag (``-apiKey``, ``--accessToken``); ``-srcstorepass`` is keytool's
_CAMEL_FLAG_WORD = "(?:Password|Passwd|Pass|Pwd|Token|Secret|Key|Auth|Credentials?|Cookie|Passphrase|Bearer)"
_STRONG_WORDS = frozenset(
    {"password", "passwd", "passphrase", "passcode", "secret", "secrets", "credential", "credentials",
     "creds", "pwd", "authorization"}
)
_JOINED_SUFFIXES = ("token", "password", "passwd", "secret", "apikey", "accesskey", "privatekey", "authkey")
META_LAST_WORDS = frozenset(
    {"file", "files", "path", "dir", "name", "names", "length", "len", "min", "max", "count", "policy",
     "type", "types", "enabled", "required", "prompt", "field", "label", "hint", "placeholder", "reset",
     "expiry", "expires", "expiration", "ttl", "rotation", "manager", "store", "provider", "env", "var",
     "ref", "url", "uri", "format", "regex", "pattern", "strength", "changed", "updated", "at", "mode",
     "schema", "version", "location", "help", "message", "error", "errors", "method", "methods",
     # file names used as keys (``"each_secret.py": [...]`` in a scanner baseline)
     "py", "js", "ts", "mjs", "cjs", "json", "yaml", "yml", "md", "txt", "ini", "toml", "cfg", "conf",
     "sh", "rb", "go", "rs", "java", "php", "lock", "log", "html", "css", "xml",
     # ``credential.helper``, ``credentials_username``: about a secret, not one
     "helper", "username", "user", "email"}
)
_TOKEN_FOLLOWERS = frozenset({"secret", "key", "value", "string", "str"})
_AUTH_FOLLOWERS = frozenset({"key", "secret", "token", "header", "value", "string"})
_KEY_QUALIFIER_WORDS = frozenset(_KEY_QUALIFIERS.split("|"))
_KEY_FOLLOWERS = frozenset({"id", "value", "secret", "data", "string"})
_NUMERIC_SECRET_WORDS = frozenset(
    {"password", "passwd", "pwd", "passcode", "passphrase", "pin", "secret", "pass"}
)
_SHELL_DIR_VARS = frozenset({"PWD", "OLDPWD"})
_ENV_KEY_RE = re.compile(r"[A-Z0-9_]+_KEY(?:_(?:ID|VALUE|SECRET|DATA|STRING))?")

_WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@functools.lru_cache(maxsize=4096)
def key_words(key: str) -> tuple[str, ...]:
    """Split ``apiKey`` / ``AWS_SECRET_ACCESS_KEY`` / ``x-auth-token`` into lower-case words."""
    return tuple(word.lower() for word in _WORD_RE.findall(key))


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether a key (env var, JSON/YAML key, header, flag name) names a secret value."""
    words = key_words(key)
    if not words or key in _SHELL_DIR_VARS or words[-1] in META_LAST_WORDS:
        return False
    if _names_secret(words) or _ENV_KEY_RE.fullmatch(key):
        return True
    return words[-1] == "pass" and len(words) > 1


def _names_secret(words: tuple[str, ...]) -> bool:
    """The words themselves say secret: password/secret/credentials anywhere, a trailing token,
    auth or cookie, a qualified key (``api key``, ``access key``)."""
    last = len(words) - 1
    for index, word in enumerate(words):
        following = words[index + 1] if index < last else ""
        if word in _STRONG_WORDS or (word != "tokens" and word.endswith(_JOINED_SUFFIXES)):
            if word.endswith("token") and index < last and following not in _TOKEN_FOLLOWERS:
                continue
            return True
        if word.endswith("auth") and (index == last or following in _AUTH_FOLLOWERS):
            return True
        if word in ("cookie", "bearer") and index == last:  # ``--oauth2-bearer``
            return True
        qualified = index > 0 and words[index - 1] in _KEY_QUALIFIER_WORDS
        if word == "key" and qualified and (index == last or following in _KEY_FOLLOWERS):
            return True
    return False


def numeric_is_secret(key: str) -> bool:
    """A purely numeric value is redacted only under a password-like key (``pin: 1234``), never
    under ``token_count``-style keys that merely mention a secret word."""
    words = key_words(key)
    return bool(words) and words[-1] in _NUMERIC_SECRET_WORDS


# --- values -----------------------------------------------------------------------------------

_LITERAL_VALUES = frozenset(
    {"null", "none", "nil", "true", "false", "yes", "no", "undefined", "string", "str", "number", "int", "bool",
     "boolean", "bytes", "any", "object", "unknown"}
)
_PLACEHOLDER_RE = re.compile(
    r"\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_.]*\}|\$?\{\{[^{}]*\}\}|<[^<>]*>|%\(?[A-Za-z_]*\)?s"
    r"|[*xX.\u2022\u2026]{3,}|process\.env\.[A-Za-z_][A-Za-z0-9_]*"
    # ``${VAR:?must be set}``, ``${VAR:-$OTHER}``; an f-string's ``{token}``; ``$(cmd …)``, `` `cmd` ``
    r"|\$\{[A-Za-z_][A-Za-z0-9_]*(?::?\?[^{}]*|:?-\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)\}"
    r"|\{[A-Za-z_][A-Za-z0-9_.]*(?:\[[^\[\]{}]*\])?(?:\(\))?\}|\$\([^()]*\)|`[^`]*`"
)
_VERSION_RE = re.compile(r"[\^~<>=v]*[0-9]+(?:\.[0-9x*]+){1,3}(?:[-+][0-9A-Za-z.-]+)?")
_NUMBER_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
AUTH_SCHEMES = frozenset(
    {"bearer", "basic", "token", "digest", "bot", "negotiate", "ntlm", "apikey", "sso-key", "api-token"}
)


def is_placeholder(value: str) -> bool:
    """Values that carry no secret: empty, already redacted, literals, type names, ``$VAR`` /
    ``${VAR}`` / ``{{ x }}`` / ``<your-token>`` references, masks like ``****`` and versions."""
    text = value.strip().rstrip(",;").strip()
    if not text or text.startswith(REDACTED) or (len(text) == 1 and not text.isalnum()):
        return True
    if text.lower() in _LITERAL_VALUES:
        return True
    return bool(_PLACEHOLDER_RE.fullmatch(text) or _VERSION_RE.fullmatch(text))


def is_number(value: str) -> bool:
    return bool(_NUMBER_RE.fullmatch(value.strip().rstrip(",;").strip()))


# --- code, not data -------------------------------------------------------------------------

_IDENT_CHAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_OBJECT_NAMES = frozenset(
    {"self", "this", "cls", "request", "req", "response", "res", "config", "cfg", "conf", "settings",
     "options", "opts", "args", "kwargs", "params", "props", "state", "ctx", "context", "env", "os",
     "process", "app", "client", "session", "credentials", "creds", "auth", "user", "url", "parsed",
     "data", "payload", "body", "headers", "secrets", "vault", "keyring", "getpass", "environ"}
)
_BUILTIN_TYPES = frozenset(
    {"str", "int", "float", "bool", "bytes", "none", "list", "dict", "set", "tuple", "any", "object",
     "optional", "callable", "sequence", "mapping", "iterable", "string", "number", "boolean", "null",
     "undefined", "unknown"}
)
_BUILTIN_TYPES_B = frozenset(name.encode() for name in _BUILTIN_TYPES)
_TYPE_MEMBER = re.compile(rb"([A-Za-z_][A-Za-z0-9_.]*)(\[[^\]]*\])?")
_ANNOTATION = re.compile(
    rb"(?P<union>[A-Za-z_][A-Za-z0-9_.]*(?:\[[^\]\r\n]*\])?"
    rb"(?:[ \t]*\|[ \t]*[A-Za-z_][A-Za-z0-9_.]*(?:\[[^\]\r\n]*\])?)*)"
    rb"(?P<default>[ \t]*=[ \t]*)?"
)


def annotation(data: bytes, pos: int, end: int) -> int | None:
    """A type annotation at ``pos`` (``str | None = None``, ``Optional[str]``, ``AuthTypes)``):
    returns where its default value starts (``end`` when it has none), or None for a value.
    A lone capitalised word counts only before ``,``/``)``/``;``/``}`` (``auth: Auth,`` in a
    signature), so ``password: Hunter2`` in YAML is still a value."""
    match = _ANNOTATION.match(data, pos, end)
    if not match:
        return None
    union = match.group("union")
    if not all(_type_like(m.group(1)) for m in _TYPE_MEMBER.finditer(union)):
        return None
    if match.group("default") is not None:
        if not match.group("default")[:1].isspace() and _lone_name(union):
            return None  # ``password: Hunter2=``, ``secret: SGVsbG8=``: a value ending in "=", not a default
        return match.end()
    closer = data[match.end():end].lstrip(b" \t")[:1]
    if closer and closer not in (b",", b")", b";", b"}"):
        return None
    if _lone_name(union) and _PASSWORD_SHAPED.search(union):
        return None  # ``{user: bob, password: Tr0ub4dor, …}``: no type name scatters its digits
    structured = b"|" in union or b"[" in union or union.lower() in _BUILTIN_TYPES_B
    return end if structured or closer else None


# Digits in two runs, or a digit before a lower-case letter: ``Tr0ub4dor``, ``Xk9mPq`` — never
# how a type name carries digits (``Int32``, ``Uint8Array``, ``OAuth2Token``, ``Token2FA``).
_PASSWORD_SHAPED = re.compile(rb"[0-9][a-z]|[0-9][^0-9]+[0-9]")


def _lone_name(union: bytes) -> bool:
    return b"|" not in union and b"[" not in union and union.lower() not in _BUILTIN_TYPES_B


def _type_like(name: bytes) -> bool:
    head = name.rsplit(b".", 1)[-1]
    return head.lower() in _BUILTIN_TYPES_B or head[:1].isupper()


def names_itself(key: str, value: str) -> bool:
    """``cookie = "cookie"``, ``self.auth = auth``: the value is the key's own name."""
    last = _own_name(key)
    return bool(last) and value.lower().strip("-_") == last


@functools.lru_cache(maxsize=4096)
def _own_name(key: str) -> str:
    return key.rsplit(".", 1)[-1].lower().strip("-_")


_NAME_LIKE = re.compile(r"[a-z]+(?:[_.:/-][a-z]+)*")


def weak_key_plain_value(key: str, value: str) -> bool:
    """``CACHE_KEY = "user_profile"``: an upper-case ``*_KEY`` constant (secret-named only for
    env files) holding a plain lower-case name is a lookup key in code, not a credential."""
    name = key.rsplit(".", 1)[-1]
    env_only = bool(_ENV_KEY_RE.fullmatch(name)) and not _names_secret(key_words(name))
    return env_only and bool(_NAME_LIKE.fullmatch(value))


# Where a name joins its words: ``api_key``, ``apiKey``.  Digits alone join nothing: ``hunter2secret``
# is a password, not a variable.
_NAME_JOINT = re.compile(r"_|[a-z0-9][A-Z]")


def is_code_reference(key: str, value: str) -> bool:
    """``auth=auth``, ``password=self.password``, ``api_key=settings.API_KEY``: a variable, not data."""
    if not _IDENT_CHAIN.fullmatch(value):
        return False
    parts = value.split(".")
    if names_itself(key, parts[-1]):
        return True
    if len(parts) == 1:  # ``"X-Api-Key": api_key``: a variable named for a secret (one word may be data)
        return value[0].islower() and _NAME_JOINT.search(value) is not None and is_secret_key(value)
    # ``random_password.db.result`` (Terraform), ``creds.password``: a secret-named part is a reference
    return parts[0] in _OBJECT_NAMES or any(is_secret_key(part) for part in parts)


# A secret's id in a secret store is its name, path or ARN (``--secret-id prod/db/creds``,
# ``SecretId=arn:aws:secretsmanager:…``); Vault AppRole's ``secret_id`` is a UUID or random: a secret.
_STORED_SECRET_NAME = re.compile(
    r"arn:[a-z0-9-]+:[a-z0-9-]+:[^ \t]*|[A-Za-z][a-z0-9_.-]*(?:/[A-Za-z][a-z0-9_.-]*)+|[a-z]+(?:[-_][a-z]+)*"
)


_STORED_SECRET_KINDS = frozenset({"secret", "credential", "credentials"})


def names_a_stored_secret(key: str, value: str) -> bool:
    """``SecretId``, ``--secret-id``, Jenkins' ``credentialsId``: a name, a path or an ARN is the id."""
    words = key_words(key)
    return len(words) > 1 and words[-1] == "id" and words[-2] in _STORED_SECRET_KINDS and (
        bool(_STORED_SECRET_NAME.fullmatch(value)) or identifier_like(value)
    )


# --- random-looking tokens ------------------------------------------------------------------

_UUID_RE = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
_DIGIT_RUN_RE = re.compile(r"[0-9]+")


def _char_class(char: str) -> int:
    if char.isdigit():
        return 0
    if char.isupper():
        return 1
    if char.islower():
        return 2
    return 3


_HEX_ADDRESS_RE = re.compile(r"0x[0-9a-fA-F]{40}")  # an (EIP-55 checksummed) address is public
_NAME_PART_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+|[^A-Za-z0-9]+")


def identifier_like(value: str) -> bool:
    """``AbstractProxyFactoryBean2Impl``, ``getUserByIdV2Handler``: words of three letters or more
    (short acronyms and version numbers between them), the way names are written, not keys."""
    parts = _NAME_PART_RE.findall(value)
    words = [part for part in parts[1:] if part[-1].islower()]
    short = sum(1 for word in words if len(word) < 3)
    if len(words) < 2 or 2 * short > len(words) - short:
        return False
    for part in parts:
        if part[-1].islower() and len(part) < 2 and part is not parts[0]:
            return False
        if (part.isdigit() and len(part) > 2) or (part.isupper() and len(part) > 5):
            return False
        if not part[0].isalnum() and part not in ("_", "-", "."):
            return False
    return True


def looks_random(value: str) -> bool:
    """A 20+ character token mixing upper case, lower case and digits the way generated keys do
    (many class changes, digits scattered) — not a CamelCase identifier, a UUID, a hex hash or
    a checksummed hex address."""
    if len(value) < 20 or _UUID_RE.fullmatch(value) or _HEX_ADDRESS_RE.fullmatch(value):
        return False
    if identifier_like(value):
        return False
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value)):
        return False
    if len(_DIGIT_RUN_RE.findall(value)) < 2:
        return False
    classes = [_char_class(c) for c in value]
    changes = sum(1 for a, b in itertools.pairwise(classes) if a != b)
    return changes / (len(value) - 1) >= 0.2


def basic_credentials_like(token: str) -> bool:
    """``Basic <token>``: base64 of ``user:pass``, or at least something that is not a word."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        decoded = ""
    if ":" in decoded and decoded.isprintable():
        return True
    return any(c.isdigit() or c in "+/=" for c in token)


def bearer_token_like(token: str) -> bool:
    """``Bearer <token>`` in prose ("the bearer authentication scheme") is not a credential."""
    has_upper = any(c.isupper() for c in token)
    has_lower = any(c.islower() for c in token)
    return any(c.isdigit() for c in token) or (has_upper and has_lower) or len(token) >= 24


def openai_key_like(body: str) -> bool:
    """``sk-`` followed by a long random segment with a digit (not ``sk-some-long-slug``), or
    Langfuse's ``sk-lf-`` and a UUID."""
    if body.startswith("lf-") and _UUID_RE.match(body, 3):
        return True
    return any(c.isdigit() for c in body) and any(len(part) >= 16 for part in re.split(r"[-_]", body))


def discord_token_like(token: str) -> bool:
    """A Discord bot token starts with the base64 of the numeric bot id."""
    head = token.split(".", 1)[0]
    try:
        decoded = base64.b64decode(head + "=" * (-len(head) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        return False
    return decoded.isdigit()


_AWS_CONTEXT_RE = re.compile(
    r"aws|amazon|\bs3\b|(?:AKIA|ASIA)[A-Z0-9]{16}|secret|credential", re.IGNORECASE
)


def aws_context(line: str) -> bool:
    """The line speaks of AWS or of a secret (an access key id, ``aws``, ``secret``)."""
    return bool(_AWS_CONTEXT_RE.search(line))


_CSV_FIELD_RE = re.compile(r"[A-Za-z][A-Za-z0-9 _.-]{0,48}")


def csv_secret_columns(fields: list[str]) -> tuple[int, ...]:
    """Indexes of secret-named columns when ``fields`` read as a CSV header (2+ short names, at
    least one naming a secret); () when they do not."""
    names = [field.strip().strip('"').strip() for field in fields]
    if len(names) < 2 or not all(_CSV_FIELD_RE.fullmatch(name) for name in names):
        return ()
    if any(" " in name for name in names) and not all(name[0].isupper() for name in names):
        return ()  # "tokens, passwords, and secrets": prose, not a header ("Secret access key" is)
    if any(name.lower() in _LITERAL_VALUES for name in names):
        return ()  # ``password,string,true``: a row of a table about fields, not a header
    return tuple(index for index, name in enumerate(names) if is_secret_key(name.replace(" ", "_")))


def datadog_key_like(match: str) -> bool:
    """32 hex digits (an API key) after "datadog"; 40 (an application key, or a git SHA) only
    when the text names an application key."""
    return len(match) - len(match.rstrip("0123456789abcdef")) < 40 or "app" in match.lower()


_FIELD_NAME_RE = re.compile(r"name=[\"']?([A-Za-z0-9_.\[\]-]+)")


def html_secret_field(match: str) -> bool:
    """``<input name="api_token" value="…">``: the field's name is secret-named (not ``token_type``)."""
    name = _FIELD_NAME_RE.match(match)
    return name is not None and is_secret_key(name.group(1).replace("[", "_").replace("]", ""))


def not_a_mask(body: str) -> bool:
    """``NRAK-XXXXXXXXXXXXXXXXXXXXXXXXXXX`` in docs: a mask has a handful of distinct characters."""
    return len(set(body)) > 4


def xml_secret_element(match: str) -> bool:
    """``<password>…</``: the element's name (past a namespace prefix) is secret-named."""
    return is_secret_key(match[1:match.index(">")].rsplit(":", 1)[-1])


# Verbs of calls that take a secret-named argument without setting it: ``check_password("x")``.
READING_VERBS = frozenset(
    {"get", "check", "verify", "validate", "hash", "is", "has", "find", "fetch", "load", "read", "compare",
     "encode", "decode", "encrypt", "decrypt", "reset", "update", "change", "generate", "create", "rotate",
     "revoke", "delete", "remove", "refresh", "parse", "mask", "redact", "sign", "match", "matches",
     "require", "ensure", "print", "log", "test", "assert", "expect", "prompt", "ask", "input", "lookup"}
)
_CONFIG_KEY_RE = re.compile(r"([A-Za-z0-9_./:@-]+)[ \t]+(?:'[^']*'|\"[^\"]*\"|[^ \t]+)$")


def config_key_secret(match: str) -> bool:
    """``config set KEY VALUE``: the key names a secret (``_authToken``, ``github.token``)."""
    found = _CONFIG_KEY_RE.search(match)
    return found is not None and is_secret_key(found.group(1).rsplit(":", 1)[-1])


_SECRET_NAME_RE = re.compile(r"--name[ \t=]+([^ \t]+)")


def secret_store_value(match: str) -> bool:
    """``ssm put-parameter`` holds plain settings too: a SecureString, or a name naming a secret."""
    if "put-parameter" not in match or "SecureString" in match:
        return True
    name = _SECRET_NAME_RE.search(match)
    return name is not None and is_secret_key(name.group(1).replace("/", "_"))


def credential_pair(match: str) -> bool:
    """The second argument is a password: no blank in it (not a message), not a secret's name,
    and the call makes credentials (``getCredentials("aws", "default")`` looks them up)."""
    quote = match[-1:]  # the match ends with the quoted password
    value = match[match.rfind(quote, 0, len(match) - 1) + 1:-1]
    call = key_words(_CALL_NAME_RE.match(match).group())  # type: ignore[union-attr]
    if not call or call[0] in READING_VERBS:
        return False
    return len(value) >= 3 and not any(c.isspace() for c in value) and not is_secret_key(value)


_CALL_NAME_RE = re.compile(r"[A-Za-z_]*")


def twitter_bearer_like(body: str) -> bool:
    """After the run of "A"s a bearer token mixes cases and digits (a base64 run of zeros does not)."""
    rest = body.lstrip("A")
    return any(c.isdigit() for c in rest) and any(c.islower() for c in rest)


CHECKS = {
    "openai": openai_key_like, "discord": discord_token_like, "datadog": datadog_key_like,
    "html_field": html_secret_field, "ops_tokens": not_a_mask, "vendor_tokens": not_a_mask,
    "config_set": config_key_secret, "secret_store": secret_store_value,     "xml_element": xml_secret_element,
    "credential_pair": credential_pair, "twitter_bearer": twitter_bearer_like,
}


# --- the table --------------------------------------------------------------------------------

_B = "\\b"
_PREFIXED: tuple[tuple[str, str, str], ...] = (
    # (name, kept prefix, secret body) — the match is \b(prefix)body
    ("anthropic", "sk-ant-", "[A-Za-z0-9_-]{20,}"),
    ("stripe", "(?:sk|rk|pk)_(?:live|test)_", "[A-Za-z0-9]{10,}"),
    ("stripe_webhook", "whsec_", "[A-Za-z0-9]{20,}"),
    ("github", "gh[pousr]_", "[A-Za-z0-9]{36,}"),
    ("github_pat", "github_pat_", "[A-Za-z0-9_]{22,}"),
    ("gitlab", "gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent)-", "[A-Za-z0-9_-]{20,}"),
    ("slack", "xox[abposre]-", "[A-Za-z0-9-]{10,}"),
    ("slack_app", "xapp-", "[0-9]-[A-Za-z0-9-]{10,}"),
    ("aws_key_id", "(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)", "[A-Z0-9]{16}\\b"),
    ("google_api", "AIza", "[A-Za-z0-9_-]{35}"),
    ("google_oauth", "ya29\\.", "[A-Za-z0-9_-]{20,}"),
    ("google_client_secret", "GOCSPX-", "[A-Za-z0-9_-]{20,}"),
    ("huggingface", "hf_", "[A-Za-z0-9]{30,}"),
    ("npm", "npm_", "[A-Za-z0-9]{36}\\b"),
    ("telegram", "(?:bot)?[0-9]{8,10}:", "AA[A-Za-z0-9_-]{30,}"),
    ("sendgrid", "SG\\.", "[A-Za-z0-9_-]{16,32}\\.[A-Za-z0-9_-]{16,64}"),
    ("twilio", "SK", "[0-9a-fA-F]{32}\\b"),
    ("mailgun", "key-", "[0-9a-f]{32}\\b"),
    ("mailchimp", "", "[0-9a-f]{32}-us[0-9]{1,2}\\b"),
    ("shopify", "shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32}\\b"),
    ("pypi", "pypi-", "AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
    ("digitalocean", "do[opr]_v1_", "[a-f0-9]{64}\\b"),
    ("linear", "lin_api_", "[A-Za-z0-9]{40}\\b"),
    ("postman", "PMAK-", "[a-f0-9]{24}-[a-f0-9]{34}\\b"),
    ("groq", "gsk_", "[A-Za-z0-9]{48,}"),
    ("replicate", "r8_", "[A-Za-z0-9]{37,}"),
    ("xai", "xai-", "[A-Za-z0-9]{60,}"),
    ("perplexity", "pplx-", "[A-Za-z0-9]{40,}"),
    ("databricks", "dapi", "[a-f0-9]{32}\\b"),
    ("square", "sq0(?:atp|csp)-", "[A-Za-z0-9_-]{22,}"),
    ("age", "AGE-SECRET-KEY-1", "[0-9A-Z]{58}\\b"),
    ("supabase", "sbp_", "[a-f0-9]{40}\\b"),
    ("notion", "ntn_", "[A-Za-z0-9]{40,}"),
    ("atlassian", "ATATT3", "[A-Za-z0-9_=-]{50,}"),
    ("vault", "hv[sbr]\\.", "[A-Za-z0-9_-]{24,}"),
    # Tailscale, Pulumi, Grafana service accounts and Cloud, New Relic, Dynatrace: prefixes no word
    # starts with, in one rule (each rule costs every candidate a try)
    ("ops_tokens", "(?:tskey-(?:auth|api|client|scim|webhook)-|pul-|gl(?:sa|c)_|NR(?:AK|AA|II)-|dt0c01\\.)",
     "[A-Za-z0-9_+/.=-]{24,}"),
    ("jwt", "eyJ", "[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]*"),
    ("openai", "sk-", "[A-Za-z0-9_-]{20,}"),
)

# also the SSH2 (RFC 4716, ssh.com, PuTTYgen export) form: ``---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----``
# Newer prefixes from gitleaks' rule set, scanned beside the generic value (see ``_CODE_LANE``).
_MORE_PREFIXED: tuple[tuple[str, str, str], ...] = (
    # more prefixes from gitleaks' rule set that no word starts with: Docker Hub, Doppler, Sentry,
    # Clojars, PlanetScale, RubyGems, Brevo, Flutterwave, Contentful, EasyPost, Heroku, JFrog,
    # Alibaba, OpenShift, Sourcegraph, Sonar.  Each literal costs the DFA states on random text
    # (a dense MB of tokens): the list keeps to the commonest.
    ("vendor_tokens",
     "(?:dckr_pat_|dp\\.(?:pt|st|sa|ct|scim|audit)\\.|sntry[su]_|CLOJARS_|pscale_(?:tkn|pw|oauth)_|rubygems_"
     "|xkeysib-|FLWSECK(?:_TEST)?-|CFPAT-|EZAK|HRKU-|AKCp|LTAI|sha256~|sgp_|sq[upa]_)",
     "[A-Za-z0-9_+/.=-]{20,}"),
    ("plaid", "access-(?:sandbox|development|production)-", "[0-9a-f]{8}-[0-9a-f-]{27}"),
    # (round 4 tried more of gitleaks' prefixes here — CircleCI, Buildkite, Prefect, LangSmith, Pinecone,
    # HubSpot, Terraform Cloud, Mapbox ``sk.``, … — and dropped them: beside the generic value their
    # literals built DFA states all through ordinary text, 3% more instructions a typical MB.)
    ("cloudflare_origin", "v1\\.0-", "[a-f0-9]{24}-[a-f0-9]{146}"),
)

PEM_BEGIN = "-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|---- BEGIN SSH2 (?:ENCRYPTED )?PRIVATE KEY ----"
PEM_END = "-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|---- END SSH2 (?:ENCRYPTED )?PRIVATE KEY ----"
_URL_USER = "[^ \t\r\n/?#\"'`<>\\[\\]\\\\:@]*"
_URL_PASSWORD = "[^ \t\r\n/?#\"'`<>\\[\\]\\\\]+"


# 20+ token characters with an upper-case letter (or '+') before any '_'/'-': a hex SHA, a UUID,
# ses_…/msg_… ids and sha512-… integrity strings never start one.  Three tiers by where the first
# upper-case letter sits keep the counters short for RE2.
_TOKEN_CHAR = "[A-Za-z0-9+/_-]"
_GENERIC_VALUE = (
    f"[a-z0-9]{{0,9}}[A-Z+]{_TOKEN_CHAR}{{19,}}|[a-z0-9]{{10,18}}[A-Z+]{_TOKEN_CHAR}{{9,}}"
    f"|[a-z0-9]{{19,}}[A-Z+]{_TOKEN_CHAR}*"
)
_GENERIC_SCAN = (
    f"[a-z0-9]*[A-Z+]{_TOKEN_CHAR}{{19}}|[a-z0-9]{{10}}[a-z0-9]*[A-Z+]{_TOKEN_CHAR}{{9}}"
    f"|[a-z0-9]{{19}}[a-z0-9]*[A-Z+]"
)


# A password given as a command argument: unquoted up to a blank or shell operator, or quoted.
_ARG_VALUE = "([^ \t\r\n'\"`|;&<>]+|'[^'\r\n]*'|\"[^\"\r\n]*\")"
_SHELL_REST = "[^\r\n|;&]*?"
# mysql, sshpass, registry logins and Datadog scan for their leading words only: a rest-of-line
# wildcard in RE2's shared DFA multiplies its states (each new one built while scanning), and the
# exact pattern decides anyway.
# A name with a secret word in it (the judgement is ``is_secret_key``'s): the word keeps prose and
# ordinary names (``config file``, ``"name": "bash"``) from being candidates at all.
_SECRET_WORD = "(?i:passw|passphrase|pwd|pass|secret|token|key|auth|credential|cred)"
_SECRET_WORD_NAME = f"[A-Za-z0-9_./-]*{_SECRET_WORD}[A-Za-z0-9_./-]*"
_SECRET_WORD_XML = f"[A-Za-z0-9_.:-]*{_SECRET_WORD}[A-Za-z0-9_.:-]*"
# an argument boundary: a blank, or the end of one quoted item of an argv list (``"ping", "-pX"``)
_ITEM = "(?:[ \t]|[\"'],[ \t]*)"
_REGISTRY_LOGIN = "(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|helm[ \t]+registry)[ \t]+login"
_ARG_RULES: tuple[Rule, ...] = (
    # mysql -pSECRET (the password is glued to -p; a bare -p prompts)
    Rule("mysql_p", "\\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump)"
         f"{_ITEM}(?:{_SHELL_REST}{_ITEM})?[\"']?-p{_ARG_VALUE}", Kind.ARG,
         scan="(?:mysql|mariadb)[a-z-]*(?:[ \t]|[\"'],)"),
    Rule("sshpass", f"\\bsshpass{_ITEM}(?:{_SHELL_REST}{_ITEM})?[\"']?-p(?:[\"'],[ \t]*|[ \t]*){_ARG_VALUE}", Kind.ARG,
         scan="sshpass(?:[ \t]|[\"'],)"),
    Rule("registry_login", f"\\b{_REGISTRY_LOGIN}\\b{_SHELL_REST}[ \t]-p[ \t]+{_ARG_VALUE}", Kind.ARG,
         scan=_REGISTRY_LOGIN),
    # openssl -passin pass:SECRET, -passout pass:…, -pass pass:…
    Rule("pass_arg", "-(?i:pass(?:in|out|word|phrase)?)[ \t=]+[\"']?pass:([^ \t\r\n'\"`|;&<>]+)", Kind.ARG),
    # .netrc: machine host login user password SECRET (one line or several)
    Rule("netrc", "\\b(?:machine[ \t]+[^ \t\r\n]+|default|(?:login|account)[ \t]+[^ \t\r\n]+)"
         f"(?:[ \t]+(?:login|account|machine)[ \t]+[^ \t\r\n]+)*[ \t]+password[ \t]+{_ARG_VALUE}", Kind.ARG),
    Rule("netrc_line", f"\\bpassword[ \t]+{_ARG_VALUE}", Kind.LINE_ARG),
    # redis.conf: requirepass X / masterauth X
    Rule("redis_conf", f"\\b(?:requirepass|masterauth)[ \t]+{_ARG_VALUE}", Kind.LINE_ARG),
    # .pgpass: hostname:port:database:username:password, one entry per line
    Rule("pgpass", "[A-Za-z0-9_.*\\[\\]-]+:(?:[0-9]{1,5}|\\*):[^: \t\r\n]+:[^: \t\r\n]+:([^ \t\r\n]+)",
         Kind.LINE_ARG),
    # Datadog API (32 hex) and application (40 hex) keys named in prose or a header
    Rule("datadog", "(?i:datadog|\\bdd[ _-]?(?:api|app(?:lication)?))[^\r\n]{0,80}?\\b([0-9a-f]{32}(?:[0-9a-f]{8})?)\\b",
         Kind.ARG, "datadog", scan="(?i:datadog|dd[ _-]?(?:api|app))"),
)

# Passwords given to other clients (mongosh -p X, redis-cli -a X, sqlcmd -P X, ldapsearch -w X, 7z -pX,
# zip -P X) in one rule, and keytool's -storepass, redis' --requirepass, HTML form fields.  None can
# start where the keyword rule does, so they come after it: the keyword candidates, most of a dense
# file, never try them.
_CLIENT_FLAGS = (
    f"(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)[ \t](?:{_SHELL_REST}[ \t])?-p[ \t]+"
    f"|redis-cli[ \t](?:{_SHELL_REST}[ \t])?-a[ \t]+"
    f"|(?:sqlcmd|osql|bcp)[ \t](?:{_SHELL_REST}[ \t])?-P[ \t]*"
    f"|ldap(?:search|modify|add|delete|whoami|passwd|compare|modrdn)[ \t](?:{_SHELL_REST}[ \t])?-w[ \t]+"
    f"|(?:7z[az]?|unzip|zip)[ \t](?:{_SHELL_REST}[ \t])?-(?:p|P[ \t]+)"
    # macOS keychain (security add-generic-password -w X), a new key's passphrase (ssh-keygen -N X)
    f"|security[ \t](?:{_SHELL_REST}[ \t])?-w[ \t]+|ssh-keygen[ \t](?:{_SHELL_REST}[ \t])?-[NP][ \t]*"
)
_CLIENT_RULES: tuple[Rule, ...] = (
    Rule("client_password", f"\\b(?:{_CLIENT_FLAGS}){_ARG_VALUE}", Kind.ARG,
         scan="(?:mongo[a-z]*|redis-cli|sqlcmd|osql|bcp|ldap[a-z]+|7z[az]?|unzip|zip|security|ssh-keygen)[ \t]"),
    # keytool/jarsigner -storepass X -keypass X (-storepass:env VAR names a variable)
    Rule("java_storepass", f"-(?:src|dest|new)?(?:store|key)pass[ \t]+{_ARG_VALUE}", Kind.ARG),
    # redis-server --requirepass X / --masterauth X, also as items of a JSON/YAML command list
    Rule("redis_requirepass", "--(?:requirepass|masterauth)[\"']?,?[ \t]+[\"']?([^ \t\r\n'\"`|;&<>]+)", Kind.ARG),
    # an HTML form field: <input type="hidden" name="csrf_token" value="…">, <meta name=… content=…>
    Rule("html_field", "\\bname=[\"']?[A-Za-z0-9_.\\[\\]-]*(?i:token|passw|secret|key|auth)[A-Za-z0-9_.\\[\\]-]*[\"']?"
         "[ \t]+(?:value|content)=(\"[^\"\r\n]*\"|'[^'\r\n]*'|[^ \t\r\n\"'>]+)", Kind.ARG, "html_field",
         scan="name=[\"']?[A-Za-z0-9_.-]*(?i:token|passw|secret|key|auth)"),
    # a PuTTY key file (.ppk): the lines after ``Private-Lines: N`` are the key, read like a PEM body
    Rule("putty_private", "Private-Lines:[ \t]*[0-9]{1,4}", Kind.PEM),
)

# Signatures and tokens inside URLs: Azure SAS (sig=), S3 presigned (X-Amz-Signature=, the STS
# session token) and v2 presigned (Signature=); the value may be percent-encoded.
_URL_VALUE = "[A-Za-z0-9%+/=_-]{16,}"
_URL_EQUALS = "(?:=|%(?:25)?3[Dd])"  # also percent-encoded (once or twice), in a URL inside a URL
_URL_SIGNATURE_RULES: tuple[Rule, ...] = (
    Rule("azure_sas", f"((?:[?&;]|&amp;|%(?:25)?26)sig{_URL_EQUALS}){_URL_VALUE}", Kind.KEEP_PREFIX),
    Rule("s3_presigned", f"((?i:x-amz-signature|x-amz-security-token|x-goog-signature){_URL_EQUALS}){_URL_VALUE}",
         Kind.KEEP_PREFIX),
    # v2 presigned URLs; a SigV4 Authorization header (``…, SignedHeaders=host, Signature=…``)
    Rule("signature_param", f"((?:[?&]|,[ \t]*)(?:Signature|signature){_URL_EQUALS}){_URL_VALUE}", Kind.KEEP_PREFIX),
)

# A CSV header with a secret-named column: the word, then a delimiter (or the end of the line).  A
# query result or a markdown table (``| user | password |``) is a table with "|" between cells.
_CSV_WORD = "(?i:passw(?:or)?d|passphrase|pwd|secret|token|api[ _-]?key|access[ _-]?key|private[ _-]?key|credential)"
_CSV_NAME = "[A-Za-z0-9 _.-]{0,40}"
CSV_HEADER_RE = (
    f"{_CSV_WORD}{_CSV_NAME}\"?[ \t]*[,;\t|]"
    f"|[,;\t|][ \t]*\"?{_CSV_NAME}?{_CSV_WORD}{_CSV_NAME}\"?[ \t]*(?:[,;\t|]|\r?\n)"
)
# 39+ base64 characters (an AWS secret access key, a base64-encoded env file).  In a lane of its
# own the plain counted class runs at hundreds of MB/s; hex SHAs among the candidates are
# turned away in Python at a few microseconds each, far cheaper than a pattern that demands an
# upper-case letter (tiers of counters made that DFA ten times slower).
B64_RUN_RE = "[A-Za-z0-9+/]{39}"


# The rules added in red-team round 3 share the generic value's DFA: beside the others in the
# "text" DFA they tripled the states its lazy construction builds over a typical MB of agent
# output, and a lane of their own would cost one more pass over every byte (a sixth of the time
# of a typical MB); the generic lane's small DFA takes them for a few more states.
_CODE_LANE = "generic"
# Credentials in code and in command lines whose patterns open with a name or a word of any
# letters (``UsernamePasswordCredentials(``, ``user:pass@tcp(``, ``config set``): placed after
# the token rules, so the keyword and token candidates, most of a dense file, never try them.
_CODE_AND_COMMAND_RULES: tuple[Rule, ...] = (
    # DSNs without "://": Go's MySQL driver (``user:pass@tcp(host)/db``), Oracle's ``user/pass@db``
    # (jdbc:oracle:thin:, sqlplus, expdp/impdp, rman, ``connect`` in SQL*Plus)
    Rule("go_mysql_dsn", "@(?:tcp|unix|udp)\\(", Kind.DSN_AT),
    # XML: ``<password>X</password>`` (Maven's settings.xml, Jenkins' credentials, a SOAP body)
    Rule("xml_element", f"<{_SECRET_WORD_XML}>([^<\r\n]{{1,256}})</", Kind.ARG, "xml_element",
         scan=f"<[A-Za-z0-9_.:-]*{_SECRET_WORD}"),
    Rule("oracle_connect", "(?:jdbc:oracle:[a-z]+:@?|\\b(?:sqlplus|sqlldr|expdp|impdp|rman|dgmgrl|conn(?:ect)?)"
         "[ \t]+(?:-[A-Za-z]+[ \t]+)*(?:target[ \t=]+)?)([A-Za-z0-9_$#.]+)/([^ \t\r\n@\"'/]+)@", Kind.USERINFO,
         scan="jdbc:oracle:|(?:sqlplus|sqlldr|expdp|impdp|rman|dgmgrl|conn(?:ect)?)[ \t]"),
    # a user and a password handed to a credentials type or a login call in code:
    # ``new UsernamePasswordCredentials("u", "p")``, ``HTTPBasicAuth("u", "p")``, ``auth=("u", "p")``,
    # ``SetBasicAuth``, ``.basic_auth("u", Some("p"))``, ``smtp.login(user, "p")``, ``NetworkCredential``
    # (the name's own head is not read: a camelCase type is the keyword rule's, see ``_user_and_password``)
    Rule("credential_pair", "(?:Credentials?(?:\\.create|\\.of)?|BasicAuth|basic_auth|PasswordAuthentication"
         "|\\b[Ll]ogin|\\bauth|simple_bind_s)[ \t]*(?:=[ \t]*)?\\([ \t]*(?:\"[^\"\r\n]*\"|'[^'\r\n]*'|[A-Za-z_][A-Za-z0-9_.]*)"
         "[ \t]*,[ \t]*(?:Some\\([ \t]*)?(\"[^\"\r\n]*\"|'[^'\r\n]*')", Kind.ARG, "credential_pair"),
    # poetry config http-basic.REPO USER PASS; htpasswd -b FILE USER PASS; rabbitmqctl add_user U P;
    # net user U P
    Rule("user_password_args", "\\b(?:config[ \t]+http-basic\\.[A-Za-z0-9_.-]+[ \t]+[^ \t\r\n]+"
         "|htpasswd[ \t]+-[A-Za-z]*b[A-Za-z]*(?:[ \t]+-[A-Za-z]+)*(?:[ \t]+[^ \t\r\n-][^ \t\r\n]*){1,2}"
         "|rabbitmqctl[ \t]+(?:add_user|change_password)[ \t]+[^ \t\r\n]+|net[ \t]+user[ \t]+[^ \t\r\n/]+)"
         "[ \t]+([^/* \t\r\n'\"`|;&<>][^ \t\r\n'\"`|;&<>]*|'[^'\r\n]*'|\"[^\"\r\n]*\")", Kind.ARG),
    # config setters with the key before the value: ``npm config set //reg/:_authToken X``, ``git
    # config --global github.token X``, ``setenv API_TOKEN X``, fish's ``set -gx API_KEY X``,
    # ``ngrok authtoken X`` (the key must be secret-named)
    Rule("config_set", "\\b(?:config(?:ure)?(?:[ \t]+(?:set|add|--global|--local|--system|--user|--location=[a-z]+|-g))*"
         f"|setenv|set[ \t]+-[A-Za-z]+|ngrok)[ \t]+[A-Za-z0-9_./:@-]*{_SECRET_WORD}[A-Za-z0-9_./:@-]*[ \t]+{_ARG_VALUE}",
         Kind.ARG, "config_set"),
    # a secret piped to a command that reads it from stdin: ``echo X | docker login --password-stdin``,
    # ``| sudo -S``, ``| chpasswd``, ``| gh auth login --with-token``
    Rule("stdin_secret", f"\\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+|(?:'%s[^']*'|\"%s[^\"]*\"|%s)[ \t]+)?{_ARG_VALUE}"
         "[ \t]*\\|[ \t]*(?:[^\r\n|;&]*?(?:--password-stdin|--with-token|passwd[ \t]+--stdin)"
         "|sudo[ \t]+(?:-[A-Za-z]+[ \t]+)*-S|chpasswd"
         # a secret store reading the value from stdin: ``| wrangler secret put N``, ``| docker secret
         # create N -``, ``| gh secret set N``, ``| vercel env add N``
         "|[^\r\n|;&]*?\\bsecrets?[ \t]+(?:put|create|set|add|import)\\b|[^\r\n|;&]*?\\benv[ \t]+add\\b)", Kind.ARG),
    # a secret store's value: gh secret set N --body X, az keyvault secret set --value X, aws
    # secretsmanager … --secret-string X, aws ssm put-parameter … --value X (a SecureString, or named for a secret)
    Rule("secret_store_value", "\\b(?:secret[ \t]+set|secretsmanager[ \t]+[a-z-]+|ssm[ \t]+put-parameter)"
         f"{_SHELL_REST}[ \t](?:--body|-b|--value|--secret-string)[ \t=]+{_ARG_VALUE}", Kind.ARG, "secret_store",
         scan="(?:secret[ \t]+set|secretsmanager|ssm[ \t]+put-parameter)"),
)


# Rules that open with a literal ordinary text is not full of: their lane's candidates are found by
# Hyperscan in one SIMD pass (``_anchored``), so each literal costs the other lanes' DFAs
# nothing.  ``scan`` is the anchor: it matches where the rule's match starts.
_ANCHORED = "anchored"
_ANCHORED_PREFIXED: tuple[tuple[str, str, str, str], ...] = (
    # (name, kept prefix, secret body, anchor): tokens alone on a line, no key or flag naming them
    ("buildkite", "bkua_", "[a-f0-9]{40}\\b", "bkua_"),
    ("prefect", "pnu_", "[A-Za-z0-9]{36}\\b", "pnu_"),
    ("posthog", "ph[cx]_", "[A-Za-z0-9]{40,}", "ph[cx]_"),
    ("flyio", "fo1_|FlyV1 fm[12][a-z]?_", "[A-Za-z0-9_+/=,-]{20,}", "fo1_|FlyV1 fm"),
    ("supabase_secret", "sb_secret_", "[A-Za-z0-9_-]{20,}", "sb_secret_"),
    ("langsmith", "lsv2_(?:pt|sk)_", "[a-f0-9]{32}_[a-f0-9]{10}\\b", "lsv2_"),
    ("resend", "re_", "[A-Za-z0-9]{8}_[A-Za-z0-9]{20,}", "re_[A-Za-z0-9]{8}_"),
    ("render", "rnd_", "[A-Za-z0-9]{32}\\b", "rnd_"),
    # a Twitter/X app bearer token: 21 or more "A"s, then the token (percent-encoded in places)
    ("twitter_bearer", "", "A{21,}[A-Za-z0-9%]{40,}", "AAAAAAAAAAAAAAAAAAAAA"),
)
_SMB_CLIENTS = "smbclient|smbmap|rpcclient|smbcacls|smbget|smbcquotas"
_RDP_CLIENTS = "xfreerdp3?|wlfreerdp3?|sdl3?-freerdp|freerdp3?"
_ANCHORED_RULES: tuple[Rule, ...] = (
    *(Rule(name, f"\\b({prefix}){body}", Kind.KEEP_PREFIX, name if name in CHECKS else "", scan=anchor, lane=_ANCHORED)
      for name, prefix, body, anchor in _ANCHORED_PREFIXED),
    # SMB: smbclient //srv/share -U 'DOM\\user%pass'
    Rule("smb_password", f"\\b(?:{_SMB_CLIENTS})[ \t](?:{_SHELL_REST}[ \t])?(?:-U|--user(?:name)?)[ \t=]*[\"']?"
         "[^ \t\r\n%\"']+%([^ \t\r\n'\"`|;&<>]+)", Kind.ARG, scan=f"(?:{_SMB_CLIENTS})[ \t]", lane=_ANCHORED),
    # FreeRDP: xfreerdp /v:host /u:user /p:pass
    Rule("rdp_password", f"\\b(?:{_RDP_CLIENTS})[ \t](?:{_SHELL_REST}[ \t])?/p:{_ARG_VALUE}", Kind.ARG,
         scan=f"(?:{_RDP_CLIENTS})[ \t]", lane=_ANCHORED),
    # unrar x -pPASS archive.rar (``-p-`` asks for none)
    Rule("rar_password", f"\\b(?:unrar|rar)[ \t](?:{_SHELL_REST}[ \t])?-p([^- \t\r\n'\"`|;&<>][^ \t\r\n'\"`|;&<>]*"
         "|'[^'\r\n]+'|\"[^\"\r\n]+\")", Kind.ARG, scan="(?:unrar|rar)[ \t]", lane=_ANCHORED),
    # redis-cli's prompt: ``127.0.0.1:6379> AUTH pass``, ``redis> AUTH user pass``; the value ends its line
    # (``<td>AUTH method</td>`` is markup).  The look-ahead is Python's: this lane's exact patterns run
    # on ``re`` only, its scan (the anchor) is what RE2 or Hyperscan runs.
    Rule("redis_auth", ">[ \t]?(?:AUTH|auth)[ \t]+(?:[^ \t\r\n<>]+[ \t]+)?([^ \t\r\n<>]+)(?=[ \t]*(?:\r?\n|$))",
         Kind.ARG, scan=">[ \t]?(?:AUTH|auth)[ \t]", lane=_ANCHORED),
    # codecov -t TOKEN, codecovcli upload-process -t TOKEN
    Rule("codecov_token", f"\\bcodecov(?:cli)?[ \t](?:{_SHELL_REST}[ \t])?-t[ \t]+{_ARG_VALUE}", Kind.ARG,
         scan="codecov(?:cli)?[ \t]", lane=_ANCHORED),
    # MinIO's client: mc alias set NAME URL ACCESS_KEY SECRET_KEY (also the older config host add)
    Rule("mc_alias", "\\bmc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)(?:[ \t]+[^ \t\r\n]+){3}"
         f"[ \t]+{_ARG_VALUE}", Kind.ARG, scan="mc[ \t]+(?:alias|config)[ \t]", lane=_ANCHORED),
    # Windows: net use Z: \\\\srv\\share PASS /user:DOM\\u, net use \\\\srv\\share /user:u PASS
    Rule("net_use", "\\b(?i:net)[ \t]+(?i:use)[ \t]+(?:[A-Za-z*]:[ \t]+)?\\\\\\\\[^ \t\r\n]+"
         "(?:[ \t]+/(?i:user|u):[^ \t\r\n]+)?[ \t]+([^/* \t\r\n'\"`|;&<>][^ \t\r\n'\"`|;&<>]*|\"[^\"\r\n]*\")",
         Kind.ARG, scan="(?i:net)[ \t]+(?i:use)[ \t]", lane=_ANCHORED),
    # curl with combined short flags: curl -fsSu user:pass URL
    Rule("curl_combined_user", f"\\bcurl[ \t](?:{_SHELL_REST}[ \t])?-[A-Za-z]{{1,6}}u[ \t]*[\"']?"
         "[^ \t\r\n:\"'\\\\]+:([^ \t\r\n\"'\\\\]+)", Kind.ARG, scan="curl[ \t]", lane=_ANCHORED),
    # SQL: CREATE USER u IDENTIFIED BY 'p' / ALTER ROLE r WITH LOGIN PASSWORD 'p'
    Rule("sql_identified_by", "\\b(?i:identified)[ \t]+(?i:by)[ \t]+('[^'\r\n]*'|\"[^\"\r\n]*\"|[^ \t\r\n'\";]+)",
         Kind.ARG, scan="(?i:identified)[ \t]+(?i:by)[ \t]", lane=_ANCHORED),
    Rule("sql_password", "\\b(?i:password)[ \t]+[eE]?('[^'\r\n]+'|\"[^\"\r\n]+\")", Kind.ARG,
         scan="(?i:password)[ \t]+[eE]?['\"]", lane=_ANCHORED),
    # kaggle.json: {"username":"u","key":"<32 hex>"}
    Rule("kaggle_key", "\"username\"[ \t]*:[ \t]*\"[^\"\r\n]*\"[ \t]*,[ \t]*\"key\"[ \t]*:[ \t]*\"([0-9a-f]{32})\"",
         Kind.ARG, scan="\"username\"[ \t]*:", lane=_ANCHORED),
    # Twilio's SDKs: Client("AC<sid>", "<auth token>"), require('twilio')('AC…', '…'): the sid stays
    Rule("twilio_client", "\\b(AC[0-9a-f]{32}[\"'][ \t]*,[ \t]*[\"'])[0-9a-f]{32}\\b", Kind.KEEP_PREFIX,
         scan="AC[0-9a-f]{32}[\"']", lane=_ANCHORED),
)


def _prefixed_rule(name: str, prefix: str, body: str, lane: str = "") -> Rule:
    return Rule(name, f"{_B}({prefix}){body}", Kind.KEEP_PREFIX, name if name in CHECKS else "", lane=lane)


def _in_lane(lane: str, rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
    return tuple(dataclasses.replace(rule, lane=lane) for rule in rules)


RULES: tuple[Rule, ...] = (
    Rule("private_key", PEM_BEGIN, Kind.PEM),
    Rule("url_userinfo", f"://({_URL_USER}):({_URL_PASSWORD})@", Kind.USERINFO),
    Rule("slack_webhook", "(https://hooks\\.slack\\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/-]{8,}",
         Kind.KEEP_PREFIX),
    Rule("discord_webhook",
         "(https://(?:ptb\\.|canary\\.)?discord(?:app)?\\.com/api/webhooks/[0-9]{5,}/)[A-Za-z0-9_-]{20,}",
         Kind.KEEP_PREFIX),
    *_URL_SIGNATURE_RULES,
    *(rule for rule in _ARG_RULES if rule.kind is Kind.ARG and rule.name != "datadog"),
    Rule("keyword", f"({KEYWORD_RE})({KEY_SEPARATOR_RE})", Kind.KEYWORD),
    # No \\B before "--"/"-u": a redaction just before them must not change whether they match.
    # also ``--api_key X`` and an argv list's ``"--password", "X"``
    Rule("flag", f"(--(?:[A-Za-z0-9]+[-_])*{FLAG_WORD_RE})(?:[ \t]+|%20|[\"'][ \t]*,[ \t]*)", Kind.FLAG),
    # Go's and Java's single-dash ``-token X``, camelCase ``-apiKey X`` / ``--accessToken X``
    # (after a blank, quote or bracket: in the middle of a word a dash is no flag's)
    Rule("short_flag", f"[ \t\"'\\[(,](-(?:[A-Za-z0-9]+[-_])*(?:[a-z][A-Za-z0-9]*{_CAMEL_FLAG_WORD}|{FLAG_WORD_RE})"
         f"|--[a-z][A-Za-z0-9]*{_CAMEL_FLAG_WORD})(?:[ \t]+|[\"'][ \t]*,[ \t]*)", Kind.FLAG, lane=_CODE_LANE),
    # ``- name: DB_PASSWORD`` / ``value: …``, ``ParameterKey=…,ParameterValue=…``, ``variable "x" { default = … }``
    Rule("name_value", "(?:\\b(?:name|Name|NAME|ParameterKey|ParameterName|OptionName)[\"']?[ \t]*[:=][ \t]*[\"']?"
         f"|\\bvariable[ \t]+\"|[ \t](?:key|Key)=[\"'])({_SECRET_WORD_NAME})", Kind.NAME_VALUE, lane=_CODE_LANE,
         scan="(?:name|Name|NAME|ParameterKey|ParameterName|OptionName)[\"']?[ \t]*[:=]|variable[ \t]+\"|[ \t](?:key|Key)=[\"']"),
    # after the keyword rule, which reads "password: x" and "DD_API_KEY=x" better
    *(rule for rule in _ARG_RULES if rule.kind is Kind.LINE_ARG or rule.name == "datadog"),
    *_CLIENT_RULES,
    Rule("curl_user", "(?:--(?:proxy-)?user|-[uU])[ \t]+[\"']?([^ \t\r\n:\"'\\\\]+):([^ \t\r\n\"'\\\\]+)", Kind.CURL_USER),
    Rule("bearer", "\\b((?i:bearer)(?:[ \t]+|%20))([A-Za-z0-9._~+/=-]{8,})", Kind.BEARER),
    Rule("basic", "\\b((?i:basic)[ \t]+)([A-Za-z0-9+/]{8,}={0,2})", Kind.BASIC),
    Rule("discord_token", "\\b()[MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,40}\\b",
         Kind.KEEP_PREFIX, "discord"),
    *(_prefixed_rule(name, prefix, body) for name, prefix, body in _PREFIXED),
    *(_prefixed_rule(name, prefix, body, _CODE_LANE) for name, prefix, body in _MORE_PREFIXED),
    # an Entra ID (Azure AD) client secret: 3 characters, "8Q~", 31-34 more.  The match starts at "8Q~"
    # (the three before it stay): a run of [A-Za-z0-9_~.-] ahead of it would keep the shared scan
    # inside every word.
    Rule("azure_ad_secret", "()8Q~[A-Za-z0-9_~.-]{31,34}", Kind.KEEP_PREFIX),
    *_in_lane(_CODE_LANE, _CODE_AND_COMMAND_RULES),
    *_ANCHORED_RULES,
    # A random-looking value after = or : whatever the key is called (config.env's ``mimi=…``).
    # Starting with [a-z0-9]*[A-Z+] keeps ses_/msg_ ids, sha512- integrity, hex SHAs, UUIDs and
    # paths out of the candidates before Python ever sees them.
    Rule("generic", f"[=:][ \t]*(?:\\\\?[\"'])?((?:{_GENERIC_VALUE})={{0,2}})", Kind.GENERIC,
         scan=f"[=:][ \t]*(?:\\\\?[\"'])?(?:{_GENERIC_SCAN})", lane="generic"),
    Rule("csv_header", CSV_HEADER_RE, Kind.CSV_HEADER),
    Rule("b64_run", B64_RUN_RE, Kind.B64_RUN, scan=B64_RUN_RE, lane="b64"),
)


def combined_pattern(rules: tuple[Rule, ...] = RULES) -> str:
    """One alternation, each rule wrapped in its own capturing group (leftmost-first semantics)."""
    return "|".join(f"({rule.pattern})" for rule in rules)


_COUNTED = re.compile(r"\{(\d+)(?:,\d*)?\}")


def _loosen(pattern: str) -> str:
    """A superset of ``pattern`` that starts wherever it can start: counted repetitions become
    ``+``/``*`` and ``\\b`` assertions go.  Counters and word boundaries multiply RE2's DFA states
    when dozens of rules run side by side; the exact pattern is checked afterwards in Python."""
    loose = _COUNTED.sub(lambda m: "+" if int(m.group(1)) else "*", pattern)
    return _TRAILING_RUN.sub(r"\1\2", loose.replace("\\b", "").replace("\\B", ""))


# A pattern's last item, a run of one character class (``[A-Za-z0-9]+``, also closing a group),
# is cut to one character: the same start positions, but RE2 stops at the match's first
# character instead of following the whole token through new lazy-DFA states beside every other
# rule's partial matches.
_TRAILING_RUN = re.compile(r"(\[(?:\\.|[^\]\\])+\])\+(\)?)$")


def scan_pattern(rules: tuple[Rule, ...] = RULES) -> str:
    """The candidate-finding alternation (no captures needed)."""
    return "|".join(f"(?:{rule.scan or _loosen(rule.pattern)})" for rule in rules)


# All the rules share one RE2 DFA except the base64 run and the generic value: a counted class
# beside the others multiplies the DFA's states (the base64 run made it ten times slower; the
# generic rule's tiers kept the lazy DFA building new states all through a dense file, 16 us a
# candidate instead of 4), while one DFA for the rest is one call per candidate, not one per family.


def scan_lanes(rules: tuple[Rule, ...] = RULES) -> list[tuple[str, str]]:
    """(lane name, candidate alternation) per lane, in order of first appearance."""
    lanes: dict[str, list[Rule]] = {}
    for rule in rules:
        lanes.setdefault(rule.lane or "text", []).append(rule)
    return [(name, scan_pattern(tuple(members))) for name, members in lanes.items()]
