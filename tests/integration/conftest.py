from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.loop_harness import FakeKilo, init_repo


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


@pytest.fixture
def fake(tmp_path: Path) -> FakeKilo:
    return FakeKilo(tmp_path / "fake")
