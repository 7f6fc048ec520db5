"""Suite-wide rules: what each directory's tests are (markers), and private XDG directories per process.

The suite runs under pytest-xdist, so every worker process gets its own XDG cache, config, data and
state directories: what the code under test caches there (pre-flight results, the usage database it
reads) is shared with no other worker and never with the developer's own. HOME itself stays: the
guard judges paths against it, and a HOME under /tmp would make `rm -rf ~` a temporary-directory
delete. Tests that run agent CLIs give them a HOME of their own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# Every test under these directories carries the marker, whether or not its module says so.
MARKED_DIRECTORIES = {"e2e": pytest.mark.e2e, "browser": pytest.mark.browser, "fleet": pytest.mark.fleet,
                     "tui": pytest.mark.tui}
_XDG = {"XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache", "XDG_DATA_HOME": ".local/share",
        "XDG_STATE_HOME": ".local/state"}


def private_xdg(worker: str) -> Path:
    """Fresh, empty XDG directories for this test process, under one temporary directory."""
    base = Path(tempfile.mkdtemp(prefix=f"kilo-loop-xdg-{worker}-"))
    for variable, relative in _XDG.items():
        (base / relative).mkdir(parents=True, exist_ok=True)
        os.environ[variable] = str(base / relative)
    return base


_homes: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    _homes.append(private_xdg(os.environ.get("PYTEST_XDIST_WORKER", "main")))


def pytest_unconfigure(config: pytest.Config) -> None:
    while _homes:
        shutil.rmtree(_homes.pop(), ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        relative = Path(str(item.path)).relative_to(TESTS) if TESTS in Path(str(item.path)).parents else None
        if relative is not None and relative.parts[0] in MARKED_DIRECTORIES:
            item.add_marker(MARKED_DIRECTORIES[relative.parts[0]])
