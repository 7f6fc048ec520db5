"""Where things are in this checkout, for tests that read fixtures or start the CLI from source."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO_ROOT = TESTS.parent
SRC = REPO_ROOT / "src"
CORPORA = TESTS / "corpora"
FIXTURES = TESTS / "fixtures"
EXAMPLES = REPO_ROOT / "examples"
