"""MkDocs hook: fills `<!-- generated: NAME -->` markers in the docs with tables built from the code
(kilo_loop.reference), so the reference pages cannot drift from the program."""

from __future__ import annotations

from typing import Any

from kilo_loop.reference import fill, generated_sections

_SECTIONS: dict[str, str] = {}


def on_page_markdown(markdown: str, **_: Any) -> str:
    if not _SECTIONS:
        _SECTIONS.update(generated_sections())
    return fill(markdown, _SECTIONS)
