"""The rule handler for a secret whose name and value are two entries: a Kubernetes or ECS
container's ``env`` (``- name: DB_PASSWORD`` / ``value: …``), CloudFormation's
``ParameterKey=DbPassword,ParameterValue=…`` and a Terraform ``variable "db_password"`` block's
``default``.  The value may sit on the same line or on a later line of the same entry.
"""

from __future__ import annotations

import re

from kilo_loop.redact import _patterns as sp
from kilo_loop.redact._handler import (
    HSPACE,
    SKIP,
    Edit,
    Handler,
    Outcome,
    Span,
    content_end,
    end_of_line,
    indent_of,
    rescan,
    start_of_line,
)
from kilo_loop.redact._patterns import Kind, Rule
from kilo_loop.redact._values import inline_value, line_start_value

# The entry's value key: ``value:``, ``"value": ``, ``default =``, ``ParameterValue=``.
_VALUE_KEY = re.compile(rb"[\"']?(?:value|Value|VALUE|default|Default|ParameterValue|OptionValue)[\"']?[ \t]*[:=]")
_LIST_ITEM = re.compile(rb"-[ \t]+")


def _name_value(data: bytes, span: Span, g: int, rule: Rule, floor: int) -> Outcome:
    """A secret-named entry name: its value (on this line, or on a later line of the entry) is redacted
    as a secret of that name would be; the lines in between are scanned as usual."""
    match_start, name_end = span(g)
    name_start = span(g + 1)[0]
    name = data[name_start:name_end].decode("utf-8", "replace")
    if not sp.is_secret_key(name.rsplit("/", 1)[-1]):
        return Outcome(SKIP, name_end)
    eol = end_of_line(data, name_end)
    same_line = _VALUE_KEY.search(data, name_end, eol)
    if same_line:
        pos = HSPACE.match(data, same_line.end(), eol).end()  # type: ignore[union-attr]
        found = inline_value(data, pos, eol, name, same_line.end() - 1, same_line.end())
        return Outcome(_between(data, name_end, same_line.start()) + found.edits, max(found.resume, same_line.end()))
    line_start = start_of_line(data, match_start)
    if line_start < 0:
        return Outcome(SKIP, name_end)
    block = data.startswith(b"variable", match_start)  # HCL: the entry runs to its closing brace
    column = match_start - line_start - (data[match_start - 1:match_start] in (b'"', b"'"))  # at its quote
    return _later_line(data, eol + 1, name, column, block, name_end)


def _later_line(data: bytes, line: int, name: str, column: int, block: bool, name_end: int) -> Outcome:
    """The value on a later line of the entry: at the name's column (a YAML/JSON sibling key) or,
    in a block, anywhere before its closing brace.  At the end of the data the entry stays open."""
    while line < len(data):
        end = end_of_line(data, line)
        content = content_end(data, line, end)
        depth = indent_of(data, line, end)
        start = line + depth
        if block and data.startswith(b"}", start):
            return Outcome(SKIP, name_end)
        if not block and (content == start or depth < column or _LIST_ITEM.match(data, start, content)):
            return Outcome(SKIP, name_end)  # the entry ended: a blank line, a new item, a shallower key
        key = _VALUE_KEY.match(data, start, content)
        if key and (block or depth == column):
            pos = HSPACE.match(data, key.end(), end).end()  # type: ignore[union-attr]
            found = line_start_value(data, pos, end, name, depth, pos > key.end(), data[key.end() - 1] == 0x3A)
            return Outcome(_between(data, name_end, line) + found.edits, found.resume, found.open_block)
        line = end + 1
    header = b" " * column + (b'variable "password" {\n' if block else b"name: password\n")
    return Outcome(_between(data, name_end, len(data)), len(data), header)


def _between(data: bytes, start: int, end: int) -> tuple[Edit, ...]:
    """The text between the name and its value, scanned on its own (the main scan resumes after the value)."""
    if end <= start:
        return SKIP
    redacted = rescan(data[start:end])
    return SKIP if redacted is None else ((start, end, redacted),)


HANDLERS: dict[Kind, Handler] = {Kind.NAME_VALUE: _name_value}
