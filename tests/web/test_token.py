"""The dashboard's token on loopback and under --lan, the two-request exploit, the HTML 401 page,
the caps on event streams and requests in flight, and what the terminal is told."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from kilo_loop.web.app import create_app
from kilo_loop.web.binding import plan_binding
from kilo_loop.web.security import SecurityMiddleware, SecurityPolicy
from tests.web.conftest import Harness

SAMPLE_PATH_VALUES = {"run_id": "20260101-000000-abcd", "iteration": "1"}


def every_route(openapi: dict[str, Any]) -> list[tuple[str, str]]:
    """(method, concrete path) of every documented endpoint, reading and mutating."""
    routes = []
    for template, methods in openapi["paths"].items():
        path = template
        for name, value in SAMPLE_PATH_VALUES.items():
            path = path.replace("{" + name + "}", value)
        routes.extend((method.upper(), path) for method in methods)
    return routes


async def refused_everywhere(client: httpx.AsyncClient, routes: list[tuple[str, str]]) -> None:
    for method, path in [*routes, ("GET", "/"), ("GET", "/static/app.js"), ("GET", "/openapi.json")]:
        body = {"json": {}} if method == "POST" else {}
        response = await client.request(method, path, **body)  # type: ignore[arg-type]
        assert response.status_code == 401, (method, path, response.status_code)


async def test_every_endpoint_refuses_a_request_without_the_token_on_loopback(harness: Harness) -> None:
    openapi = (await harness.client.get("/openapi.json")).json()
    routes = every_route(openapi)
    assert len(routes) >= 15 and ("POST", "/api/start") in routes and ("GET", "/api/runs") in routes
    async with harness.anonymous() as anonymous:
        await refused_everywhere(anonymous, routes)
        wrong = {"Authorization": "Bearer not-the-token", "Cookie": f"kilo_loop_{harness.dashboard.binding.port}=x"}
        for method, path in routes[:6]:
            assert (await anonymous.request(method, path, headers=wrong)).status_code == 401


async def test_every_endpoint_refuses_a_request_without_the_token_under_lan(harness: Harness) -> None:
    """The same app behind the policy a --lan bind gets (served in-process: nothing binds 0.0.0.0)."""
    binding = plan_binding(None, True, False, 7999, lambda: "192.168.1.106")
    policy = SecurityPolicy(binding.allowed_hosts(), "lan-token", cookie_name="kilo_loop_7999")
    app = create_app(harness.dashboard.ctx, policy)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://192.168.1.106:7999") as phone:
        await refused_everywhere(phone, every_route(app.openapi()))
        assert (await phone.get("/api/state", headers={"Authorization": "Bearer lan-token"})).status_code == 200


async def test_the_two_request_exploit_fails_without_the_token(harness: Harness) -> None:
    canary = harness.project / "pwned"
    async with harness.anonymous() as attacker:
        saved = await attacker.post("/api/goals/verify-global", json={"verify": f"touch {canary}"})
        started = await attacker.post("/api/start", json={"file": "plans/demo.md", "iterations": 1})
    assert saved.status_code == 401 and started.status_code == 401
    assert not (harness.project / ".kilocode-loop" / "config.json").exists()
    assert not (harness.project / ".kilocode-loop" / "runs").exists()
    assert not canary.exists() and harness.notices == []


async def test_a_browser_without_the_token_gets_a_page_saying_where_the_link_is(harness: Harness) -> None:
    async with harness.anonymous() as browser:
        page = await browser.get("/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        assert page.status_code == 401 and page.headers["content-type"].startswith("text/html")
        assert "terminal" in page.text and "?token=" in page.text and "{" not in page.text
        api = await browser.get("/api/state", headers={"Accept": "application/json"})
        assert api.status_code == 401 and "token" in api.json()["error"]


async def test_saved_commands_and_instructions_are_shown_on_the_terminal(harness: Harness) -> None:
    await harness.client.post("/api/goals/verify-global", json={"verify": "make test"})
    await harness.client.post(
        "/api/goals/verify", json={"file": "plans/demo.md", "stageIndex": 0, "verify": "pytest -q"}
    )
    run_id = await harness.start(hitl="off", iterations=1, promptExtra="Keep the public API")
    await harness.wait_state(lambda s: s["runId"] == run_id and not s["running"])
    await harness.client.post("/api/goals/verify-global", json={"verify": ""})
    assert harness.notices[0] == (
        "dashboard set the default verify command for every run (.kilocode-loop/config.json): make test"
    )
    assert harness.notices[1] == "dashboard set the verify command of plans/demo.md (stage 1): pytest -q"
    assert harness.notices[2] == f"dashboard set a custom instruction for run {run_id}: Keep the public API"
    assert harness.notices[3].endswith(": (cleared)")


async def test_a_secret_in_a_saved_command_is_redacted_on_the_terminal(harness: Harness) -> None:
    secret = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 4
    await harness.client.post("/api/goals/verify-global", json={"verify": f"curl -H 'x-api-key: {secret}' x"})
    assert harness.notices and secret not in harness.notices[0]


# ---------------------------------------------------------------- caps


async def test_event_streams_past_the_cap_get_503(harness: Harness) -> None:
    """Real streams against the real server: the default cap, then one more."""
    from kilo_loop.web.security import MAX_STREAMS

    async with contextlib.AsyncExitStack() as stack:
        for _ in range(MAX_STREAMS):
            stream = await stack.enter_async_context(harness.client.stream("GET", "/api/events"))
            assert stream.status_code == 200
        refused = await harness.client.get("/api/events")
        assert refused.status_code == 503 and "event streams" in refused.json()["error"]
        assert refused.headers["retry-after"] == "5"
        assert (await harness.client.get("/api/state")).status_code == 200  # requests still go through
    await asyncio.sleep(0.1)  # the server notices the closed streams
    async with harness.client.stream("GET", "/api/events") as again:
        assert again.status_code == 200


@contextlib.asynccontextmanager
async def blocked_app(max_in_flight: int) -> AsyncIterator[tuple[httpx.AsyncClient, asyncio.Event, SecurityMiddleware]]:
    release = asyncio.Event()

    async def slow(_: Request) -> Response:
        await release.wait()
        return JSONResponse({"ok": True})

    async def events(_: Request) -> Response:
        async def body() -> AsyncIterator[bytes]:
            yield b"data: 1\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/api/slow", slow), Route("/api/events", events)])
    policy = SecurityPolicy(frozenset({"127.0.0.1:7999"}), "t", max_in_flight=max_in_flight, max_streams=1)
    middleware = SecurityMiddleware(app, policy)
    transport = httpx.ASGITransport(app=middleware)
    headers = {"Authorization": "Bearer t"}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:7999", headers=headers) as c:
        yield c, release, middleware


async def test_requests_in_flight_past_the_cap_get_503() -> None:
    async with blocked_app(max_in_flight=2) as (client, release, middleware):
        pending = [asyncio.create_task(client.get("/api/slow")) for _ in range(2)]
        while middleware.in_flight < 2:
            await asyncio.sleep(0.01)
        refused = await client.get("/api/slow")
        assert refused.status_code == 503 and "too many requests" in refused.json()["error"]
        assert (await client.get("/api/events")).status_code == 200  # streams are counted apart
        release.set()
        assert [r.status_code for r in await asyncio.gather(*pending)] == [200, 200]
        assert middleware.in_flight == 0 and middleware.streams == 0
        assert (await client.get("/api/slow")).status_code == 200


@pytest.mark.parametrize("host, status", [("[::1]:7999", 400), ("127.0.0.1:7999", 200)])
async def test_ipv6_loopback_host_refused_on_an_ipv4_server(harness: Harness, host: str, status: int) -> None:
    port = harness.dashboard.binding.port
    response = await harness.client.get("/api/state", headers={"Host": host.replace("7999", str(port))})
    assert response.status_code == status

