"""The dashboard's routes are module-level functions that reach the dashboard through FastAPI
dependencies, so one set of routers serves every app, each with its own context."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi.routing import APIRoute

from kilo_loop.redact import Redactor
from kilo_loop.settings import load_settings
from kilo_loop.web import routes_history, routes_launcher, routes_review, routes_run
from kilo_loop.web.app import create_app, pages
from kilo_loop.web.context import DashboardContext
from kilo_loop.web.controller import RunController
from kilo_loop.web.security import SecurityPolicy
from kilo_loop.web.sse import EventHub

HOST = "127.0.0.1:7998"


def _context(project: Path) -> DashboardContext:
    base = load_settings({}, None)
    hub = EventHub()
    return DashboardContext(project, base, RunController(project, base, hub, lambda: True), hub, Redactor())


def test_no_route_is_a_closure_and_the_app_serves_them_all(tmp_path: Path) -> None:
    routers = (routes_run.router, routes_history.router, routes_launcher.router, routes_review.router)
    routes = [route for router in (*routers, pages) for route in router.routes if isinstance(route, APIRoute)]
    assert len(routes) > 20
    assert [r.endpoint.__qualname__ for r in routes if "<locals>" in r.endpoint.__qualname__] == []
    served = create_app(_context(tmp_path), SecurityPolicy(frozenset())).openapi()["paths"]
    assert set(served) == {route.path for router in routers for route in router.routes if isinstance(route, APIRoute)}


async def test_each_app_answers_from_its_own_context(tmp_path: Path) -> None:
    projects = [tmp_path / "one", tmp_path / "two"]
    seen = []
    for project in projects:
        project.mkdir()
        app = create_app(_context(project), SecurityPolicy(frozenset({HOST}), "token"))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=f"http://{HOST}") as client:
            answer = await client.get("/api/state", headers={"Authorization": "Bearer token"})
        assert answer.status_code == 200
        seen.append(answer.json()["project"])
    assert seen == [str(project) for project in projects]


async def test_a_control_without_a_run_is_a_conflict_from_the_one_error_table(tmp_path: Path) -> None:
    app = create_app(_context(tmp_path), SecurityPolicy(frozenset({HOST}), "token"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=f"http://{HOST}") as client:
        answer = await client.post("/api/control", json={"action": "pause"}, headers={"Authorization": "Bearer token"})
    assert answer.status_code == 409 and answer.json() == {"error": "no run is active"}
