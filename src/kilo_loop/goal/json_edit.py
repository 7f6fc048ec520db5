"""Minimal text edits of a JSON goal: set one stage's `"done"` and leave every other byte alone.

Re-serialising a document would reflow the author's formatting (indentation, one-line stages,
key spacing, escapes). Instead the document is walked with the standard library's own
decoder to find where each value starts and ends, and only the `done` value is replaced — or,
when the stage has none, `"done": true` is inserted after its last member in the style of
that object (on its own line at the members' indentation, or inline for a one-line object).
The input must be valid JSON; the caller validates it first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"


@dataclass(frozen=True)
class Member:
    key: str
    key_start: int  # the opening quote of the key
    key_end: int  # one past the closing quote
    value_start: int
    value_end: int  # one past the value


@dataclass(frozen=True)
class ObjectSpan:
    start: int  # the `{`
    end: int  # one past the `}`
    members: list[Member]


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _value_end(text: str, start: int) -> int:
    return int(_DECODER.raw_decode(text, start)[1])


def object_at(text: str, start: int) -> ObjectSpan:
    """The object whose `{` is at `start`, with where each of its members is."""
    if text[start] != "{":
        raise ValueError(f"expected an object at offset {start}")
    members: list[Member] = []
    index = _skip(text, start + 1)
    if text[index] == "}":
        return ObjectSpan(start, index + 1, members)
    while True:
        key_start = index
        key, key_end = _DECODER.raw_decode(text, key_start)
        value_start = _skip(text, _skip(text, key_end) + 1)  # past the colon
        value_end = _value_end(text, value_start)
        members.append(Member(str(key), key_start, key_end, value_start, value_end))
        index = _skip(text, value_end)
        if text[index] == "}":
            return ObjectSpan(start, index + 1, members)
        index = _skip(text, index + 1)  # past the comma


def array_items(text: str, start: int) -> list[int]:
    """Where each item of the array whose `[` is at `start` begins."""
    items: list[int] = []
    index = _skip(text, start + 1)
    if text[index] == "]":
        return items
    while True:
        items.append(index)
        index = _skip(text, _value_end(text, index))
        if text[index] == "]":
            return items
        index = _skip(text, index + 1)


def stage_objects(text: str) -> list[ObjectSpan]:
    """The stage objects of a goal document, in file order."""
    top = object_at(text, _skip(text, 0))
    stages = next(member for member in top.members if member.key == "stages")
    return [object_at(text, item) for item in array_items(text, stages.value_start)]


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _insert_done(text: str, span: ObjectSpan) -> str:
    last = span.members[-1]
    newline = "\r\n" if "\r\n" in text else "\n"
    multiline = "\n" in text[span.start : last.key_start]
    if multiline:
        line = text[_line_start(text, last.key_start) : last.key_start]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        addition = f",{newline}{indent}\"done\": true"
    else:
        colon = text[last.key_end : last.value_start]
        if len(span.members) > 1:
            comma = text[span.members[-2].value_end : last.key_start]
        else:
            comma = ", " if colon.endswith(" ") else ","
        addition = f'{comma}"done"{colon}true'
    return text[: last.value_end] + addition + text[last.value_end :]


def with_stage_done(text: str, index: int, done: bool) -> str:
    """`text` with stage `index` (0-based, file order) marked done or not; unchanged if it already is."""
    span = stage_objects(text)[index]
    current = [member for member in span.members if member.key == "done"]
    if current:
        member = current[-1]
        value = "true" if done else "false"
        if text[member.value_start : member.value_end] == value:
            return text
        return text[: member.value_start] + value + text[member.value_end :]
    if not done:
        return text  # no "done" reads as not done
    return _insert_done(text, span)
