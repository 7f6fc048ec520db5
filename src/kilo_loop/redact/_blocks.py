"""Rule handlers for secrets with structure around them: PEM private keys (also behind a log
prefix or in string literals), passwords given as command arguments and .netrc/.pgpass lines,
runs of base64 (a lone AWS secret key, an encoded env file) and CSV tables with secret columns.
"""

from __future__ import annotations

import binascii
import re

from kilo_loop.redact import _patterns as sp
from kilo_loop.redact._handler import (
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
from kilo_loop.redact._values import value_edit

PEM_START = re.compile(sp.PEM_BEGIN.encode())
_PEM_END = re.compile(sp.PEM_END.encode())
# A body line: base64 (or its redaction), a ``Proc-Type:`` style header, or base64 in a string
# literal of source code (``"MIIE…\\n" +``).
_PEM_BODY = re.compile(
    rb"[ \t]*(?:[A-Za-z0-9+/=]+|\[REDACTED\]|[A-Za-z-]+:[^\r\n]*"
    rb"|\+?[ \t]*[\"'](?:[A-Za-z0-9+/=]+|\[REDACTED\])(?:\\n)?[\"'][ \t]*[+,]?)?[ \t]*\r?"
)
_PEM_HEADER = b"-----BEGIN PRIVATE KEY-----\n"
PEM_MARKER_MAX = 80


def _pem(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    """Keep the BEGIN/END lines; the rest of the BEGIN line and each body line become [REDACTED].
    The body ends at the END marker or at the first line that cannot belong to a key.  A log
    prefix before the BEGIN marker (``api-1  | ``) is looked for, and kept, on the body lines."""
    marker_start, marker_end = span(g)
    eol = end_of_line(data, marker_end)
    same_line = _PEM_END.search(data, marker_end, eol)
    if same_line:
        return Outcome(_blank_or_mark(data, marker_end, same_line.start()), same_line.end())
    edits = list(_blank_or_mark(data, marker_end, content_end(data, marker_end, eol)))
    return _pem_body(data, eol + 1, edits, _log_prefix(data, marker_start))


# A log line's prefix: ``api-1  | `` (docker compose), ``[pod/api/app] `` (kubectl --prefix), a
# timestamp, or a timestamp and one of those or a CRI stream tag (``stdout F ``, the kubelet's log
# files); a syslog/journald head (``May 01 10:00:00 web1 app[812]: ``); a line-number gutter
# (``cat -n``, an agent's file view ``    12→``); a quote or comment marker (``> ``, ``# ``, ``// ``);
# a diff marker (``-``, ``+``).
_TIMESTAMP = rb"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.,]+(?:Z|[+-][0-9:]+)?[ \t]+"
_LOG_PREFIX = re.compile(
    rb"(?:" + _TIMESTAMP + rb")?(?:[^\r\n|]{1,60}\|[ \t]*|\[[^\]\r\n]{1,60}\][ \t]*)|"
    + _TIMESTAMP + rb"(?:std(?:out|err)[ \t]+[FP][ \t]+)?"
    rb"|[A-Z][a-z]{2}[ \t]+[0-9]{1,2}[ \t]+[0-9:]{8}[ \t]+[^ \t\r\n]{1,60}[ \t]+[^ \t\r\n:]{1,60}:[ \t]+"
    rb"|[ \t]*[0-9]{1,7}(?:\t|\xe2\x86\x92)|(?:>[ \t]?)+|(?:#|//|;)[ \t]?"
    rb"|[-+]"  # a diff's removed or added line (a key file deleted in ``git show``)
)


def _log_prefix(data: bytes, marker_start: int) -> bytes:
    """The log prefix before a BEGIN marker, or b"" (nothing, or not a log prefix)."""
    line_start = start_of_line(data, marker_start)
    if line_start < 0 or line_start == marker_start:
        return b""
    prefix = data[line_start:marker_start]
    return prefix if _LOG_PREFIX.fullmatch(prefix) else b""


def _pem_body(data: bytes, line: int, edits: list[Edit], prefix: bytes) -> Outcome:
    """Body lines from ``line`` on become [REDACTED], up to the END marker or a line that cannot be
    key material; at the end of the data the block stays open for the next line.  When the BEGIN
    line had a log prefix, each body line's own prefix (its timestamp may differ) stays."""
    while line < len(data):
        end = end_of_line(data, line)
        own = _LOG_PREFIX.match(data, line, end) if prefix else None
        body = own.end() if own else line
        closing = _PEM_END.search(data, body, end)
        if closing:
            edits.extend(_blank_or_mark(data, body + indent_of(data, body, end), closing.start()))
            return Outcome(tuple(edits), closing.end())
        if not _PEM_BODY.fullmatch(data, body, end):
            return Outcome(tuple(edits), line)
        edits.extend(_blank_or_mark(data, body + indent_of(data, body, end), content_end(data, body, end)))
        line = end + 1
    return Outcome(tuple(edits), len(data), prefix + _PEM_HEADER)


def _blank_or_mark(data: bytes, start: int, end: int) -> tuple[Edit, ...]:
    if not data[start:end].strip(b" \t\"'+,") or data[start:end] == MARK:
        return SKIP
    return mark_span(start, end)


def _arg(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    """A password given as a command argument (``mysql -pX``, ``sshpass -p X``, ``password X``)."""
    start, end = span(g + 1)
    if rule.check and not sp.CHECKS[rule.check](as_str(data[span(g)[0]:end])):
        return Outcome(SKIP, span(g)[0] + 1)
    if data[start:start + 1] in (b"'", b'"'):
        start, end = start + 1, end - 1
    return Outcome(value_edit(data, start, end, "password"), span(g + 1)[1])


def _line_arg(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    """Like ``_arg``, when the match is all its line holds (a .netrc or .pgpass entry)."""
    match_start, value_end = span(g)
    line_start = start_of_line(data, match_start)
    eol = end_of_line(data, value_end)
    alone = line_start >= 0 and not data[value_end:eol].strip() and _bare_or_prefix(data[line_start:match_start])
    if not alone or (rule.name == "pgpass" and _ipv6_like(data[match_start:value_end])):
        return Outcome(SKIP, match_start + 1)
    return _arg(data, span, g, rule, floor)


def _bare_or_prefix(before: bytes) -> bool:
    """Nothing but blanks before a match, or a log prefix (``db-1  | ``)."""
    return not before.strip() or bool(_LOG_PREFIX.fullmatch(before))


_IPV6_HEAD = re.compile(rb"(?:[0-9A-Fa-f]{1,4}:){4}")


def _ipv6_like(entry: bytes) -> bool:
    return bool(_IPV6_HEAD.match(entry))


_B64_CHARS = re.compile(rb"[A-Za-z0-9+/]*")
_ENV_LINE = re.compile(rb"(?:^|\n)(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_.-]*[ \t]*[=:]")
_KEY_VALUE = re.compile(rb"[A-Za-z_][A-Za-z0-9_.-]*[\"']?[ \t]*[=:]")
_WRAP_WIDTHS = range(60, 80)  # ``base64`` wraps at 76, ``openssl base64`` at 64


def _b64_run(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    """A run of 40+ base64 characters: an AWS secret access key (exactly 40, random-looking,
    alone on its line or on a line about AWS), or base64 that decodes to text holding a secret
    (an encoded env file).  A wrapped blob's following lines go with it."""
    start = span(g)[0]
    end = _B64_CHARS.match(data, start).end()  # type: ignore[union-attr]
    if end - start < 40 or (start > 0 and data[start - 1] in _B64_SET) or not has_upper(data[start:end]):
        return Outcome(SKIP, end)  # too short, the middle of a longer word, or a hex SHA
    if end - start == 40 and _aws_secret(data, start, end):
        return Outcome(mark_span(start, end), end)
    padding = data[end:end + 2]
    padded = end + len(padding) - len(padding.lstrip(b"="))
    decoded = _decoded_text(data[start:padded])
    if decoded is None or not _KEY_VALUE.search(decoded):
        return Outcome(SKIP, end)
    line_start, eol = start_of_line(data, start), end_of_line(data, padded)
    whole_line = line_start >= 0 and not data[line_start:start].strip() and not data[padded:eol].strip()
    if whole_line and padded - start in _WRAP_WIDTHS and _ENV_LINE.search(decoded):
        # one line of a wrapped env file: a value may run on into the next line, so the blob goes whole
        return _pem_body(data, eol + 1, list(mark_span(start, padded)), b"")
    if rescan(decoded) is None:
        return Outcome(SKIP, end)
    return Outcome(mark_span(start, padded), padded)


def has_upper(run: bytes) -> bool:
    """An AWS key or base64 of text has upper-case letters; a hex SHA or a number has none."""
    return run.lower() != run


_B64_SET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _aws_secret(data: bytes, start: int, end: int) -> bool:
    value = as_str(data[start:end])
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if not mixed or not any(c.isdigit() or c in "+/" for c in value) or sp.identifier_like(value):
        return False
    line_start = max(start_of_line(data, start), 0)
    eol = end_of_line(data, end)
    before = data[line_start:start]
    alone = (not before.strip(b" \t\"'") or bool(_LOG_PREFIX.fullmatch(before))) and not data[end:eol].strip(
        b" \t\"',;\r"
    )
    return alone or sp.aws_context(as_str(data[line_start:eol]))


def _decoded_text(run: bytes) -> bytes | None:
    """The run decoded, when it is base64 of printable UTF-8 text."""
    usable = len(run) - len(run) % 4
    try:
        decoded = binascii.a2b_base64(run[:usable])
        text = decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return decoded if text.replace("\n", "").replace("\r", "").replace("\t", "").isprintable() else None


def _csv_header(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    """A CSV header naming secret columns (``user,password,host``): in the rows below it with
    as many cells, those cells are redacted (the rest of each row is scanned as usual).  With "|"
    between cells (``psql`` output, a markdown table) border and rule lines are passed over."""
    match_start = span(g)[0]
    line_start = start_of_line(data, match_start)
    eol = end_of_line(data, match_start)
    content = content_end(data, line_start, eol)
    delimiter = _csv_delimiter(data[line_start:content]) if line_start >= 0 else b""
    header = _table_cells(data, line_start, content, delimiter) if delimiter else []
    columns = sp.csv_secret_columns([as_str(data[a:b]) for a, b in header])
    if not columns or (delimiter == b"|" and not _rule_follows(data, eol)):
        return Outcome(SKIP, match_start + 1)
    names = [as_str(data[a:b]) for a, b in header]
    edits: list[Edit] = []
    line = eol + 1
    while line < len(data):
        end = end_of_line(data, line)
        row_end = content_end(data, line, end)
        if delimiter == b"|" and row_end > line and not data[line:row_end].strip(_TABLE_RULE):
            line = end + 1  # ``----+----``, ``|---|:--|``: a rule between the header and the rows
            continue
        cells = _table_cells(data, line, row_end, delimiter)
        if row_end == line or len(cells) != len(header):
            return Outcome(tuple(edits), line)
        edits.extend(_csv_row(data, line, row_end, [(cells[i], names[i]) for i in columns]))
        line = end + 1
    # re-opened with the header, and for a "|" table whose rule was seen, a rule under it
    ruled = b"-\n" if delimiter == b"|" and eol + 1 < len(data) else b""
    return Outcome(tuple(edits), len(data), data[line_start:content] + b"\n" + ruled)


_TABLE_RULE = b"-+|:= \t"


def _rule_follows(data: bytes, eol: int) -> bool:
    """A "|" table's header has a rule under it (``----+----``, ``|---|``); a row of a table about
    fields (``password | text``, psql's ``\\d``) has another row.  At the end of the data: not yet known,
    taken as a header (the next block re-opens it and decides again)."""
    line = eol + 1
    if line >= len(data):
        return True
    end = content_end(data, line, end_of_line(data, line))
    return end > line and not data[line:end].strip(_TABLE_RULE)


def _csv_delimiter(line: bytes) -> bytes:
    counts = {delimiter: line.count(delimiter) for delimiter in (b",", b";", b"\t", b"|")}
    best = max(counts, key=lambda delimiter: counts[delimiter])
    return best if counts[best] else b""


def _table_cells(data: bytes, start: int, end: int, delimiter: bytes) -> list[tuple[int, int]]:
    """``_csv_cells``; for "|" tables without the border pipes and the blanks padding each cell."""
    if delimiter != b"|":
        return _csv_cells(data, start, end, delimiter)
    start = HSPACE.match(data, start, end).end()  # type: ignore[union-attr]
    start += data.startswith(b"|", start)
    end = content_end(data, start, end)
    end -= end > start and data[end - 1] == 0x7C
    cells = []
    for cell_start, cell_end in _csv_cells(data, start, end, delimiter):
        padded = HSPACE.match(data, cell_start, cell_end).end()  # type: ignore[union-attr]
        cells.append((padded, max(padded, content_end(data, padded, cell_end))))
    return cells


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
            pos = HSPACE.match(data, close + 1, end).end()  # type: ignore[union-attr]
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
        for edit_start, edit_end, text in value_edit(data, cell_start, cell_end, name):
            pieces += [data[last:edit_start], text]
            last = edit_end
    row = b"".join(pieces) + data[last:end]
    rescanned = rescan(row)
    row = rescanned if rescanned is not None else row
    return () if row == data[start:end] else ((start, end, row),)


HANDLERS: dict[Kind, Handler] = {
    Kind.PEM: _pem,
    Kind.ARG: _arg,
    Kind.LINE_ARG: _line_arg,
    Kind.B64_RUN: _b64_run,
    Kind.CSV_HEADER: _csv_header,
}
