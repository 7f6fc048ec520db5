"""Shared by the browser tests: Debian's Chromium through Playwright, and a launcher process
serving a fresh project (optionally with a config.json), opened by its tokened link."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.web.support import ServerProcess, git_env, make_project, start_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not os.path.exists(CHROMIUM):
        pytest.skip("Chromium is not installed at /usr/bin/chromium")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def long_plan(project: Path, stages: int = 40) -> str:
    body = "# Long plan\n\n" + "".join(f"- [ ] Stage number {n}\n" for n in range(1, stages + 1))
    (project / "plans" / "long.md").write_text(body)
    return "plans/long.md"


ServerFactory = Callable[..., tuple[ServerProcess, Path]]


@pytest.fixture
def serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerFactory]:
    """`serve(delay, config=None)`: the launcher on a new project, stopped after the test."""
    started: list[ServerProcess] = []
    env = git_env(tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)

    def factory(delay: float, config: str | None = None) -> tuple[ServerProcess, Path]:
        project = make_project(tmp_path / "repo")
        if config is not None:
            (project / ".kilocode-loop" / "config.json").write_text(config)
        process = start_server(project, tmp_path / "server.log", {**env, "KILO_LOOP_DRY_RUN_DELAY": str(delay)})
        started.append(process)
        return process, project

    yield factory
    for process in started:
        process.stop()


@pytest.fixture
def server(serve: ServerFactory) -> tuple[ServerProcess, Path]:
    return serve(0.15)
