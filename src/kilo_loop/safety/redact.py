"""The one redaction boundary: every event line, state file, report, archived prompt/handoff,
console line, dashboard stream item and notification passes through ``Redactor``.

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
  Perplexity, Databricks, Square, age, Supabase, Notion, Atlassian.
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
* URL userinfo keeps the user: ``https://user:[REDACTED]@host``.
* PEM private keys keep their ``-----BEGIN/END … PRIVATE KEY-----`` lines; every body line
  becomes ``[REDACTED]``.

Git SHAs, UUIDs, ``ses_…``/``msg_…`` ids, ``sha512-…`` integrity hashes and prose pass unchanged.
``redact_value`` redacts strings inside dicts/lists/tuples and, under a secret-named key, the whole
string.  Redaction is idempotent, never raises (an internal failure yields ``[REDACTED]`` for the
whole input: fail closed), and ``redact_lines`` yields exactly what ``redact`` gives for the joined
text, one output per input line, lazily.

Speed: RE2's DFA runs a loosened alternation of every rule over the UTF-8 bytes to find candidate
positions; Python's ``re`` confirms the exact rule at each (rare) candidate and the judgements of
``secret_patterns`` decide.  Without ``re2`` the exact alternation runs on Python's ``re`` alone.
"""

from __future__ import annotations

import binascii
import bisect
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from kilo_loop.safety import secret_patterns as sp
from kilo_loop.safety.secret_patterns import REDACTED, Kind, Rule

try:  # pragma: no cover - exercised by whichever environment runs the tests
    import re2
except ImportError:  # pragma: no cover
    re2 = None

__all__ = ["REDACTED", "Engine", "Redactor", "default_redactor", "redact_stream"]

_MARK = REDACTED.encode()
_MAX_DEPTH = 64

Spans = Sequence[tuple[int, int]]
Edit = tuple[int, int, bytes]


class Outcome(NamedTuple):
    """A handler's verdict.  ``resume``: where scanning goes on (never before the last edit's end);
    it must not depend on whether a value was redacted or not, or a second pass over the output
    would scan text the first pass skipped."""

    edits: tuple[Edit, ...]
    resume: int
    open_block: bytes | None = None  # synthetic header that re-opens a multi-line block next line


_SKIP: tuple[Edit, ...] = ()

# --- byte-level helpers -----------------------------------------------------------------------

_KEY_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_LINE_PREFIX = re.compile(rb"[ \t]*(?:(?:export|set)[ \t]+|-[ \t]+)?[\"']?")
_INLINE_VALUE = re.compile(rb"[^ \t\r\n\"'`,;&<>)}\]\\]+")
_FLAG_VALUE = re.compile(rb"[^ \t\r\n\"'`\\]+")
_HSPACE = re.compile(rb"[ \t]*")
# A redaction never ends inside a word: "[REDACTED]" must not create a \b the original lacked.
_ALNUM_RUN = re.compile(rb"[A-Za-z0-9]*")
_COMMENT = re.compile(rb"[ \t]+(?:#|//)")
_QUOTED = re.compile(rb"\"(?:[^\"\\\r\n]|\\.)*\"|'(?:[^'\\\r\n]|\\.)*'")
_PEM_START = re.compile(sp.PEM_BEGIN.encode())
_PEM_END = re.compile(sp.PEM_END.encode())
# A body line: base64 (or its redaction), a ``Proc-Type:`` style header, or base64 in a string
# literal of source code (``"MIIE…\\n" +``).
_PEM_BODY = re.compile(
    rb"[ \t]*(?:[A-Za-z0-9+/=]+|\[REDACTED\]|[A-Za-z-]+:[^\r\n]*"
    rb"|\+?[ \t]*[\"'](?:[A-Za-z0-9+/=]+|\[REDACTED\])(?:\\n)?[\"'][ \t]*[+,]?)?[ \t]*\r?"
)
_NESTED_KEY = re.compile(rb"[ \t]*(?:-[ \t]+)?(?:\"[^\"\r\n]*\"|'[^'\r\n]*'|[A-Za-z0-9_.-]+)[ \t]*[:=][ \t]*")
# An unquoted value that is code, not data: ``token = await fetch_token()``, ``key = os.environ[…]``.
# Literals inside it are still seen by the token rules (the scan resumes at the value).
_CODE_EXPR = re.compile(
    rb"(?:await|new|yield|lambda|function|async|typeof|not)[ \t]"
    rb"|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*[(\[]"
)
_IDENT_CHAIN = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_AFTER_WORD = frozenset({b"", b",", b")", b";", b" ", b"\t", b"\r", b"\n", b"}", b"]"})
_EMPTY_OPENERS = frozenset({b"", b"|", b"|-", b"|+", b">", b">-", b">+", b"(", b"[", b"\\"})
_PEM_HEADER = b"-----BEGIN PRIVATE KEY-----\n"
_PEM_MARKER_MAX = 80


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


# How far a value may run on one line.  Bounding every search keeps a huge single-line input
# (minified JSON) linear: no match scans to the end of the data for its newline.
_LINE_WINDOW = 1 << 16


def _line_end(data: bytes, pos: int) -> int:
    limit = min(len(data), pos + _LINE_WINDOW)
    end = data.find(b"\n", pos, limit)
    return limit if end < 0 else end


def _line_start(data: bytes, pos: int) -> int:
    """Start of the line holding ``pos``; -1 when that is farther back than the window."""
    floor = max(0, pos - _LINE_WINDOW)
    start = data.rfind(b"\n", floor, pos)
    if start >= 0:
        return start + 1
    return 0 if floor == 0 else -1


def _content_end(data: bytes, start: int, end: int) -> int:
    """End of a line's content: before a trailing ``\\r`` and trailing blanks."""
    while end > start and data[end - 1] in b" \t\r":
        end -= 1
    return end


def _indent(data: bytes, start: int, end: int) -> int:
    return _HSPACE.match(data, start, end).end() - start  # type: ignore[union-attr]


def _mark(start: int, end: int) -> tuple[Edit, ...]:
    return ((start, end, _MARK),)


# --- value parsing ----------------------------------------------------------------------------


def _quoted_span(data: bytes, pos: int, limit: int) -> tuple[int, int, int] | None:
    """(content start, content end, position after the closing quote) for a value opening with
    ``"``, ``'``, ``\\"`` or ``\\'`` at ``pos``; unterminated quotes run to ``limit``."""
    escaped = data.startswith(b"\\", pos)
    quote_at = pos + 1 if escaped else pos
    if quote_at >= limit or data[quote_at] not in b"\"'":
        return None
    close = data[quote_at - 1:quote_at + 1] if escaped else data[quote_at:quote_at + 1]
    start = quote_at + 1
    cursor = start
    while True:
        found = data.find(close, cursor, limit)
        if found < 0:
            return start, limit, limit
        if escaped or not _backslash_escaped(data, start, found):
            return start, found, found + len(close)
        cursor = found + 1


def _backslash_escaped(data: bytes, start: int, at: int) -> bool:
    count = 0
    while at - count - 1 >= start and data[at - count - 1] == 0x5C:
        count += 1
    return count % 2 == 1


def _scheme_split(value: bytes) -> int:
    """Length of a leading ``Bearer ``-style auth scheme to keep, or 0."""
    head, sep, rest = value.partition(b" ")
    if sep and rest.strip() and _text(head).lower() in sp.AUTH_SCHEMES:
        return len(value) - len(rest.lstrip(b" \t"))
    return 0


def _value_edit(data: bytes, start: int, end: int, key: str) -> tuple[Edit, ...]:
    """Redact ``data[start:end]`` unless it is a placeholder; keep a leading auth scheme."""
    value = data[start:end]
    if data.find(_MARK[:-1], start, end) >= 0:  # already redacted (a token may stop before its "]")
        return _SKIP
    keep = _scheme_split(value)
    secret = _text(value[keep:])
    if sp.is_placeholder(secret) or (sp.is_number(secret) and not sp.numeric_is_secret(key)):
        return _SKIP
    core = secret.strip().rstrip(",;").strip()
    if sp.names_itself(key, core) or sp.weak_key_plain_value(key, core):
        return _SKIP
    return ((start + keep, end, _MARK),)


# --- rule handlers ----------------------------------------------------------------------------


def _keep_prefix(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    start, end = spans[g]
    keep_end = spans[g + 1][1]
    if rule.check and not sp.CHECKS[rule.check](_text(data[keep_end:end])):
        return Outcome(_SKIP, start + 1)
    return Outcome(((keep_end, end, _MARK),), end)


def _userinfo(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    start, end = spans[g + 2]
    if sp.is_placeholder(_text(data[start:end])):
        return Outcome(_SKIP, start)
    return Outcome(_mark(start, end), spans[g][1])


def _curl_user(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    return _userinfo(data, spans, g, rule, floor)


def _bearer(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    start, end = spans[g + 2]
    if not sp.bearer_token_like(_text(data[start:end])):
        return Outcome(_SKIP, start)
    return Outcome(_mark(start, end), end)


def _basic(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    start, end = spans[g + 2]
    if not sp.basic_credentials_like(_text(data[start:end])):
        return Outcome(_SKIP, start)
    return Outcome(_mark(start, end), end)


_HASH_LABELS = (b"h1:", b"sha1:", b"sha256:", b"sha384:", b"sha512:", b"md5:")


def _generic(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    start, end = spans[g + 1]
    if data.endswith(_HASH_LABELS, max(0, spans[g][0] - 6), spans[g][0] + 1):
        return Outcome(_SKIP, start)  # go.sum's ``h1:…=``, ``sha256:…``: a content hash
    value = _text(data[start:end].rstrip(b"="))
    # Whatever follows may be redacted later; the verdict must not change when it is (idempotence).
    follows_word = data.startswith(_MARK, end) or end + 1 < len(data) and data[end] in b".@:" and (
        data[end + 1] in _KEY_CHARS or data.startswith(_MARK, end + 1)
    )
    if follows_word or not sp.looks_random(value):
        return Outcome(_SKIP, start)
    return Outcome(_mark(start, end), end)


def _key_start(data: bytes, kw_start: int, floor: int) -> int:
    start = kw_start
    floor = max(floor, kw_start - 128)
    while start > floor and data[start - 1] in _KEY_CHARS:
        start -= 1
    if start > 0 and data[start - 1] == 0x25 and _HEX2.fullmatch(data, start, start + 2):
        start = min(start + 2, kw_start)  # ``%3Fapi_key``: the key follows a percent escape
    return start


_HEX2 = re.compile(rb"[0-9A-Fa-f]{2}")


def _keyword(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    kw_start, kw_end = spans[g + 1]
    sep_start, sep_end = spans[g + 2]
    key_start = _key_start(data, kw_start, floor)
    key = _text(data[key_start:kw_end])
    if not sp.is_secret_key(key) or data.startswith((b":", b"//"), sep_end) or _closes_string(
        data, key_start, sep_start, sep_end
    ):
        return Outcome(_SKIP, sep_start)
    line_start = _line_start(data, key_start)
    eol = _line_end(data, sep_end)
    pos = _HSPACE.match(data, sep_end).end()  # type: ignore[union-attr]
    # --password=… is inline, like --password …; so is a percent-encoded ``password%3D…``
    is_flag = data.startswith(b"-", key_start) or data[sep_start] == 0x25
    if line_start >= 0 and not is_flag and _at_line_start(data, line_start, key_start, sep_start):
        indent = _indent(data, line_start, key_start)
        return _line_start_value(data, pos, eol, key, indent, pos > sep_end, data[sep_end - 1] == 0x3A)
    return _inline_value(data, pos, eol, key, sep_start, sep_end)


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


_ENCODED_DELIMITER = re.compile(rb"%(?:2[0267Cc]|3[BbDd]|0[AaDd]|7[Dd]|5[Dd])")


def _inline_value(data: bytes, pos: int, eol: int, key: str, sep_start: int, sep_end: int) -> Outcome:
    if data[sep_start] == 0x25:  # ``password%3Dx%26user%3Dy``: the value ends at an encoded delimiter
        return _encoded_value(data, pos, eol, key)
    if data[sep_end - 1] == 0x3A and (default := sp.annotation(data, pos, eol)) is not None:
        if default >= eol or data[default:default + 1] in (b"", b",", b")") or _is_name(data, default, eol):
            return Outcome(_SKIP, pos)  # ``auth: AuthTypes | None = DEFAULT,`` — code, no literal
        pos = default  # ``token: str = "…"`` — the default is the value
    quoted = _quoted_span(data, pos, eol)
    if quoted:
        start, end, after = quoted
        return Outcome(_value_edit(data, start, end, key), after)
    if pos >= eol or data[pos] in b"{[(" or _is_code(data, pos, eol, key):
        return Outcome(_SKIP, max(pos, sep_start + 1))
    match = _INLINE_VALUE.match(data, pos, eol)
    end = match.end() if match else pos
    if end == pos:
        return Outcome(_SKIP, pos)
    if _text(data[pos:end]).lower() in sp.AUTH_SCHEMES:
        following = _HSPACE.match(data, end, eol).end()  # type: ignore[union-attr]
        token = _INLINE_VALUE.match(data, following, eol)
        if not (following > end and token):
            return Outcome(_SKIP, end)  # "Authorization: Bearer" names the scheme, nothing more
        return Outcome(_value_edit(data, following, token.end(), key), token.end())
    return Outcome(_value_edit(data, pos, end, key), pos)


def _encoded_value(data: bytes, pos: int, eol: int, key: str) -> Outcome:
    """A percent-encoded value: up to the next encoded delimiter; ``Bearer%20token`` keeps the scheme."""
    cut = _ENCODED_DELIMITER.search(data, pos, eol)
    end = _INLINE_VALUE.match(data, pos, cut.start() if cut else eol).end()  # type: ignore[union-attr]
    if cut and cut.start() == end and _text(data[pos:end]).lower() in sp.AUTH_SCHEMES:
        return _encoded_value(data, cut.end(), eol, key)
    return Outcome(_value_edit(data, pos, end, key) if end > pos else _SKIP, max(end, pos + 1))


def _is_code(data: bytes, pos: int, eol: int, key: str) -> bool:
    """Code rather than data: calls/subscripts, ``await …``, variable references.  Literals inside
    are still seen by the token rules."""
    if _CODE_EXPR.match(data, pos, eol):
        return True
    word = _IDENT_CHAIN.match(data, pos, eol)
    if word is None or data[word.end():word.end() + 1] not in _AFTER_WORD:
        return False
    return sp.is_code_reference(key, _text(word.group()))


def _is_name(data: bytes, pos: int, end: int) -> bool:
    """A bare (dotted) identifier: in ``key: Type = NAME`` it can only be code."""
    word = _IDENT_CHAIN.match(data, pos, end)
    return word is not None and data[word.end():word.end() + 1] in _AFTER_WORD


def _line_start_value(
    data: bytes, pos: int, eol: int, key: str, indent: int, spaced: bool, colon: bool
) -> Outcome:
    """Env/YAML/INI/TOML style: the value is the rest of the line (quoted strings in it when it
    opens with a quote); an empty value opens an indented block."""
    if spaced and data.startswith(b"#", pos):
        return _continuation(data, eol, indent, _rescan_comment(data, pos, eol))
    if data[pos:_content_end(data, pos, eol)] in _EMPTY_OPENERS:
        return _continuation(data, eol, indent, ())
    comment = _COMMENT.search(data, pos, eol)
    end = _content_end(data, pos, comment.start() if comment else eol)
    if colon and (default := sp.annotation(data, pos, end)) is not None:
        if default >= end or _is_name(data, default, end):
            return Outcome(_SKIP, pos)  # ``token: str | None = DEFAULT`` — code, no literal
        pos = default  # ``password: str = "…"`` — the default is the value
    if data[pos] in b"{[" or _is_code(data, pos, end, key):
        return Outcome(_SKIP, pos)
    if data[pos] in b"\"'":
        return _quoted_values(data, pos, end, key)
    return Outcome(_value_edit(data, pos, end, key), pos)


def _quoted_values(data: bytes, pos: int, end: int, key: str) -> Outcome:
    """``'a', 'b'`` are all values; in ``"a", "next": 1`` the scan resumes at the next key."""
    edits: tuple[Edit, ...] = ()
    for match in _QUOTED.finditer(data, pos, end):
        after = _HSPACE.match(data, match.end(), end).end()  # type: ignore[union-attr]
        if data.startswith((b":", b"="), after) and match.start() > pos:
            break
        edits += _value_edit(data, match.start() + 1, match.end() - 1, key)
    return Outcome(edits, pos)


def _rescan_comment(data: bytes, start: int, end: int) -> tuple[Edit, ...]:
    """The comment on a block-opening line: the main loop resumes after the block, so the comment
    gets its own pass."""
    redacted, _ = _engine(True).scan(data[start:end])
    return () if redacted is None else ((start, end, redacted),)


def _continuation(data: bytes, eol: int, indent: int, head: tuple[Edit, ...]) -> Outcome:
    """Lines indented deeper than a secret-named key with an empty value belong to that value."""
    edits = list(head)
    line = eol + 1
    while line < len(data):
        end = _line_end(data, line)
        content = _content_end(data, line, end)
        depth = _indent(data, line, end)
        if content == line + depth or depth <= indent:
            return Outcome(tuple(edits), line)
        edits.extend(_continuation_line(data, line + depth, content))
        line = end + 1
    return Outcome(tuple(edits), len(data), b" " * indent + b"password:\n")


def _continuation_line(data: bytes, start: int, end: int) -> tuple[Edit, ...]:
    if data[start] in b"#;" or data[start:end].strip(b"{}[](),") == b"":
        return _SKIP
    nested = _NESTED_KEY.match(data, start, end)
    if nested:
        if nested.end() >= end or data[nested.end()] in b"{[":
            return _SKIP  # a nested key opening its own block: the deeper lines are judged next
        start = nested.end()
    elif data.startswith((b"- ", b"-\t"), start):
        start = _HSPACE.match(data, start + 1, end).end()  # type: ignore[union-attr]
    quoted = _quoted_span(data, start, end)
    if quoted:
        return _value_edit(data, quoted[0], quoted[1], "password")
    return _value_edit(data, start, _content_end(data, start, end), "password")


def _flag(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    name_start, name_end = spans[g + 1]
    pos = spans[g][1]
    name = _text(data[name_start:name_end]).lstrip("-")
    if not (sp.is_secret_key(name) or name.lower() == "pass") or data.startswith(b"-", pos):
        return Outcome(_SKIP, pos)
    eol = _line_end(data, pos)
    quoted = _quoted_span(data, pos, eol)
    if quoted:
        return Outcome(_value_edit(data, quoted[0], quoted[1], name), quoted[2])
    if data[pos:pos + 1] in (b"[", b"<", b"{"):  # usage text: --token <TOKEN>, --auth [USER PASS]
        return Outcome(_SKIP, pos)
    match = _FLAG_VALUE.match(data, pos, eol)
    if not match:
        return Outcome(_SKIP, pos)
    return Outcome(_value_edit(data, pos, match.end(), name), pos)


def _pem(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    """Keep the BEGIN/END lines; the rest of the BEGIN line and each body line become [REDACTED].
    The body ends at the END marker or at the first line that cannot belong to a key.  A log
    prefix before the BEGIN marker (``api-1  | ``) is looked for, and kept, on the body lines."""
    marker_start, marker_end = spans[g]
    eol = _line_end(data, marker_end)
    same_line = _PEM_END.search(data, marker_end, eol)
    if same_line:
        return Outcome(_blank_or_mark(data, marker_end, same_line.start()), same_line.end())
    edits = list(_blank_or_mark(data, marker_end, _content_end(data, marker_end, eol)))
    return _pem_body(data, eol + 1, edits, _log_prefix(data, marker_start))


_LOG_PREFIX = re.compile(rb"[^\r\n|]{1,60}\|[ \t]*|\[[^\]\r\n]{1,60}\][ \t]*")


def _log_prefix(data: bytes, marker_start: int) -> bytes:
    """``api-1  | `` (docker compose), ``[pod/api/app] `` (kubectl --prefix) before a marker."""
    line_start = _line_start(data, marker_start)
    if line_start < 0 or line_start == marker_start:
        return b""
    prefix = data[line_start:marker_start]
    return prefix if _LOG_PREFIX.fullmatch(prefix) else b""


def _pem_body(data: bytes, line: int, edits: list[Edit], prefix: bytes) -> Outcome:
    """Body lines from ``line`` on (after ``prefix`` where they carry it) become [REDACTED], up to
    the END marker or a line that cannot be key material; at the end of the data the block stays
    open for the next line."""
    while line < len(data):
        end = _line_end(data, line)
        body = line + len(prefix) if prefix and data.startswith(prefix, line) else line
        closing = _PEM_END.search(data, body, end)
        if closing:
            edits.extend(_blank_or_mark(data, body + _indent(data, body, end), closing.start()))
            return Outcome(tuple(edits), closing.end())
        if not _PEM_BODY.fullmatch(data, body, end):
            return Outcome(tuple(edits), line)
        edits.extend(_blank_or_mark(data, body + _indent(data, body, end), _content_end(data, body, end)))
        line = end + 1
    return Outcome(tuple(edits), len(data), prefix + _PEM_HEADER)


def _blank_or_mark(data: bytes, start: int, end: int) -> tuple[Edit, ...]:
    if not data[start:end].strip(b" \t\"'+,") or data[start:end] == _MARK:
        return _SKIP
    return _mark(start, end)


def _arg(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    """A password given as a command argument (``mysql -pX``, ``sshpass -p X``, ``password X``)."""
    start, end = spans[g + 1]
    if data[start:start + 1] in (b"'", b'"'):
        start, end = start + 1, end - 1
    return Outcome(_value_edit(data, start, end, "password"), spans[g + 1][1])


def _line_arg(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    """Like ``_arg``, when the match is all its line holds (a .netrc or .pgpass entry)."""
    match_start, value_end = spans[g]
    line_start = _line_start(data, match_start)
    eol = _line_end(data, value_end)
    alone = line_start >= 0 and not data[line_start:match_start].strip() and not data[value_end:eol].strip()
    if not alone or (rule.name == "pgpass" and _ipv6_like(data[match_start:value_end])):
        return Outcome(_SKIP, match_start + 1)
    return _arg(data, spans, g, rule, floor)


_IPV6_HEAD = re.compile(rb"(?:[0-9A-Fa-f]{1,4}:){4}")


def _ipv6_like(entry: bytes) -> bool:
    return bool(_IPV6_HEAD.match(entry))


_B64_CHARS = re.compile(rb"[A-Za-z0-9+/]*")
_B64_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2}")
_ENV_LINE = re.compile(rb"(?:^|\n)(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_.-]*[ \t]*[=:]")
_WRAP_WIDTHS = range(60, 80)  # ``base64`` wraps at 76, ``openssl base64`` at 64


def _b64_run(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    """A run of 40+ base64 characters: an AWS secret access key (exactly 40, random-looking,
    alone on its line or on a line about AWS), or base64 that decodes to text holding a secret
    (an encoded env file).  A wrapped blob's following lines go with it."""
    start = spans[g][0]
    end = _B64_CHARS.match(data, start).end()  # type: ignore[union-attr]
    if end - start < 40 or start > 0 and data[start - 1] in _B64_SET:
        return Outcome(_SKIP, end)  # too short, or the middle of a longer word
    if end - start == 40 and _aws_secret(data, start, end):
        return Outcome(_mark(start, end), end)
    padding = data[end:end + 2]
    padded = end + len(padding) - len(padding.lstrip(b"="))
    decoded = _decoded_env_text(data[start:padded])
    if decoded is None:
        return Outcome(_SKIP, end)
    line_start, eol = _line_start(data, start), _line_end(data, padded)
    whole_line = line_start >= 0 and not data[line_start:start].strip() and not data[padded:eol].strip()
    if whole_line and padded - start in _WRAP_WIDTHS:
        # one line of a wrapped blob: a value may run on into the next line, so the blob goes whole
        return _pem_body(data, eol + 1, list(_mark(start, padded)), b"")
    if _engine(True).scan(decoded)[0] is None:
        return Outcome(_SKIP, end)
    return Outcome(_mark(start, padded), padded)


_B64_SET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _aws_secret(data: bytes, start: int, end: int) -> bool:
    value = _text(data[start:end])
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if not mixed or not any(c.isdigit() or c in "+/" for c in value) or sp.identifier_like(value):
        return False
    line_start = max(_line_start(data, start), 0)
    eol = _line_end(data, end)
    alone = not data[line_start:start].strip(b" \t\"'") and not data[end:eol].strip(b" \t\"',;\r")
    return alone or sp.aws_context(_text(data[line_start:eol]))


def _decoded_env_text(run: bytes) -> bytes | None:
    """The run decoded, when it is base64 of UTF-8 text with ``KEY=value`` lines (an env file)."""
    usable = len(run) - len(run) % 4
    try:
        decoded = binascii.a2b_base64(run[:usable])
        text = decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    if not text.replace("\n", "").replace("\r", "").replace("\t", "").isprintable():
        return None
    return decoded if _ENV_LINE.search(decoded) else None


def _csv_header(data: bytes, spans: Spans, g: int, rule: Rule, floor: int) -> Outcome:
    """A CSV header naming secret columns (``user,password,host``): in the rows below it with
    as many cells, those cells are redacted (the rest of each row is scanned as usual)."""
    match_start = spans[g][0]
    line_start = _line_start(data, match_start)
    eol = _line_end(data, match_start)
    content = _content_end(data, line_start, eol)
    delimiter = _csv_delimiter(data[line_start:content]) if line_start >= 0 else b""
    header = _csv_cells(data, line_start, content, delimiter) if delimiter else []
    columns = sp.csv_secret_columns([_text(data[a:b]) for a, b in header])
    if not columns:
        return Outcome(_SKIP, match_start + 1)
    names = [_text(data[a:b]) for a, b in header]
    edits: list[Edit] = []
    line = eol + 1
    while line < len(data):
        end = _line_end(data, line)
        row_end = _content_end(data, line, end)
        cells = _csv_cells(data, line, row_end, delimiter)
        if row_end == line or len(cells) != len(header):
            return Outcome(tuple(edits), line)
        edits.extend(_csv_row(data, line, row_end, [(cells[i], names[i]) for i in columns]))
        line = end + 1
    return Outcome(tuple(edits), len(data), data[line_start:content] + b"\n")


def _csv_delimiter(line: bytes) -> bytes:
    counts = {delimiter: line.count(delimiter) for delimiter in (b",", b";", b"\t")}
    best = max(counts, key=lambda delimiter: counts[delimiter])
    return best if counts[best] else b""


def _csv_cells(data: bytes, start: int, end: int, delimiter: bytes) -> list[tuple[int, int]]:
    """Content spans of the cells of one CSV line (quotes stripped); [] when it does not parse."""
    cells: list[tuple[int, int]] = []
    pos = start
    while True:
        if data.startswith(b'"', pos):
            close = pos + 1
            while (close := data.find(b'"', close, end)) >= 0 and data.startswith(b'""', close):
                close += 2
            if close < 0:
                return []
            cells.append((pos + 1, close))
            pos = _HSPACE.match(data, close + 1, end).end()  # type: ignore[union-attr]
        else:
            found = data.find(delimiter, pos, end)
            cells.append((pos, end if found < 0 else found))
            pos = end if found < 0 else found
        if pos >= end:
            return cells
        if not data.startswith(delimiter, pos):
            return []
        pos += 1
        if pos == end:
            cells.append((end, end))
            return cells


def _csv_row(data: bytes, start: int, end: int, secret_cells: list[tuple[tuple[int, int], str]]) -> tuple[Edit, ...]:
    pieces, last = [], start
    for (cell_start, cell_end), name in secret_cells:
        for edit_start, edit_end, text in _value_edit(data, cell_start, cell_end, name):
            pieces += [data[last:edit_start], text]
            last = edit_end
    row = b"".join(pieces) + data[last:end]
    rescanned, _ = _engine(True).scan(row)
    row = rescanned if rescanned is not None else row
    return () if row == data[start:end] else ((start, end, row),)


# floor: where the previous edit ended; what lies before it is about to change, so look no further back.
Handler = Callable[[bytes, Spans, int, Rule, int], Outcome]
_HANDLERS: dict[Kind, Handler] = {
    Kind.PEM: _pem,
    Kind.USERINFO: _userinfo,
    Kind.KEEP_PREFIX: _keep_prefix,
    Kind.KEYWORD: _keyword,
    Kind.FLAG: _flag,
    Kind.CURL_USER: _curl_user,
    Kind.BEARER: _bearer,
    Kind.BASIC: _basic,
    Kind.GENERIC: _generic,
    Kind.ARG: _arg,
    Kind.LINE_ARG: _line_arg,
    Kind.B64_RUN: _b64_run,
    Kind.CSV_HEADER: _csv_header,
}


# --- the scanning engine ----------------------------------------------------------------------

Found = tuple[Spans, int]  # the match's spans and the index of the rule's own (outermost) group
Search = Callable[[int], "Found | None"]
Searcher = Callable[[bytes], Search]


def _re2_candidates(source: bytes) -> Callable[[bytes, int], int]:
    """Start of the leftmost match of the loose scan pattern at or after ``pos`` (-1: none)."""
    options = re2.Options()
    options.max_mem = 64 << 20
    options.never_capture = True
    compiled = re2.compile(source, options)
    # google-re2's pybind object answers with bare spans, skipping the Match wrapper (2-3x fewer
    # microseconds per candidate); the public API is the fallback should its internals move.
    raw = getattr(compiled, "_regexp", None)
    unanchored = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    if raw is not None and hasattr(raw, "Match") and unanchored is not None:

        def first_raw(data: bytes, pos: int) -> int:
            start: int = raw.Match(unanchored, data, pos, len(data))[0][0]
            return start

        return first_raw

    def first(data: bytes, pos: int) -> int:
        match = compiled.search(data, pos)
        return -1 if match is None else int(match.start())

    return first


def _searcher(precise: re.Pattern[bytes], lanes: Sequence[bytes]) -> Searcher:
    """Leftmost-first search of the exact alternation.  With RE2, a DFA per lane (a group of
    rules whose loose patterns run well together) finds candidate positions and Python's ``re``
    only confirms the exact rule at the nearest one.  One DFA for every rule multiplies states:
    a counted run such as ``[A-Za-z0-9+/]{40}`` beside the others made it ten times slower than
    the lanes together."""
    if not lanes or re2 is None:

        def start_re(data: bytes) -> Search:
            def search_re(pos: int) -> Found | None:
                match = precise.search(data, pos)
                return None if match is None else (match.regs, match.lastindex or 0)

            return search_re

        return start_re
    finders = [_re2_candidates(lane) for lane in lanes]

    def start(data: bytes) -> Search:
        size = len(data)
        # per lane: where it was last searched from and what it found there (-1: nothing); the
        # answer holds for any later position up to the candidate found
        since = [size + 1] * len(finders)
        found = [-1] * len(finders)
        lanes = range(len(finders))

        def nearest(pos: int) -> int:
            best = -1
            for lane in lanes:
                candidate = found[lane]
                if since[lane] > pos or (0 <= candidate < pos):
                    candidate = found[lane] = finders[lane](data, pos)
                    since[lane] = pos
                if candidate >= 0 and (best < 0 or candidate < best):
                    best = candidate
            return best

        def search(pos: int) -> Found | None:
            while pos < size:
                candidate = nearest(pos)
                if candidate < 0:
                    return None
                match = precise.match(data, candidate)
                if match is not None:
                    return match.regs, match.lastindex or 0
                pos = candidate + 1
            return None

        return search

    return start


def _settle(data: bytes, match_start: int, outcome: Outcome) -> Outcome:
    """Make edits context-proof, so redacting twice changes nothing more:
    a PEM marker swallowed by another rule's value is given back to the PEM rule, and a
    redaction never stops inside a word (``[REDACTED]`` must not create a ``\\b``)."""
    if not outcome.edits:
        return outcome
    reach = max(outcome.resume, outcome.edits[-1][1])
    if data.find(b"-----BEGIN", match_start + 1, reach) >= 0:
        marker = _PEM_START.search(data, match_start + 1, min(len(data), reach + _PEM_MARKER_MAX))
        if marker is not None and marker.start() < reach:
            outcome = _cut_before(data, outcome, marker.start())
    if not any(text is _MARK and data[end - 1:end].isalnum() for _, end, text in outcome.edits):
        return outcome
    edits = tuple(
        (start, _word_end(data, end) if text is _MARK else end, text) for start, end, text in outcome.edits
    )
    return Outcome(edits, max(outcome.resume, edits[-1][1]), outcome.open_block)


def _cut_before(data: bytes, outcome: Outcome, cut: int) -> Outcome:
    kept = ((start, _content_end(data, start, min(end, cut)), text) for start, end, text in outcome.edits)
    return Outcome(tuple(edit for edit in kept if edit[0] < edit[1]), cut)


def _word_end(data: bytes, end: int) -> int:
    if not data[end - 1:end].isalnum():
        return end
    return _ALNUM_RUN.match(data, end).end()  # type: ignore[union-attr]


def _apply_edits(data: bytes, edits: Sequence[Edit]) -> bytes | None:
    if not edits:
        return None
    pieces, last = [], 0
    for start, end, replacement in edits:
        pieces += [data[last:start], replacement]
        last = end
    pieces.append(data[last:])
    return b"".join(pieces)


_ANSI = re.compile(rb"\x1b\[[0-9;:?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b\r\n]*(?:\x07|\x1b\\\\)|\x1b[@-Z\\-_]")


def _strip_ansi(data: bytes) -> tuple[bytes, list[tuple[int, int]]]:
    """The text without escape sequences, and for each removed sequence (position in the
    stripped text, total bytes removed up to and including it)."""
    removed: list[tuple[int, int]] = []
    pieces, last, total = [], 0, 0
    for match in _ANSI.finditer(data):
        pieces.append(data[last:match.start()])
        total += match.end() - match.start()
        removed.append((match.start() - (total - (match.end() - match.start())), total))
        last = match.end()
    pieces.append(data[last:])
    return b"".join(pieces), removed


def _through_ansi(edits: list[Edit], removed: list[tuple[int, int]]) -> list[Edit]:
    """Edits on the stripped text moved onto the original: sequences right before an edit or
    right after it stay; those inside go with the redacted span."""
    positions = [position for position, _ in removed]

    def shift(position: int, inclusive: bool) -> int:
        index = (bisect.bisect_right if inclusive else bisect.bisect_left)(positions, position)
        return position + (removed[index - 1][1] if index else 0)

    return [(shift(start, True), shift(end, False), text) for start, end, text in edits]


class Engine:
    """Scans UTF-8 bytes with one alternation and applies the matched rules' edits."""

    def __init__(self, rules: tuple[Rule, ...] = sp.RULES, use_re2: bool = True) -> None:
        precise = re.compile(sp.combined_pattern(rules).encode())
        lanes = [lane.encode() for lane in sp.scan_lanes(rules)] if use_re2 else []
        self._searcher = _searcher(precise, lanes)
        # Each rule is wrapped in its own group, which closes after any group inside it: the
        # match's ``lastindex`` is the group of the rule that matched.
        self._dispatch: dict[int, tuple[Handler, Rule]] = {}
        group = 1
        for rule in rules:
            self._dispatch[group] = (_HANDLERS[rule.kind], rule)
            group += 1 + re.compile(rule.pattern).groups

    def scan(self, data: bytes) -> tuple[bytes | None, bytes | None]:
        """(redacted bytes or None when nothing changed, header re-opening an unfinished block).
        Terminal colour codes are looked through: a key split by them is still found, and the
        codes inside a redacted span go with it."""
        if b"\x1b" in data:
            plain, removed = _strip_ansi(data)
            if removed:
                edits, open_block = self._edits(plain)
                return _apply_edits(data, _through_ansi(edits, removed)), open_block
        edits, open_block = self._edits(data)
        return _apply_edits(data, edits), open_block

    def _edits(self, data: bytes) -> tuple[list[Edit], bytes | None]:
        edits: list[Edit] = []
        last = pos = 0
        open_block: bytes | None = None
        size = len(data)
        search = self._searcher(data)
        while pos < size:
            found = search(pos)
            if found is None:
                break
            spans, group = found
            handler, rule = self._dispatch[group]
            outcome = _settle(data, spans[0][0], handler(data, spans, group, rule, last))
            for edit in outcome.edits:
                if edit[0] >= last:
                    edits.append(edit)
                    last = edit[1]
            open_block = outcome.open_block
            pos = max(outcome.resume, last, spans[0][0] + 1)
        return edits, open_block

    def redact(self, text: str, header: bytes = b"") -> tuple[str, bytes | None]:
        data = header + text.encode("utf-8", "surrogatepass")
        out, open_block = self.scan(data)
        if out is None:
            return text, open_block
        if not out.startswith(header):  # pragma: no cover - headers are built to stay unchanged
            return REDACTED, None
        return out[len(header):].decode("utf-8", "surrogatepass"), open_block


@functools.lru_cache(maxsize=2)
def _engine(use_re2: bool = True) -> Engine:
    return Engine(sp.RULES, use_re2)


# --- public API -------------------------------------------------------------------------------


def _compile_extra(patterns: Sequence[str]) -> list[re.Pattern[str]]:
    compiled = []
    for pattern in [patterns] if isinstance(patterns, str) else patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"invalid extra redaction pattern {pattern!r}: {exc}") from exc
    return compiled


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)


class Redactor:
    """Replaces secrets with ``[REDACTED]``; ``Redactor(enabled=False)`` is the identity."""

    def __init__(self, enabled: bool = True, extra_patterns: Sequence[str] = ()) -> None:
        self.enabled = enabled
        self._extra = _compile_extra(extra_patterns)
        self._engine = _engine(True)

    def redact(self, text: str) -> str:
        if not self.enabled:
            return text
        try:
            redacted, _ = self._engine.redact(_as_text(text))
            return self._redact_extra(redacted)
        except Exception:  # noqa: BLE001 - fail closed, never raise
            return REDACTED

    def redact_lines(self, lines: Iterable[str]) -> Iterator[str]:
        """Redact a stream line by line (one output per input, lazily), carrying multi-line
        blocks (PEM keys, indented secret values) across lines."""
        header = b""
        for line in lines:
            if not self.enabled:
                yield line
                continue
            try:
                redacted, opened = self._engine.redact(_as_text(line), header)
                header = opened or b""
                yield self._redact_extra(redacted)
            except Exception:  # noqa: BLE001 - fail closed, never raise
                header = b""
                yield REDACTED

    def redact_blocks(self, blocks: Iterable[bytes]) -> Iterator[bytes]:
        """Redact a byte stream cut into blocks of whole lines (each block but the last ends with
        ``\n``), carrying multi-line blocks across them; the output of each block is what
        ``redact_lines`` gives for its lines.  Bytes that are not UTF-8 pass through unchanged.
        One scan per block instead of one per line: the fast path for ``kilo-loop redact``."""
        header = b""
        for block in blocks:
            if not self.enabled or not block:
                yield block
                continue
            try:
                out, opened = self._engine.scan(header + block)
                if out is not None and not out.startswith(header):  # pragma: no cover - see redact()
                    raise ValueError("a re-opening header was changed")
                redacted = block if out is None else out[len(header):]
                header = opened or b""
                yield self._redact_extra_bytes(redacted)
            except Exception:  # noqa: BLE001 - fail closed, never raise
                header = b""
                yield (_MARK + b"\n") * block.count(b"\n") + (b"" if block.endswith(b"\n") else _MARK)

    def redact_value(self, value: Any) -> Any:
        """Redact strings inside dicts/lists/tuples; keys stay as they are, and a string under a
        secret-named key (``password``, ``apiKey``, ``authorization`` …) is redacted wholesale."""
        if not self.enabled:
            return value
        try:
            return self._value(value, 0)
        except Exception:  # noqa: BLE001 - fail closed, never raise
            return REDACTED

    def _value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if depth >= _MAX_DEPTH and isinstance(value, (dict, list, tuple)):
            return REDACTED
        if isinstance(value, dict):
            return {key: self._entry(key, item, depth + 1) for key, item in value.items()}
        if isinstance(value, list):
            return [self._value(item, depth + 1) for item in value]
        if isinstance(value, tuple):
            return tuple(self._value(item, depth + 1) for item in value)
        return value

    def _entry(self, key: Any, value: Any, depth: int) -> Any:
        if not (isinstance(key, str) and sp.is_secret_key(key)):
            return self._value(value, depth)
        return self._secret(key, value, depth)

    def _secret(self, key: str, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return _wholesale(key, value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return REDACTED if sp.numeric_is_secret(key) else value
        if isinstance(value, (list, tuple)) and depth < _MAX_DEPTH:
            items = [self._secret(key, item, depth + 1) for item in value]
            return items if isinstance(value, list) else tuple(items)
        return self._value(value, depth)

    def _redact_extra_bytes(self, block: bytes) -> bytes:
        if not self._extra:
            return block
        out = []
        for line in block.split(b"\n"):
            text = self._redact_extra(line.decode("utf-8", "surrogateescape"))
            out.append(text.encode("utf-8", "surrogateescape"))
        return b"\n".join(out)

    def _redact_extra(self, text: str) -> str:
        for pattern in self._extra:
            text = pattern.sub(_extra_replacement, text)
        return text


def _extra_replacement(match: re.Match[str]) -> str:
    return REDACTED if match.group(0) else ""


def _wholesale(key: str, value: str) -> str:
    raw = value.encode("utf-8", "surrogatepass")
    edits = _value_edit(raw, 0, len(raw), key)
    if not edits:
        return value
    start = edits[0][0]
    return raw[:start].decode("utf-8", "surrogatepass") + REDACTED


@functools.lru_cache(maxsize=1)
def default_redactor() -> Redactor:
    return Redactor()


def redact_stream(lines: Iterable[str], redactor: Redactor | None = None) -> Iterator[str]:
    """``redactor.redact_lines(lines)`` with the default redactor."""
    return (redactor or default_redactor()).redact_lines(lines)
