"""The lines of a diff that sit inside a multi-line string literal: the source text of a test that a
test writes to a file and runs (pytest's `makepyfile` with a triple-quoted text, a Vitest
`collectTests` with a template literal, a Go raw string). A `.only`, a `pytestmark = …skip` or a `def test_…` in there is data, not one of the
file's tests, so the rules read the diff without them. Pure.

A hunk may start inside such a string: its first delimiter then reads as a closer (nothing but
closing punctuation after it, nothing that opens a value before it), and the lines above it are
taken as string."""

from __future__ import annotations

import re
from dataclasses import replace

from kilo_loop.tamper.diff import DiffLine, FileDiff, Hunk
from kilo_loop.tamper.languages import Language

_DELIMITERS: dict[str, tuple[str, ...]] = {
    "python": ('"""', "'''"),
    "java": ('"""',),  # Java text blocks, Kotlin raw strings
    "javascript": ("`",),
    "go": ("`",),
}
_COMMENT = {"python": ("#",), "java": ("//", "*", "/*"), "javascript": ("//", "*", "/*"), "go": ("//",)}
_CLOSING_TAIL = re.compile(r"^[\s)\]},;.:]*(\.\w+\(\)[\s)\]},;]*)*$")
_OPENING_HEAD = re.compile(r"(?:[=(\[{,:+]|\breturn|\byield|\w+)\s*$")
_OPENING_LINE_END = re.compile(r"[=(\[{,:+]\s*$")  # the line above a delimiter alone on its line


_FINDERS = {lang: re.compile(r"(?<!\\)(" + "|".join(re.escape(d) for d in delimiters) + ")")
            for lang, delimiters in _DELIMITERS.items()}


def _occurrences(text: str, lang: str) -> list[tuple[int, str]]:
    return [(match.start(), match.group()) for match in _FINDERS[lang].finditer(text)]


def _starts_inside(lines: list[str], lang: str) -> str | None:
    """The delimiter of the string a hunk side starts inside of, if its first delimiter reads as a closer."""
    comments = _COMMENT[lang]
    above = ""
    for text in lines:
        if text.lstrip().startswith(comments):
            continue
        hits = _occurrences(text, lang)
        if not hits:
            above = text if text.strip() else above
            continue
        at, delimiter = hits[0]
        if sum(1 for _, d in hits if d == delimiter) % 2 == 0:
            return None  # opened and closed on one line: the hunk starts outside
        before, after = text[:at], text[at + len(delimiter):]
        opens = _OPENING_HEAD.search(before) if before.strip() else _OPENING_LINE_END.search(above)
        if _CLOSING_TAIL.match(after) and not opens:
            return delimiter
        return None
    return None


def _inside_flags(lines: list[str], lang: str) -> list[bool]:
    """For each line of one side of a hunk: True when it starts inside a multi-line string."""
    comments = _COMMENT[lang]
    state = _starts_inside(lines, lang)
    flags: list[bool] = []
    for text in lines:
        flags.append(state is not None)
        if state is None and text.lstrip().startswith(comments):
            continue
        for _, delimiter in _occurrences(text, lang):
            if state is None:
                state = delimiter
            elif delimiter == state:
                state = None
    return flags


def _side(hunk: Hunk, kind: str, lang: str) -> dict[int, bool]:
    indexes = [i for i, line in enumerate(hunk.lines) if line.kind in (" ", kind)]
    flags = _inside_flags([hunk.lines[i].text for i in indexes], lang)
    return dict(zip(indexes, flags, strict=True))


def _code_lines(hunk: Hunk, lang: str) -> list[DiffLine]:
    new, old = _side(hunk, "+", lang), _side(hunk, "-", lang)
    return [line for i, line in enumerate(hunk.lines)
            if not (new.get(i, False) if line.kind == "+" else old.get(i, False) if line.kind == "-"
                    else new[i] and old[i])]


def without_strings(file: FileDiff, lang: Language) -> FileDiff:
    """The file's diff less the lines inside multi-line string literals (line numbers kept)."""
    if lang.name not in _DELIMITERS or not any(d in line.text for hunk in file.hunks for line in hunk.lines
                                               for d in _DELIMITERS[lang.name]):
        return file
    return replace(file, hunks=[Hunk(_code_lines(hunk, lang.name)) for hunk in file.hunks])
