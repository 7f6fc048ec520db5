"""Fixtures: a project repository and a dashboard served on 127.0.0.1 in the test's own loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from kilo_loop.settings import load_settings
from kilo_loop.web.server import Dashboard, prepare_dashboard
from tests.web.support import git_env, make_project


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in git_env(tmp_path_factory.mktemp("git")).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("KILO_LOOP_DRY_RUN_DELAY", "0.01")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "repo")


@dataclass
class Harness:
    dashboard: Dashboard
    client: httpx.AsyncClient  # carries the run's token, as a browser that opened the link
    project: Path
    notices: list[str]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.dashboard.binding.port}"

    @property
    def token(self) -> str:
        assert self.dashboard.token is not None
        return self.dashboard.token

    def anonymous(self) -> httpx.AsyncClient:
        """A client without the token: any other process on the machine."""
        return httpx.AsyncClient(base_url=self.origin, timeout=20)

    async def state(self) -> dict[str, Any]:
        response = await self.client.get("/api/state")
        assert response.status_code == 200
        result: dict[str, Any] = response.json()
        return result

    async def wait_state(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 20.0
    ) -> dict[str, Any]:
        """Poll /api/state until `predicate` holds (a wait, not a timing assertion)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            state = await self.state()
            if predicate(state):
                return state
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(
                    f"state never matched; last: {state.get('status')} it {state.get('iteration')}"
                )
            await asyncio.sleep(0.02)

    async def start(self, **body: Any) -> str:
        response = await self.client.post(
            "/api/start", json={"file": "plans/demo.md", "dryRun": True, **body}
        )
        assert response.status_code == 201, response.text
        run_id: str = response.json()["runId"]
        return run_id

    async def run_to_end(self, **body: Any) -> str:
        run_id = await self.start(hitl="off", **body)
        await self.wait_state(lambda s: s["runId"] == run_id and not s["running"])
        return run_id


async def _serve(project: Path) -> Dashboard:
    settings = load_settings({"project": project, "port": 0}, project)
    dashboard = prepare_dashboard(settings, project, "launcher", find_lan_address=lambda: None)
    await dashboard.start()
    return dashboard


HarnessFactory = Callable[..., Awaitable[Harness]]


@pytest.fixture
async def make_harness(project: Path) -> AsyncIterator[HarnessFactory]:
    opened: list[Harness] = []

    async def factory() -> Harness:
        dashboard = await _serve(project)
        notices: list[str] = []
        dashboard.ctx.notice = notices.append
        client = httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{dashboard.binding.port}",
            timeout=20,
            headers={"Authorization": f"Bearer {dashboard.token}"},
        )
        harness = Harness(dashboard, client, project, notices)
        opened.append(harness)
        return harness

    yield factory
    for harness in opened:
        await harness.client.aclose()
        await harness.dashboard.controller.stop_active()
        await harness.dashboard.stop()


@pytest.fixture
async def harness(make_harness: HarnessFactory) -> Harness:
    return await make_harness()
