"""MkDocs hook: fills `<!-- generated: NAME -->` markers in the docs with tables built from the code
(kilo_loop.reference), so the reference pages cannot drift from the program; and puts CHANGELOG.md on
the changelog page, its `docs/…` links made relative to the site."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kilo_loop.reference import fill, generated_sections

_SECTIONS: dict[str, str] = {}
_CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"


def on_page_markdown(markdown: str, **_: Any) -> str:
    if not _SECTIONS:
        _SECTIONS.update(generated_sections())
        _SECTIONS["changelog"] = _CHANGELOG.read_text(encoding="utf-8").replace("](docs/", "](")
    return fill(markdown, _SECTIONS)
