"""--prompt-extra: a file's text, the instructions themselves, or (a file that is not there) an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from kilo_loop.runner import SetupError, read_prompt_extra


def test_a_file_in_the_project_is_read(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("  Use tabs.\n")
    assert read_prompt_extra("notes.md", tmp_path) == "Use tabs."


@pytest.mark.parametrize("text", ["Be brief.", "fix the bug in src/app.py first", "keep README.md short",
                                  "tabs", "  Use tabs, not spaces.  "])
def test_instructions_are_taken_as_they_are(tmp_path: Path, text: str) -> None:
    assert read_prompt_extra(text, tmp_path) == text.strip()


@pytest.mark.parametrize("name", ["notes.md", "docs/extra", "~/prompts/review.txt", "PLAN.MD"])
def test_a_missing_file_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(SetupError, match="no such file"):
        read_prompt_extra(name, tmp_path)


def test_nothing_given_is_nothing(tmp_path: Path) -> None:
    assert read_prompt_extra(None, tmp_path) is None
    assert read_prompt_extra("", tmp_path) is None
