"""The README introduces: short, its links resolve, and its first commands are the ones that work."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def prose(markdown: str) -> str:
    return FENCED.sub("", markdown)


def relative_links(markdown: str) -> list[str]:
    targets = re.findall(r"\]\(([^)\s]+)\)", prose(markdown))
    return [target for target in targets if not re.match(r"[a-z]+:|#", target)]


def test_readme_is_at_most_1200_words_outside_code_blocks() -> None:
    assert len(prose(README).split()) <= 1200


def test_every_relative_link_of_the_readme_resolves() -> None:
    missing = [link for link in relative_links(README) if not (ROOT / link.split("#")[0]).exists()]
    assert missing == []


def test_the_first_command_is_the_dry_run_and_the_test_command_is_there() -> None:
    first_block = FENCED.search(README)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(0).splitlines()[1:-1]]
    assert commands[0] == "./kilo-loop --dry-run --goal examples/goal.example.md -n 4 --no-confirm"
    assert "scripts/test.sh" in commands
    assert (ROOT / "examples" / "goal.example.md").is_file() and (ROOT / "scripts" / "test.sh").is_file()


def test_the_readme_speaks_the_users_language() -> None:
    words = re.findall(r"\b(round \d|issue \d+|seed|HITL|handoff packet)\b", prose(README), re.IGNORECASE)
    assert words == []
