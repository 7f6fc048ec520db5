"""Assertions a diff adds by parametrizing a test: a test rewritten as one parametrized test (pytest
`parametrize`, JUnit `@ParameterizedTest`, Jest/Vitest `.each`) runs its assertions once per case,
so three asserts folded into one assert over three cases do not assert less. Pure.

Only a parametrization the diff adds counts (one it edits may have lost cases); its cases are read
from the marker's own line or the added lines of its table, at least two."""

from __future__ import annotations

import ast
import re

from kilo_loop.tamper.diff import DiffLine, FileDiff, Hunk
from kilo_loop.tamper.languages import Language

_MARKER = {
    "python": re.compile(r"^\s*@\s*(pytest\.)?mark\.parametrize\s*\("),
    "java": re.compile(r"^\s*@\s*ParameterizedTest\b"),
    "javascript": re.compile(r"\b(it|test|describe)(\.\w+)*\.each\b"),
}
# One case of a parametrization's table, on a line of its own.
_CASE_LINE = {
    "python": re.compile(r"^\s*(\(|\[|pytest\.param\s*\(|['\"\d])"),
    "java": re.compile(r"\b(Arguments\.of|arguments)\s*\(|^\s*\"[^\"]*\"\s*,?\s*$"),
    "javascript": re.compile(r"^\s*(\[|\{)"),
}
_JAVA_INLINE = re.compile(r"@\s*(ValueSource|CsvSource)\s*\(.*\{(.*)\}")


def _python_cases(text: str) -> int | None:
    """The cases of a one-line `@pytest.mark.parametrize("name", [a, b, c])`."""
    try:
        call = ast.parse(text.strip().lstrip("@"), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(call, ast.Call) and len(call.args) >= 2 and isinstance(call.args[1], ast.List | ast.Tuple):
        return len(call.args[1].elts)
    return None


def _cases(lang: str, marker: DiffLine, after: list[DiffLine]) -> int:
    inline = _python_cases(marker.text) if lang == "python" else None
    if lang == "java":
        match = next((m for m in (_JAVA_INLINE.search(line.text) for line in after[:3]) if m), None)
        inline = match.group(2).count(",") + 1 if match else None
    if inline is None:
        table = _CASE_LINE[lang]
        inline = sum(1 for line in after if line.kind == "+" and table.search(line.text))
    return max(inline, 2)


def _body(hunk: Hunk, start: int, lang: Language) -> list[DiffLine]:
    """The new side's lines from the marker to the next test opener after the test it marks."""
    lines: list[DiffLine] = []
    openers = 0
    for line in hunk.lines[start + 1:]:
        if line.kind == "-":
            continue
        if lang.test_opener.search(line.text):
            openers += 1
            if openers > 1 and not line.text.lstrip().startswith("@"):
                break
        lines.append(line)
    return lines


def _table(after: list[DiffLine], lang: Language) -> list[DiffLine]:
    """The lines of a parametrization's table: up to the test it marks (Python) or the table's end."""
    end = re.compile(r"^\s*(async\s+)?def\s" if lang.name == "python" else r"^\s*\]\s*\)|`\s*\(")
    lines: list[DiffLine] = []
    for line in after:
        if end.search(line.text):
            break
        lines.append(line)
    return lines


def parametrized_extra(file: FileDiff, lang: Language, file_table: list[DiffLine]) -> int:
    """Assertions the file's newly parametrized tests add beyond their first case. `file_table`:
    the file's added lines (a JUnit method source may sit anywhere in the file)."""
    marker = _MARKER.get(lang.name)
    if marker is None:
        return 0
    extra = 0
    for hunk in file.hunks:
        if any(marker.search(r.text) for r in hunk.removed()):
            continue  # a parametrization edited, not added
        for index, line in enumerate(hunk.lines):
            if line.kind != "+" or not marker.search(line.text):
                continue
            body = _body(hunk, index, lang)
            asserts = sum(1 for b in body if lang.assertion.search(b.text) and not b.text.lstrip().startswith("#"))
            table = file_table if lang.name == "java" else _table(hunk.lines[index + 1:], lang)
            extra += (_cases(lang.name, line, table) - 1) * asserts
    return extra
