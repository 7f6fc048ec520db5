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

Speed: four RE2 DFAs (most rules; the round-3 code and command rules; the generic random-looking
value; the long base64 run) run
loosened alternations over the UTF-8 bytes to find candidate positions; Python's ``re`` confirms
the exact rule at the nearest candidate and the judgements of ``secret_patterns`` decide, reading only the spans of that
rule's groups.  Without ``re2`` the exact alternation runs on Python's ``re`` alone.
``redact_block`` redacts a block of lines given what the block before left open, so blocks can be
redacted in other processes (``redact_pool``) and joined.  The rule handlers live in ``redact_values`` (single values, assignments) and
``redact_blocks`` (PEM blocks, command arguments, base64 runs, CSV tables) and ``redact_pairs``
(a name and its value as two entries); this module is the engine and the public API.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from kilo_loop.safety import secret_patterns as sp
from kilo_loop.safety.redact_anchored import ANCHORED_LANE, anchor_finder
from kilo_loop.safety.redact_blocks import _arg, _b64_run, _csv_header, _line_arg, _pem, has_upper
from kilo_loop.safety.redact_known import KnownMasker
from kilo_loop.safety.redact_pairs import _name_value
from kilo_loop.safety.redact_values import (
    _ALNUM_RUN,
    _MARK,
    _PEM_MARKER_MAX,
    _PEM_START,
    Edit,
    Outcome,
    Span,
    _basic,
    _bearer,
    _content_end,
    _curl_user,
    _dsn_at,
    _flag,
    _generic,
    _keep_prefix,
    _keyword,
    _userinfo,
    _value_edit,
)
from kilo_loop.safety.redact_wrap import HEADER_HEAD, wrap_header, wrapped_tails
from kilo_loop.safety.secret_patterns import REDACTED, Kind, Rule

try:  # pragma: no cover - exercised by whichever environment runs the tests
    import re2
except ImportError:  # pragma: no cover
    re2 = None

__all__ = ["REDACTED", "Engine", "Redactor", "default_redactor", "redact_stream"]

_MAX_DEPTH = 64
_SHORT_TEXT = 64
_SHORT_ENTRIES = 4096

# floor: where the previous edit ended; what lies before it is about to change, so look no further back.
Handler = Callable[[bytes, Span, int, Rule, int], Outcome]
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
    Kind.NAME_VALUE: _name_value,
    Kind.DSN_AT: _dsn_at,
}


# --- the scanning engine ----------------------------------------------------------------------

Finder = Callable[[bytes, int], int]  # start of the next candidate at or after a position (-1: none)


def _re2_candidates(source: bytes) -> Finder:
    """Start of the leftmost match of a loose scan pattern at or after ``pos`` (-1: none)."""
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


_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/]*")


def _mixed_case_runs(find: Finder) -> Finder:
    """Candidates of the base64-run lane, minus runs without an upper-case letter (hex SHAs),
    which the rule would turn away anyway: skipped here, they cost no exact match or handler."""
    run = _BASE64_RUN.match

    def first(data: bytes, pos: int) -> int:
        while (start := find(data, pos)) >= 0:
            end = run(data, start).end()  # type: ignore[union-attr]
            if has_upper(data[start:end]):
                return start
            pos = end
        return -1

    return first


def _finders(lanes: Sequence[tuple[str, bytes]], anchors: Sequence[str] = ()) -> list[Finder]:
    """With RE2, a DFA per lane (a group of rules whose loose patterns run well together) finds
    candidate positions and Python's ``re`` only confirms the exact rule at the nearest one.  One
    DFA for every rule multiplies states: the counted base64 run beside the others made it ten
    times slower than the two lanes together.  The anchored lane's literals are found by
    Hyperscan (``redact_anchored``).  [] without RE2."""
    if re2 is None:
        return []
    finders = []
    for name, source in lanes:
        find = _LANE_FILTERS.get(name, _identity)(_re2_candidates(source))
        finders.append(anchor_finder(anchors, find) if name == ANCHORED_LANE else find)
    return finders


_LANE_FILTERS = {"b64": _mixed_case_runs}


def _identity(find: Finder) -> Finder:
    return find


def _dispatch_table(rules: tuple[Rule, ...]) -> dict[int, tuple[Handler, Rule]]:
    """Group number of each rule in ``combined_pattern(rules)`` -> its handler and the rule."""
    table: dict[int, tuple[Handler, Rule]] = {}
    group = 1
    for rule in rules:
        table[group] = (_HANDLERS[rule.kind], rule)
        group += 1 + capturing_groups(rule.pattern)
    return table


# An escape, a character class, or a group opening: "(" not followed by "?" captures.
_GROUP_SYNTAX = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|\((?!\?)")


def capturing_groups(pattern: str) -> int:
    """``re.compile(pattern).groups`` without compiling (compiling every rule once more doubled the
    engine's start-up; the patterns use no named groups)."""
    return sum(1 for syntax in _GROUP_SYNTAX.finditer(pattern) if syntax.group() == "(")


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
    for _, end, text in outcome.edits:
        if text is _MARK and data[end:end + 1].isalnum() and data[end - 1:end].isalnum():
            break
    else:
        return outcome  # no redaction stops inside a word
    edits = tuple(
        (start, _word_end(data, end) if text is _MARK else end, text) for start, end, text in outcome.edits
    )
    return Outcome(edits, max(outcome.resume, edits[-1][1]), outcome.open_block)


def _with_wrapped_tails(data: bytes, edits: list[Edit], open_block: bytes | None) -> tuple[list[Edit], bytes | None]:
    """The edits with the tails of values wrapped at a fixed width; a chain left open at the end
    re-opens with a header of its width (unless a block the rules left open does)."""
    if not edits and not data.startswith(HEADER_HEAD):
        return edits, open_block
    edits, open_width = wrapped_tails(data, edits)
    return edits, wrap_header(open_width, open_block) if open_width else open_block


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


_ANSI = re.compile(
    rb"\x1b\[[0-9;:?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b\r\n]*(?:\x07|\x1b\\\\)|\x1b[@-Z\\-_]"
    # written out as an escape: in a JSON string (``\u001b[32m``), in ``echo -e``/``printf`` text
    rb"|(?:\\u001[bB]|\\x1[bB]|\\033|\\e)\[[0-9;]*[A-Za-z]"
)
_TEXT_ESCAPES = (b"u001b[", b"u001B[", b"x1b[", b"x1B[", b"033[", b"e[")
_BACKSLASH_VISITS = 4096


def _may_hold_ansi(data: bytes) -> bool:
    """Whether ``data`` may hold a colour code, cheaply: ESC is one memchr; a written-out escape is
    looked for at each backslash (a few hundred in a MB of agent output), and past a few thousand
    of them by a search for each form (a multi-byte search costs a millisecond a MB)."""
    if b"\x1b" in data:
        return True
    pos = data.find(b"\\")
    for _ in range(_BACKSLASH_VISITS):
        if pos < 0:
            return False
        if data.startswith(_TEXT_ESCAPES, pos + 1):
            return True
        pos = data.find(b"\\", pos + 1)
    return any(b"\\" + escape in data for escape in _TEXT_ESCAPES)


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
        lanes = [(name, lane.encode()) for name, lane in sp.scan_lanes(rules)] if use_re2 else []
        anchors = [rule.scan for rule in rules if rule.lane == ANCHORED_LANE]
        self._finders = _finders(lanes, anchors)
        # Each rule is wrapped in its own group, which closes after any group inside it: the
        # match's ``lastindex`` is the group of the rule that matched.
        # keyed by ``id()``: a compiled pattern's hash is computed over its whole program each time
        self._dispatch: dict[int, dict[int, tuple[Handler, Rule]]] = {}
        self._order = {id(rule): index for index, rule in enumerate(rules)}
        # Without RE2 one alternation of every rule finds and matches.  With it, a candidate that
        # only one lane found can only be matched by that lane's rules (each lane's scan finds
        # every start its rules' exact patterns have), so the exact match there tries those alone;
        # where lanes meet, the rule first in the table wins, as in one alternation (compiling
        # that alternation as well cost a third of the engine's start-up).
        self._precise = None if self._finders else self._compiled(rules)
        self._lane_precise = [
            self._compiled(tuple(rule for rule in rules if (rule.lane or "text") == name))
            for name, _ in (lanes if self._finders else [])
        ]

    def _compiled(self, rules: tuple[Rule, ...]) -> re.Pattern[bytes]:
        pattern = re.compile(sp.combined_pattern(rules).encode())
        self._dispatch[id(pattern)] = _dispatch_table(rules)
        return pattern

    def _first_rule(self, matches: Iterable[re.Match[bytes] | None]) -> re.Match[bytes] | None:
        """Of the lanes' matches at one position, the one whose rule comes first in the table."""
        best: re.Match[bytes] | None = None
        best_order = len(self._order)
        for match in matches:
            if match is not None:
                order = self._order[id(self._dispatch[id(match.re)][match.lastindex or 0][1])]
                if order < best_order:
                    best, best_order = match, order
        return best

    def scan(self, data: bytes) -> tuple[bytes | None, bytes | None]:
        """(redacted bytes or None when nothing changed, header re-opening an unfinished block).
        Terminal colour codes are looked through: a key split by them is still found, and the
        codes inside a redacted span go with it."""
        if _may_hold_ansi(data):
            plain, removed = _strip_ansi(data)
            if removed:
                edits, open_block = self._edits(plain)
                return _apply_edits(data, _through_ansi(edits, removed)), open_block
        edits, open_block = self._edits(data)
        return _apply_edits(data, edits), open_block

    def explain(self, data: bytes) -> tuple[bytes | None, bytes | None, list[tuple[int, str]]]:
        """``scan`` plus, per edit, where it starts (in ``data`` without colour codes) and the
        name of the rule that made it (``wrapped_tail``: the tail of a value wrapped at a width)."""
        plain = _strip_ansi(data)[0] if _may_hold_ansi(data) else data
        names: dict[int, str] = {}
        edits, _ = self._edits(plain, names)
        out, open_block = self.scan(data)
        return out, open_block, [(start, names.get(start, "wrapped_tail")) for start, _, _ in edits]

    def _edits(self, data: bytes, names: dict[int, str] | None = None) -> tuple[list[Edit], bytes | None]:
        edits: list[Edit] = []
        last = pos = 0
        open_block: bytes | None = None
        size = len(data)
        next_match = self._matcher(data)
        if next_match is None:
            return _with_wrapped_tails(data, edits, None)
        dispatch = self._dispatch
        while pos < size:
            match = next_match(pos)
            if match is None:
                break
            start, group = match.start(), match.lastindex or 0
            handler, rule = dispatch[id(match.re)][group]
            # ``match.span``, never ``match.regs``: the alternation has over a hundred groups and
            # building all their spans costs more than the rule's whole judgement
            outcome = _settle(data, start, handler(data, match.span, group, rule, last))
            for edit in outcome.edits:
                if edit[0] >= last:
                    edits.append(edit)
                    last = edit[1]
                    if names is not None:
                        names[edit[0]] = rule.name
            open_block = outcome.open_block
            pos = max(outcome.resume, last, start + 1)
        return _with_wrapped_tails(data, edits, open_block)

    def _matcher(self, data: bytes) -> Callable[[int], re.Match[bytes] | None] | None:
        """The leftmost exact match at or after a position (leftmost-first among the rules);
        None when no lane has a candidate anywhere in ``data``."""
        finders = self._finders
        if self._precise is not None:
            return functools.partial(self._precise.search, data)
        # per lane: what it found searching from ``since`` (-1: nothing); the answer holds for
        # any later position up to the candidate found
        found = [find(data, 0) for find in finders]
        if max(found) < 0:
            return None  # most lines of agent output: no candidate at all
        size = len(data)
        lanes = [lane for lane, first in enumerate(found) if first >= 0]  # a lane with none now has none later
        since = [0] * len(finders)
        lane_precise = self._lane_precise

        def next_match(pos: int) -> re.Match[bytes] | None:
            while pos < size:
                best = owner = -1  # owner: the one lane with a candidate at ``best`` (-1: several)
                for lane in lanes:
                    candidate = found[lane]
                    if since[lane] > pos or (0 <= candidate < pos):
                        candidate = found[lane] = finders[lane](data, pos)
                        since[lane] = pos
                    if candidate >= 0 and (best < 0 or candidate < best):
                        best, owner = candidate, lane
                    elif candidate == best >= 0:
                        owner = -1
                if best < 0:
                    return None
                if owner >= 0:
                    match = lane_precise[owner].match(data, best)
                else:
                    match = self._first_rule(
                        lane_precise[lane].match(data, best) for lane in lanes if found[lane] == best
                    )
                if match is not None:
                    return match
                pos = best + 1
            return None

        return next_match

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

    def __init__(
        self, enabled: bool = True, extra_patterns: Sequence[str] = (), known: Iterable[tuple[str, str]] = ()
    ) -> None:
        self.enabled = enabled
        self._extra = _compile_extra(extra_patterns)
        self._engine = _engine(True)
        self._short: dict[str, str] = {}  # results for short strings (kept in memory only)
        self._known = KnownMasker(known)

    def add_known(self, values: Iterable[tuple[str, str]]) -> None:
        """Mask these (value, source) pairs from now on, in every encoding (``redact_known``)."""
        if self._known.add(values):
            self._short.clear()  # results cached before may hold the new values

    @property
    def mask_counts(self) -> dict[str, int]:
        """How many occurrences of known values were masked, by source (never the values)."""
        return dict(self._known.counts)

    @property
    def known_forms(self) -> int:
        return self._known.size

    def _mask_text(self, text: str) -> str:
        if not self._known:
            return text
        out, _ = self._known.mask(text.encode("utf-8", "surrogatepass"))
        return text if out is None else out.decode("utf-8", "surrogatepass")

    def _mask_bytes(self, block: bytes) -> bytes:
        if not self._known:
            return block
        out, _ = self._known.mask(block)
        return block if out is None else out

    def redact(self, text: str) -> str:
        if not self.enabled:
            return text
        if type(text) is not str or len(text) > _SHORT_TEXT:
            return self._redact(text)
        # The leaves of event dicts (types, statuses, tool names, paths, ids) repeat all the time
        # and each costs two DFA calls; their results are kept, a bounded number of them.
        redacted = self._short.get(text)
        if redacted is None:
            redacted = self._redact(text)
            if len(self._short) >= _SHORT_ENTRIES:
                self._short.clear()
            self._short[text] = redacted
        return redacted

    def _redact(self, text: str) -> str:
        try:
            text = _as_text(text)
            if self._known:  # encoded once for both the masks and the rules
                data = text.encode("utf-8", "surrogatepass")
                masked = self._known.mask(data)[0]
                out = self._engine.scan(masked or data)[0] or masked
                redacted = text if out is None else out.decode("utf-8", "surrogatepass")
            else:
                redacted, _ = self._engine.redact(text)
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
                redacted, opened = self._engine.redact(self._mask_text(_as_text(line)), header)
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
            redacted, header = self.redact_block(block, header)
            yield redacted

    def redact_block(self, block: bytes, header: bytes = b"") -> tuple[bytes, bytes]:
        """One block of whole lines, after a block that left ``header`` open (b"": none): its
        redaction, and the header that re-opens what it leaves unfinished (b"": nothing).  The
        result depends on nothing else, so blocks can be redacted apart and joined in order."""
        if not self.enabled or not block:
            return block, header if self.enabled else b""
        try:
            masked = self._mask_bytes(block)
            out, opened = self._engine.scan(header + masked)
            if out is not None and not out.startswith(header):  # pragma: no cover - see redact()
                raise ValueError("a re-opening header was changed")  # noqa: TRY301 - caught below: fail closed
            redacted = masked if out is None else out[len(header):]
            return self._redact_extra_bytes(redacted), opened or b""
        except Exception:  # noqa: BLE001 - fail closed, never raise
            return _failed_block(block), b""

    def explain_block(self, block: bytes, header: bytes = b"") -> tuple[bytes, bytes, list[tuple[int, str]]]:
        """``redact_block`` and, per redaction, its line in the block (0-based) and what fired:
        a rule's name, ``mask (<source>)`` for a known value, ``extra pattern``."""
        if not self.enabled or not block:
            return block, header if self.enabled else b"", []
        try:
            hits = self._known.hits(block) if self._known else []
            fired = [(block.count(b"\n", 0, hit.start), f"mask ({hit.source})") for hit in hits]
            masked = self._mask_bytes(block)
            out, opened, named = self._engine.explain(header + masked)
            redacted = masked if out is None else out[len(header):]
            plain = _strip_ansi(header + masked)[0] if _may_hold_ansi(header + masked) else header + masked
            skip = header.count(b"\n")
            fired += [(plain.count(b"\n", 0, start) - skip, name) for start, name in named if start >= len(header)]
            extra = self._redact_extra_bytes(redacted)
            if extra != redacted:
                before, after = redacted.split(b"\n"), extra.split(b"\n")
                fired += [(index, "extra pattern") for index, line in enumerate(after) if line != before[index]]
            return extra, opened or b"", sorted(fired)
        except Exception:  # noqa: BLE001 - fail closed, never raise
            return _failed_block(block), b"", [(0, "internal error: the whole block redacted")]

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


def _failed_block(block: bytes) -> bytes:
    return (_MARK + b"\n") * block.count(b"\n") + (b"" if block.endswith(b"\n") else _MARK)


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
