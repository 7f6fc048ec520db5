"""The rule handlers for single values, and the judgement of one value.

Quoted strings, the judgement of one value (placeholder, number, code) and the handlers for
provider tokens, URL userinfo, auth headers, random-looking values and secret-named assignments
(``password=…``, ``"apiKey": "…"``, ``--token …``, YAML blocks under a secret key).  What a
handler reads and answers is in ``_handler``.
"""

from __future__ import annotations

import re

from kilo_loop.redact import _patterns as sp
from kilo_loop.redact._handler import (
    ESCAPED_BREAK,
    HSPACE,
    MARK,
    SKIP,
    Edit,
    Handler,
    Outcome,
    Span,
    as_str,
    content_end,
    end_of_line,
    indent_of,
    mark_span,
    rescan,
    start_of_line,
)
from kilo_loop.redact._patterns import Kind, Rule

# --- byte-level patterns ----------------------------------------------------------------------

_KEY_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# A line-number gutter (``cat -n``, an agent's file view: ``    12→``) does not move a line's start.
_LINE_PREFIX = re.compile(
    rb"[ \t]*(?:[0-9]{1,7}(?:\t|\xe2\x86\x92)[ \t]*)?(?:(?:export|set)[ \t]+|-[ \t]+)?[\"']?"
)
_INLINE_VALUE = re.compile(rb"[^ \t\r\n\"'`,;&<>)}\]\\]+")
_FLAG_VALUE = re.compile(rb"[^ \t\r\n\"'`\\]+")
_COMMENT = re.compile(rb"[ \t]+(?:#|//)")
_QUOTED = re.compile(rb"\"(?:[^\"\\\r\n]|\\.)*\"|'(?:[^'\\\r\n]|\\.)*'")
_NESTED_KEY = re.compile(rb"[ \t]*(?:-[ \t]+)?(?:\"[^\"\r\n]*\"|'[^'\r\n]*'|[A-Za-z0-9_.-]+)[ \t]*[:=][ \t]*")
# An unquoted value that is code, not data: ``token = await fetch_token()``, ``key = os.environ[…]``
# (a call or subscript on a name chain, or one of these words and a blank).  Literals inside it are
# still seen by the token rules (the scan resumes at the value).
_CODE_WORDS = frozenset({b"await", b"new", b"yield", b"lambda", b"function", b"async", b"typeof", b"not"})
_IDENT_CHAIN = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*")  # also Rust's ``std::env::var``
_AFTER_WORD = frozenset({b"", b",", b")", b";", b" ", b"\t", b"\r", b"\n", b"}", b"]"})
_EMPTY_OPENERS = frozenset({b"", b"|", b"|-", b"|+", b">", b">-", b">+", b"(", b"[", b"\\"})




# --- value parsing ----------------------------------------------------------------------------


def _quoted_span(data: bytes, pos: int, limit: int) -> tuple[int, int, int] | None:
    """(content start, content end, position after the closing quote) for a value opening with
    ``"``, ``'``, ``\\"`` or ``\\'`` at ``pos``; unterminated quotes run to ``limit``."""
    if data.startswith((b"\\u0022", b"\\u0027"), pos):  # JSON inside a JSON string: ``\u0022x\u0022``
        close = data[pos:pos + 6]
        found = data.find(close, pos + 6, limit)
        return (pos + 6, limit, limit) if found < 0 else (pos + 6, found, found + 6)
    quote_at = pos
    while quote_at < limit and data[quote_at] == 0x5C:  # ``\"x\"``, ``\\\"x\\\"``: JSON in JSON in JSON
        quote_at += 1
    escaped = quote_at > pos
    if quote_at >= limit or data[quote_at] not in b"\"'":
        return None
    close = data[pos:quote_at + 1]
    start = quote_at + 1
    cursor = start
    while True:
        found = data.find(close, cursor, limit)
        if found < 0:
            return start, limit, limit
        if escaped or not _backslash_escaped(data, start, found):
            return start, found, found + len(close)
        cursor = found + 1


_YAML_TAG = re.compile(rb"![A-Za-z0-9_!.:/-]*[ \t]+(?=[^ \t\r\n])")  # ``!Pa55`` alone is a password
_STRING_PREFIX = re.compile(rb"[bBrRuUfF]{1,2}(?=[\"'])")


def _string_prefix_end(data: bytes, pos: int, end: int) -> int:
    """Past a string literal's prefix (Python's ``b"…"``, ``rb'…'``, ``f"…"``), or ``pos``."""
    prefix = _STRING_PREFIX.match(data, pos, end)
    return prefix.end() if prefix else pos


def _backslash_escaped(data: bytes, start: int, at: int) -> bool:
    count = 0
    while at - count - 1 >= start and data[at - count - 1] == 0x5C:
        count += 1
    return count % 2 == 1


def _scheme_split(value: bytes) -> int:
    """Length of a leading ``Bearer ``-style auth scheme to keep, or 0."""
    head, sep, rest = value.partition(b" ")
    if sep and rest.strip() and as_str(head).lower() in sp.AUTH_SCHEMES:
        return len(value) - len(rest.lstrip(b" \t"))
    return 0


# A value of token characters with a letter and a digit, and no blank, "$", "<", "%", "." or "[":
# no placeholder, number, auth scheme, version, plain name or earlier redaction can look like
# that, so of all the judgements below only "the value is the key's own name" is left to ask.
_PLAIN_TOKEN = re.compile(rb"[A-Za-z0-9_+/=-]+")
# Letters and digits (both), "_" and "-", then "=" padding at most: a plain token that is no
# type annotation, placeholder or code (a name with a digit is never a builtin type name, and
# with nothing after it on the line it is no call, subscript or default); as a name it can
# only be the key's own.
_MIXED_WORD = re.compile(rb"(?=[A-Za-z_-]*[0-9])(?=[0-9_-]*[A-Za-z])[A-Za-z0-9_-]+=*")
_DIGIT = re.compile(rb"[0-9]")
_LETTER = re.compile(rb"[A-Za-z]")


def value_edit(data: bytes, start: int, end: int, key: str) -> tuple[Edit, ...]:
    """Redact ``data[start:end]`` unless it is a placeholder; keep a leading auth scheme."""
    plain = _PLAIN_TOKEN.fullmatch(data, start, end)
    if plain and _DIGIT.search(data, start, end) and _LETTER.search(data, start, end):
        return SKIP if sp.names_itself(key, data[start:end].decode("ascii")) else ((start, end, MARK),)
    return _judged_edit(data, start, end, key)


_ID_ENDINGS = ("id", "Id", "ID")


def _judged_edit(data: bytes, start: int, end: int, key: str) -> tuple[Edit, ...]:
    """``value_edit`` asking every question."""
    value = data[start:end]
    if data.find(MARK[:-1], start, end) >= 0:  # already redacted (a token may stop before its "]")
        return SKIP
    keep = _scheme_split(value)
    secret = as_str(value[keep:])
    if sp.is_placeholder(secret) or (sp.is_number(secret) and not sp.numeric_is_secret(key)):
        return SKIP
    core = secret.strip().rstrip(",;").strip()
    if core.lower() in sp.AUTH_SCHEMES:
        return SKIP  # ``"Bearer " + token``: the scheme alone, the token is elsewhere
    if sp.names_itself(key, core) or sp.weak_key_plain_value(key, core):
        return SKIP
    if key.endswith(_ID_ENDINGS) and sp.names_a_stored_secret(key, core):
        return SKIP  # ``--secret-id prod/db/creds``: the secret's name
    return ((start + keep, end, MARK),)


# --- rule handlers ----------------------------------------------------------------------------


def _keep_prefix(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    start, end = span(g)
    keep_end = span(g + 1)[1]
    if rule.check and not sp.CHECKS[rule.check](as_str(data[keep_end:end])):
        return Outcome(SKIP, start + 1)
    return Outcome(((keep_end, end, MARK),), end)


def _userinfo(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    start, end = span(g + 2)
    if sp.is_placeholder(as_str(data[start:end])):
        return Outcome(SKIP, start)
    return Outcome(mark_span(start, end), span(g)[1])


_DSN_STOPS = frozenset(b" \t\r\n\"'`/=,;(")


def _dsn_at(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    """Go's MySQL DSN ``user:pass@tcp(host)/db``: the rule matches the rare ``@tcp(`` and the
    password is read backwards to the ``:`` after the user (a pattern starting at every ":" made
    the scan's DFA build states all through random text)."""
    at, end = span(g)
    start = at
    while start > max(floor, at - 256) and data[start - 1] not in _DSN_STOPS:
        start -= 1
    colon = data.find(b":", start, at)
    if colon < 0 or colon + 1 == at:
        return Outcome(SKIP, end)
    return Outcome(value_edit(data, colon + 1, at, "password"), end)


def _curl_user(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    return _userinfo(data, span, g, rule, floor)


def _bearer(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    start, end = span(g + 2)
    if not sp.bearer_token_like(as_str(data[start:end])):
        return Outcome(SKIP, start)
    return Outcome(mark_span(start, end), end)


def _basic(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    start, end = span(g + 2)
    if not sp.basic_credentials_like(as_str(data[start:end])):
        return Outcome(SKIP, start)
    return Outcome(mark_span(start, end), end)


_HASH_LABELS = (
    b"h1:", b"sha1:", b"sha256:", b"sha384:", b"sha512:", b"md5:", b"SHA1:", b"SHA256:", b"SHA512:", b"MD5:"
)  # upper case: an SSH key's fingerprint (``SHA256:nThbg6…``)


def _generic(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    start, end = span(g + 1)
    if data.endswith(_HASH_LABELS, max(0, span(g)[0] - 6), span(g)[0] + 1):
        return Outcome(SKIP, start)  # go.sum's ``h1:…=``, ``sha256:…``: a content hash
    if _public_id_key(data, span(g)[0]):
        return Outcome(SKIP, start)  # ``x-amz-id-2: …``: a request id, random but public
    value = as_str(data[start:end].rstrip(b"="))
    # Whatever follows may be redacted later; the verdict must not change when it is (idempotence).
    follows_word = data.startswith(MARK, end) or (end + 1 < len(data) and data[end] in b".@:" and (
        data[end + 1] in _KEY_CHARS or data.startswith(MARK, end + 1)
    ))
    if follows_word or not sp.looks_random(value):
        return Outcome(SKIP, start)
    return Outcome(mark_span(start, end), end)


# Response headers and log fields whose random-looking values are request ids, not credentials.
_PUBLIC_ID_KEYS = frozenset({
    b"x-amz-id-2", b"x-amz-request-id", b"x-amz-cf-id", b"x-amzn-requestid", b"x-amzn-request-id",
    b"x-amzn-trace-id", b"x-amz-version-id", b"x-amz-apigw-id", b"x-ms-request-id", b"x-request-id",
    b"x-correlation-id", b"x-guploader-uploadid", b"request-id", b"requestid", b"hostid", b"x-cloud-trace-context",
})
_PUBLIC_ID_LAST = frozenset(key[-1:] for key in _PUBLIC_ID_KEYS) | frozenset(key[-1:].upper() for key in _PUBLIC_ID_KEYS)
_PUBLIC_ID_KEY = re.compile(rb"[\"']?([A-Za-z0-9_-]{5,30})[\"']?[ \t]*\Z")


def _public_id_key(data: bytes, separator: int) -> bool:
    """Whether the key before the separator at ``separator`` names a public request id."""
    if data[max(0, separator - 3):separator].rstrip(b"\"' \t")[-1:] not in _PUBLIC_ID_LAST:
        return False  # most keys: decided by their last character, without a regex
    key = _PUBLIC_ID_KEY.search(data, max(0, separator - 40), separator)
    return key is not None and key.group(1).lower() in _PUBLIC_ID_KEYS


def _key_start(data: bytes, kw_start: int, floor: int) -> int:
    start = kw_start
    floor = max(floor, kw_start - 128)
    while start > floor and data[start - 1] in _KEY_CHARS:
        start -= 1
    if start > 0 and data[start - 1] == 0x25 and _HEX2.fullmatch(data, start, start + 2):
        start = min(start + 2, kw_start)  # ``%3Fapi_key``: the key follows a percent escape
    elif start > 0 and data[start - 1] == 0x5C and data[start:start + 1] in (b"n", b"t", b"r") and start < kw_start:
        start += 1  # ``\nSTRIPE_KEY=…`` in a JSON string: the key follows an escaped newline
    return start


_HEX2 = re.compile(rb"[0-9A-Fa-f]{2}")


def _keyword(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    kw_start, kw_end = span(g + 1)
    sep_start, sep_end = span(g + 2)
    key_start = _key_start(data, kw_start, floor)
    key = as_str(data[key_start:kw_end])
    if data.endswith(b"${", 0, key_start):
        return Outcome(SKIP, sep_start)  # ``${DB_PASSWORD:?unset}``: a shell expansion, not an assignment
    if data[key_start - 1:key_start] == b":" and _in_arn(data, key_start):
        return Outcome(SKIP, sep_end)  # ``arn:aws:secretsmanager:…:secret:prod/db``: a secret's name
    if not sp.is_secret_key(key) or data.startswith((b":", b"//"), sep_end) or _closes_string(
        data, key_start, sep_start, sep_end
    ):
        return Outcome(SKIP, sep_start)
    line_start = start_of_line(data, key_start)
    eol = end_of_line(data, sep_end)
    pos = HSPACE.match(data, sep_end).end()  # type: ignore[union-attr]
    if data[sep_end - 1] in b"\"'":  # the separator took the value's opening quote: code
        opening = _escapes_before(data, sep_start, sep_end - 1)
        return _code_argument(data, key_start, opening, eol, key, data[sep_start] != 0x28)
    # --password=… is inline, like --password …; so is a percent-encoded ``password%3D…``
    is_flag = data.startswith(b"-", key_start) or data[sep_start] == 0x25
    spaced, colon = pos > sep_end, data[sep_end - 1] == 0x3A
    if data.find(b" ", pos, eol) >= 0 and _prose_value(data, pos, eol, key):
        return Outcome(SKIP, pos)  # ``authorization: required for admin routes``, ``invalid token: expected 3``
    if line_start >= 0 and not is_flag and _at_line_start(data, line_start, key_start, sep_start):
        indent = indent_of(data, line_start, key_start)
        if data[pos:pos + 1] not in (b'"', b"'"):
            eol = _break_before(data, pos, eol)  # ``password: x\n  next``: an escaped break ends the value
        return line_start_value(data, pos, eol, key, indent, spaced, colon)
    opened = None if is_flag else _escaped_line_opener(data, key_start)
    if opened is not None:  # the key opens a line of a JSON string's text (``"output":"password: a b\n…"``)
        indent, closer = opened
        end = _escaped_line_end(data, pos, eol, closer)
        return line_start_value(data, pos, end, key, indent, spaced, colon, closer)
    return inline_value(data, pos, eol, key, sep_start, sep_end)


# A word and a blank and more: a sentence, where a token (or a header's scheme and token) has no
# blank after a plain word.  A password may be a passphrase of words: its keys are not asked.
_PROSE = re.compile(rb"[A-Za-z][a-z]+[ \t]+[A-Za-z0-9(]")
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "passcode", "pwd", "pass", "secret", "secrets", "pin"})


_SCHEME_PROSE = re.compile(rb"[a-z]+[ \t]+[A-Za-z0-9(]")  # after a scheme word: ``auth: token refreshed for``


def _prose_value(data: bytes, pos: int, eol: int, key: str) -> bool:
    if not _PASSWORD_WORDS.isdisjoint(sp.key_words(key)):
        return False
    prose = _PROSE.match(data, pos, eol)
    if prose is None:
        return False
    if as_str(data[pos:prose.end()].split()[0]).lower() not in sp.AUTH_SCHEMES:
        return True
    return _SCHEME_PROSE.match(data, prose.end() - 1, eol) is not None


_EXPORT = b"export"


def _break_before(data: bytes, pos: int, eol: int) -> int:
    backslash = data.find(b"\\", pos, eol)  # most values hold none: one memchr, no regex search
    if backslash < 0:
        return eol
    found = ESCAPED_BREAK.search(data, backslash, eol)
    return eol if found is None else found.start()


def _escaped_line_opener(data: bytes, key_start: int) -> tuple[int, bytes] | None:
    """When the key opens a line of a string's text (after an escaped line break, or right after
    the opening quote of a JSON string value): (its indent, the quote that closes the string)."""
    at = key_start
    while at > 0 and data[at - 1] in b" \t":
        at -= 1
    indent = key_start - at
    if at < key_start and data.endswith(_EXPORT, 0, at):
        at -= len(_EXPORT)
        while at > 0 and data[at - 1] in b" \t":
            at -= 1
    if at >= 2 and data[at - 1] in b"nr" and data[at - 2] == 0x5C:
        escapes = at - 1 - _escapes_before(data, 0, at - 1)
        return indent, b"\\" * ((escapes - 1) // 2) + b'"'
    if at >= 2 and data[at - 1] == 0x22:
        escapes = at - 1 - _escapes_before(data, 0, at - 1)
        colon = at - 1 - escapes
        while colon > 0 and data[colon - 1] in b" \t":
            colon -= 1
        if data[colon - 1:colon] == b":":
            return indent, b"\\" * escapes + b'"'
    return None


def _escaped_line_end(data: bytes, pos: int, eol: int, closer: bytes) -> int:
    """Where a line of a string's text ends: at an escaped line break or at the string's closing quote."""
    limit = _break_before(data, pos, eol)
    escapes = len(closer) - 1
    quote = data.find(b'"', pos, limit)
    while quote >= 0:
        run = quote - _escapes_before(data, pos, quote)
        if run <= escapes:
            return quote - run
        quote = data.find(b'"', quote + 1, limit)
    return limit


_ARN_STOPS = frozenset(b" \t\r\n\"'`=,;([{<>")


def _in_arn(data: bytes, pos: int) -> bool:
    start = pos
    floor = max(0, pos - 256)
    while start > floor and data[start - 1] not in _ARN_STOPS:
        start -= 1
    return data.startswith(b"arn:", start)


_SETTER_VERBS = frozenset({"set", "with", "use", "put", "add"})


def _escapes_before(data: bytes, floor: int, quote: int) -> int:
    """Where the backslashes escaping the quote at ``quote`` start (``\\"x\\"`` in JSON)."""
    while quote > floor and data[quote - 1] == 0x5C:
        quote -= 1
    return quote


def _code_argument(data: bytes, key_start: int, pos: int, eol: int, key: str, pair: bool) -> Outcome:
    """A secret handed over in code: ``Setenv("TOKEN", "x")`` / ``("password", "x")`` (``pair``:
    the key is a string, the value the next string), ``.setApiKey("x")`` / ``.password("x")`` (a
    setter or builder call).  Only a string literal is a value, and of a pair only one that a word
    list or a label cannot be: it has a digit or looks generated."""
    quoted = _quoted_span(data, pos, eol)
    if quoted is None:
        return Outcome(SKIP, pos)
    start, end, after = quoted
    value = as_str(data[start:end])
    if pair:
        opened = data[key_start - 1:key_start]
        generated = len(value) >= 6 and any(c.isdigit() for c in value)  # ``"v2"`` is a version
        if opened not in (b'"', b"'") or not (generated or sp.looks_random(value)):
            return Outcome(SKIP, pos)
    else:
        dot = key.rfind(".")
        words = sp.key_words(key[dot + 1:])
        called_on = dot >= 0 or data[key_start - 1:key_start] == b"."  # ``x.password(…)``
        setter = bool(words) and (words[0] in _SETTER_VERBS or (called_on and words[0] not in sp.READING_VERBS))
        closing = HSPACE.match(data, after, eol).end()  # type: ignore[union-attr]
        if not setter or any(c.isspace() for c in value) or data[closing:closing + 1] != b")":
            # ``Credentials("user", "pass")``: a user and a password; otherwise not a setter's one value
            return _user_and_password(data, pos, eol, key) or Outcome(SKIP, pos)
    if sp.is_secret_key(value):
        return Outcome(SKIP, pos)  # ``("password", "token")``: a list of names
    return Outcome(value_edit(data, start, end, key), after)


_USER_AND_PASSWORD = re.compile(
    rb"[ \t]*(?:\"[^\"\r\n]*\"|'[^'\r\n]*'|[A-Za-z_][A-Za-z0-9_.]*)[ \t]*,[ \t]*(?:Some\([ \t]*)?"
    rb"(?:\"([^\"\s]{3,})\"|'([^'\s]{3,})')"
)
_FACTORY_CALL = re.compile(r"\.(?:create|of)$")
_PAIR_TAKERS = frozenset({"auth", "credential", "credentials", "login"})


def _user_and_password(data: bytes, pos: int, eol: int, key: str) -> Outcome | None:
    """``auth=("user", "pass")``, ``Credentials("user", "pass")``: the second item, a string with
    no blank in it, is the password (None: not that shape, or the key takes no such pair)."""
    words = sp.key_words(_FACTORY_CALL.sub("", key).rsplit(".", 1)[-1])  # ``AwsBasicCredentials.create``
    if not words or words[-1] not in _PAIR_TAKERS or words[0] in sp.READING_VERBS:
        return None  # ``getCredentials("aws", "default")`` looks credentials up
    pair = _USER_AND_PASSWORD.match(data, pos, eol)
    if pair is None:
        return None
    group = 1 if pair.start(1) >= 0 else 2
    if sp.is_secret_key(as_str(pair.group(group))):
        return None
    return Outcome(value_edit(data, pair.start(group), pair.end(group), key), pair.end())


def _closes_string(data: bytes, key_start: int, sep_start: int, sep_end: int) -> bool:
    """``'Cookie:' header`` — the quote opened before the key closes right after the separator:
    a label inside a string, with no value."""
    quote = data[key_start - 1:key_start]
    if quote not in (b'"', b"'"):
        return False
    return data[sep_start:sep_start + 1] != quote and data.startswith(quote, sep_end)


def _at_line_start(data: bytes, line_start: int, key_start: int, sep_start: int) -> bool:
    """The key opens its line (env/YAML/INI/JSON).  A quote before the key must close right after
    it (``"password": …``); ``'name = value'`` inside a string literal is inline."""
    if not _LINE_PREFIX.fullmatch(data, line_start, key_start):
        return False
    opened = data[key_start - 1] if key_start > line_start and data[key_start - 1] in b"\"'" else None
    return opened is None or data[sep_start] == opened


_ENCODED_DELIMITER = re.compile(rb"%(?:25)?(?:2[0267Cc]|3[BbDd]|0[AaDd]|7[Dd]|5[Dd])")


def inline_value(data: bytes, pos: int, eol: int, key: str, sep_start: int, sep_end: int) -> Outcome:
    if data[sep_start] == 0x25:  # ``password%3Dx%26user%3Dy``: the value ends at an encoded delimiter
        return _encoded_value(data, pos, eol, key)
    if data[sep_end - 1] == 0x3A and (default := sp.annotation(data, pos, eol)) is not None:
        if default >= eol or data[default:default + 1] in (b"", b",", b")") or _is_name(data, default, eol):
            return Outcome(SKIP, pos)  # ``auth: AuthTypes | None = DEFAULT,`` — code, no literal
        pos = default  # ``token: str = "…"`` — the default is the value
    quoted = _quoted_span(data, _string_prefix_end(data, pos, eol), eol)
    if quoted:
        start, end, after = quoted
        edits = value_edit(data, start, end, key)
        if data.startswith(_ARROW, after) and (new := _quoted_span(data, after + len(_ARROW), eol)):
            return Outcome(edits + value_edit(data, new[0], new[1], key), new[2])  # a plan's ``"old" -> "new"``
        return Outcome(edits, after)
    braced = _BRACED.match(data, pos, eol) if data[sep_start] == 0x3D else None
    if braced:  # ODBC's ``Pwd={p;w0rd};``: braces quote a value (JSX's ``apiKey={props.apiKey}`` is code)
        inner = as_str(data[pos + 1:braced.end() - 1])
        edits = SKIP if sp.is_code_reference(key, inner) else value_edit(data, pos + 1, braced.end() - 1, key)
        return Outcome(edits, braced.end())
    if data.startswith(b"(", pos) and (pair := _user_and_password(data, pos + 1, eol, key)):
        return pair  # ``auth=("user", "pass")``
    if data.startswith(_HIDDEN_BEFORE, pos) and (new := _quoted_span(data, pos + len(_HIDDEN_BEFORE), eol)):
        return Outcome(value_edit(data, new[0], new[1], key), new[2])  # a plan's ``(sensitive value) -> "new"``
    if pos < eol and data[pos] == 0x7B and (nested := _nested_value(data, pos, key)) is not None:
        return nested  # ``"db_password": {"sensitive": true, …, "value": "x"}``
    if pos >= eol or data[pos] in b"{[(" or _is_code(data, pos, eol, key):
        return Outcome(SKIP, max(pos, sep_start + 1))
    match = _INLINE_VALUE.match(data, pos, eol)
    end = match.end() if match else pos
    if end == pos:
        return Outcome(SKIP, pos)
    if _auth_scheme(data[pos:end], key):
        following = HSPACE.match(data, end, eol).end()  # type: ignore[union-attr]
        token = _INLINE_VALUE.match(data, following, eol)
        if not (following > end and token):
            return Outcome(SKIP, end)  # "Authorization: Bearer" names the scheme, nothing more
        return Outcome(value_edit(data, following, token.end(), key), token.end())
    return Outcome(value_edit(data, pos, end, key), pos)


_ARROW = b" -> "
_HIDDEN_BEFORE = b"(sensitive value)" + _ARROW
_BRACED = re.compile(rb"\{[^{}\r\n:,\"']+\}(?=[;\"']|\r?$)", re.MULTILINE)
_SCHEME_WORD = re.compile(rb"[A-Za-z][A-Za-z-]{1,19}")


def _auth_scheme(word: bytes, key: str) -> bool:
    """``Bearer``, ``Basic``…; under an Authorization header any word is one (``SSWS``, ``OAuth``,
    ``SharedKey``, ``GenieKey``): the credential is the token after it."""
    if as_str(word).lower() in sp.AUTH_SCHEMES:
        return True
    return bool(_SCHEME_WORD.fullmatch(word)) and sp.key_words(key)[-1:] == ("authorization",)


def _encoded_value(data: bytes, pos: int, eol: int, key: str) -> Outcome:
    """A percent-encoded value: up to the next encoded delimiter; ``Bearer%20token`` keeps the scheme."""
    cut = _ENCODED_DELIMITER.search(data, pos, eol)
    limit = cut.start() if cut else eol
    quoted = _quoted_span(data, pos, limit)
    if quoted:  # ``password%3D'x1y2'``
        return Outcome(value_edit(data, quoted[0], quoted[1], key), quoted[2])
    value = _INLINE_VALUE.match(data, pos, limit)
    end = value.end() if value else pos
    if cut and cut.start() == end and as_str(data[pos:end]).lower() in sp.AUTH_SCHEMES:
        return _encoded_value(data, cut.end(), eol, key)
    return Outcome(value_edit(data, pos, end, key) if end > pos else SKIP, max(end, pos + 1))


def _is_code(data: bytes, pos: int, eol: int, key: str) -> bool:
    """Code rather than data: calls/subscripts, ``await …``, variable references.  Literals inside
    are still seen by the token rules."""
    word = _IDENT_CHAIN.match(data, pos, eol)
    if word is None:
        return False
    # One greedy match of the chain decides both forms: a shorter prefix of it is always followed
    # by a name character or a dot, never by "(", "[" or a blank.
    after = word.end()
    within = data[after:after + 1] if after < eol else b""
    if within in (b"(", b"[") or (within in (b" ", b"\t") and word.group() in _CODE_WORDS):
        return True
    if data[after:after + 1] not in _AFTER_WORD:
        return False
    return sp.is_code_reference(key, as_str(word.group()))


def _is_name(data: bytes, pos: int, end: int) -> bool:
    """A bare (dotted) identifier: in ``key: Type = NAME`` it can only be code."""
    word = _IDENT_CHAIN.match(data, pos, end)
    return word is not None and data[word.end():word.end() + 1] in _AFTER_WORD


def line_start_value(
    data: bytes, pos: int, eol: int, key: str, indent: int, spaced: bool, colon: bool, closer: bytes = b""
) -> Outcome:
    """Env/YAML/INI/TOML style: the value is the rest of the line (quoted strings in it when it
    opens with a quote); an empty value opens an indented block.  ``closer``: the line is one of a
    string's text, its lines parted by escaped breaks, ending at that closing quote."""
    if spaced and data.startswith(b"#", pos):
        return _block(data, eol, indent, _rescan_comment(data, pos, eol), closer)
    tag = _YAML_TAG.match(data, pos, eol)
    if colon and tag:  # ``token: !vault |``, ``password: !secret db_password``, ``!Ref DbPassword``
        pos = tag.end()
        if _IDENT_CHAIN.fullmatch(data, pos, content_end(data, pos, eol)):
            return Outcome(SKIP, pos)  # a tag naming where the value lives
    if data.startswith(_TRIPLE_QUOTES, pos):
        return _triple_quoted(data, pos, eol, key)
    if data[pos:content_end(data, pos, eol)] in _EMPTY_OPENERS:
        return _block(data, eol, indent, (), closer)
    comment = _COMMENT.search(data, pos, eol)
    end = content_end(data, pos, comment.start() if comment else eol)
    if _MIXED_WORD.fullmatch(data, pos, end):
        # the commonest secrets, ``password: hunter2``, ``GITHUB_TOKEN=ghp_…``: of the questions
        # below only "is it the key's own name" can turn them away
        return Outcome(value_edit(data, pos, end, key), pos)
    if colon and (default := sp.annotation(data, pos, end)) is not None:
        if default >= end or _is_name(data, default, end):
            return Outcome(SKIP, pos)  # ``token: str | None = DEFAULT`` — code, no literal
        pos = default  # ``password: str = "…"`` — the default is the value
    if data.startswith(b"(", pos) and (pair := _user_and_password(data, pos + 1, end, key)):
        return pair  # ``auth = ("user", "pass")``
    if data[pos] == 0x7B and (nested := _nested_value(data, pos, key)) is not None:
        return nested  # ``db_password: {"sensitive": true, …, "value": "x"}``
    if data[pos] in b"{[(" or _is_code(data, pos, end, key):
        return Outcome(SKIP, pos)  # a tuple, dict or list: its items are scanned on their own
    pos = _string_prefix_end(data, pos, end)
    if data[pos] in b"\"'":
        return _quoted_values(data, pos, end, key)
    if closer and (quoted := _quoted_span(data, pos, end)):  # ``password: \"x\"`` in a JSON string
        return Outcome(value_edit(data, quoted[0], quoted[1], key), quoted[2])
    return Outcome(value_edit(data, pos, end, key), pos)


_OBJECT_VALUE_KEY = re.compile(rb"[\"']?value[\"']?[ \t]*:[ \t]*")
_NESTED_LINES = 8


def _nested_value(data: bytes, pos: int, key: str) -> Outcome | None:
    """A secret-named key whose value is an object holding the secret one level down, as ``terraform
    output -json`` prints a sensitive output (``{"sensitive": true, "type": "string", "value": "x"}``),
    on one line or pretty-printed over the next few: its ``"value"`` string is the secret."""
    eol = end_of_line(data, pos)
    close = data.find(b"}", pos, eol)
    limit = close if close >= 0 else eol
    found = _OBJECT_VALUE_KEY.search(data, pos, limit)
    line = eol + 1
    for _ in range(_NESTED_LINES if found is None and close < 0 else 0):
        if line >= len(data):
            break
        end = end_of_line(data, line)
        start = line + indent_of(data, line, end)
        if data.startswith(b"}", start):
            break
        found, limit = _OBJECT_VALUE_KEY.match(data, start, end), end
        if found:
            break
        line = end + 1
    quoted = _quoted_span(data, found.end(), limit) if found else None
    if quoted is None or quoted[1] == limit:
        return None
    return Outcome(value_edit(data, quoted[0], quoted[1], key), quoted[2])


_TRIPLE_QUOTES = (b'"""', b"'''")


def _triple_quoted(data: bytes, pos: int, eol: int, key: str) -> Outcome:
    """A TOML/Python multi-line string (three quotes, lines, three quotes): every line up to the
    closing quotes is the value; at the end of the data it stays open for the next line."""
    quotes = data[pos:pos + 3]
    start = pos + 3
    edits: list[Edit] = []
    while True:
        close = data.find(quotes, start, eol)
        stop = close if close >= 0 else content_end(data, start, eol)
        first = start + indent_of(data, start, stop)
        if stop > first:
            edits.extend(value_edit(data, first, stop, key))
        if close >= 0:
            return Outcome(tuple(edits), close + 3)
        if eol >= len(data):
            return Outcome(tuple(edits), len(data), b"password = " + quotes + b"\n")
        start, eol = eol + 1, end_of_line(data, eol + 1)


def _quoted_values(data: bytes, pos: int, end: int, key: str) -> Outcome:
    """``'a', 'b'`` are all values; in ``"a", "next": 1`` the scan resumes at the next key.  A quote
    left open on its line (a value wrapped onto the next one) holds the rest of the line."""
    if _QUOTED.match(data, pos, end) is None:
        return Outcome(value_edit(data, pos + 1, end, key), pos)
    edits: tuple[Edit, ...] = ()
    for match in _QUOTED.finditer(data, pos, end):
        after = HSPACE.match(data, match.end(), end).end()  # type: ignore[union-attr]
        if data.startswith((b":", b"="), after) and match.start() > pos:
            break
        edits += value_edit(data, match.start() + 1, match.end() - 1, key)
    return Outcome(edits, pos)


def _rescan_comment(data: bytes, start: int, end: int) -> tuple[Edit, ...]:
    """The comment on a block-opening line: the main loop resumes after the block, so the comment
    gets its own pass."""
    redacted = rescan(data[start:end])
    return () if redacted is None else ((start, end, redacted),)


def _block(data: bytes, eol: int, indent: int, head: tuple[Edit, ...], closer: bytes) -> Outcome:
    return _escaped_continuation(data, eol, indent, head, closer) if closer else _continuation(data, eol, indent, head)


def _escaped_continuation(data: bytes, eol: int, indent: int, head: tuple[Edit, ...], closer: bytes) -> Outcome:
    """``_continuation`` over the lines of a string's text (``"password:\\n  x1\\n  x2"``)."""
    edits = list(head)
    line = eol
    while (found := ESCAPED_BREAK.match(data, line)) is not None:
        start = found.end()
        end = _escaped_line_end(data, start, end_of_line(data, start), closer)
        content = content_end(data, start, end)
        depth = indent_of(data, start, end)
        if content == start + depth or depth <= indent:
            return Outcome(tuple(edits), start)
        edits.extend(_continuation_line(data, start + depth, content))
        line = end
    return Outcome(tuple(edits), line)


def _continuation(data: bytes, eol: int, indent: int, head: tuple[Edit, ...]) -> Outcome:
    """Lines indented deeper than a secret-named key with an empty value belong to that value."""
    edits = list(head)
    line = eol + 1
    while line < len(data):
        end = end_of_line(data, line)
        content = content_end(data, line, end)
        depth = indent_of(data, line, end)
        if content == line + depth or depth <= indent:
            return Outcome(tuple(edits), line)
        edits.extend(_continuation_line(data, line + depth, content))
        line = end + 1
    return Outcome(tuple(edits), len(data), b" " * indent + b"password:\n")


def _continuation_line(data: bytes, start: int, end: int) -> tuple[Edit, ...]:
    if data[start] in b"#;" or data[start:end].strip(b"{}[](),") == b"":
        return SKIP
    nested = _NESTED_KEY.match(data, start, end)
    if nested:
        if nested.end() >= end or data[nested.end()] in b"{[":
            return SKIP  # a nested key opening its own block: the deeper lines are judged next
        if _names_metadata(data[start:nested.end()]):
            return SKIP  # compose's ``db_password:`` / ``file: ./db_password.txt``: where it lives
        start = nested.end()
    elif data.startswith((b"- ", b"-\t"), start):
        start = HSPACE.match(data, start + 1, end).end()  # type: ignore[union-attr]
    quoted = _quoted_span(data, start, end)
    if quoted:
        return value_edit(data, quoted[0], quoted[1], "password")
    return value_edit(data, start, content_end(data, start, end), "password")


def _names_metadata(nested_key: bytes) -> bool:
    words = sp.key_words(as_str(nested_key))
    return bool(words) and words[-1] in sp.META_LAST_WORDS


_LOWER_WORD = re.compile(rb"[a-z]+")


def _flag(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    name_start, name_end = span(g + 1)
    pos = span(g)[1]
    # a short flag's match opens with the blank before the dash: a rule starting at the dash
    # (``-pass pass:x``) still gets its turn
    skip = Outcome(SKIP, name_start if span(g)[0] < name_start else pos)
    name = as_str(data[name_start:name_end]).lstrip("-")
    single = not data.startswith(b"--", name_start)
    listed = data[name_end:pos].strip(b" \t").startswith((b'"', b"'"))
    if single and name.lower() == "pass":
        return skip  # ``-pass file:x``, ``-pass pass:x``: openssl's
    if listed and data[name_start - 1:name_start] != data[name_end:name_end + 1]:
        return skip  # ``"--token", "x"`` are two items of a list, quoted alike
    if not (sp.is_secret_key(name) or name.lower() == "pass") or data.startswith(b"-", pos):
        return skip
    eol = end_of_line(data, pos)
    quoted = _quoted_span(data, pos, eol)
    if quoted:
        return Outcome(value_edit(data, quoted[0], quoted[1], name), quoted[2])
    if data[pos:pos + 1] in (b"[", b"<", b"{"):  # usage text: --token <TOKEN>, --auth [USER PASS]
        return skip
    match = _FLAG_VALUE.match(data, pos, eol)
    if not match or (single and _LOWER_WORD.fullmatch(data, pos, match.end())):
        return skip  # ``use the -token flag``: prose names a single-dash flag
    return Outcome(value_edit(data, pos, match.end(), name), pos)



HANDLERS: dict[Kind, Handler] = {
    Kind.USERINFO: _userinfo,
    Kind.KEEP_PREFIX: _keep_prefix,
    Kind.KEYWORD: _keyword,
    Kind.FLAG: _flag,
    Kind.CURL_USER: _curl_user,
    Kind.BEARER: _bearer,
    Kind.BASIC: _basic,
    Kind.GENERIC: _generic,
    Kind.DSN_AT: _dsn_at,
}
