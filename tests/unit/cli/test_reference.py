"""The generated reference covers every config key and every flag of the run."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from kilo_loop.cli import SUBCOMMANDS, main
from kilo_loop.reference import (
    COMMAND_ONLY_FLAGS,
    FLAG_OF,
    config_keys,
    fill,
    generated_sections,
    option_help,
    type_name,
)
from kilo_loop.run.status import EXIT_CODES
from kilo_loop.settings import Settings

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_every_config_key_has_a_row_that_says_what_it_does() -> None:
    entries = {entry.key: entry for entry in config_keys(dict(Settings.model_fields), option_help(main))}
    assert len(entries) == len(Settings.model_fields)
    undocumented = [key for key, entry in entries.items() if not entry.help.strip()]
    assert undocumented == [], "give these keys a flag help or a KEY_HELP line in kilo_loop/reference.py"
    assert entries["maxCost"].env == "KILO_LOOP_MAX_COST" and entries["maxCost"].flag == "--max-cost"
    assert entries["port"].default == "7999" and entries["transport"].type == '"serve" | "run"'


def test_every_flag_of_the_run_is_a_config_key_or_named_as_command_only() -> None:
    keyed = {FLAG_OF.get(name, name) for name in Settings.model_fields}
    loose = {param.name for param in main.params if param.name not in keyed} - COMMAND_ONLY_FLAGS
    assert loose == set(), "a new flag needs a settings field, or a place in COMMAND_ONLY_FLAGS"


def test_every_visible_flag_has_help() -> None:
    assert [name for name, (_flags, text) in option_help(main).items() if not text] == []


def test_sections_hold_every_exit_code_and_pack() -> None:
    sections = generated_sections()
    for status, code in EXIT_CODES.items():
        assert f"| {code} | `{status}` |" in sections["exit codes"]
    assert "## `git`" in sections["guard packs"] and "`git-push-force`" in sections["guard packs"]
    assert "| `run-finished` |" in sections["events"] and "| `review-gate` |" in sections["events"]
    assert "### `RunState`" in sections["state"] and "| `stages` | list of StageState object |" in sections["state"]


def test_every_marker_in_the_docs_is_filled() -> None:
    sections = {**generated_sections(), "changelog": ""}  # the changelog: CHANGELOG.md, put in by the docs hook
    for page in DOCS.rglob("*.md"):
        assert "<!-- generated:" not in fill(page.read_text(), sections), page


def test_an_unknown_marker_is_an_error() -> None:
    with pytest.raises(KeyError, match="no generated section named 'nope'"):
        fill("<!-- generated: nope -->", {})


def test_every_subcommand_is_in_the_commands_page() -> None:
    page = (DOCS / "reference" / "commands.md").read_text()
    assert [name for name in SUBCOMMANDS if f"kilo-loop {name}" not in page] == []


@pytest.mark.parametrize(("annotation", "name"), [
    (int, "integer"), (float | None, "number or null"), (list[str], "list of str".replace("str", "string")),
    (Literal["a", "b"], '"a" | "b"'), (bool | dict[str, bool], "boolean or object"),
])
def test_type_names(annotation: object, name: str) -> None:
    assert type_name(annotation) == name
