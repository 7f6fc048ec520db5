"""The security middleware on its own, in front of a tiny app (httpx ASGITransport)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from kilo_loop.web.security import (
    SecurityMiddleware,
    SecurityPolicy,
    bearer,
    cookie_value,
    is_json,
    origin_ok,
    query_token,
)

HOSTS = frozenset({"127.0.0.1:7999", "localhost:7999", "192.168.1.5:7999"})


async def echo(request: Request) -> JSONResponse:
    body = await request.body()
    return JSONResponse({"method": request.method, "size": len(body)})


def client(token: str | None = None, max_body: int = 1024) -> httpx.AsyncClient:
    app = Starlette(routes=[Route("/api/echo", echo, methods=["GET", "POST"])])
    secured = SecurityMiddleware(app, SecurityPolicy(HOSTS, token, "kl_7999", max_body))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=secured), base_url="http://127.0.0.1:7999")


def test_pure_helpers() -> None:
    assert origin_ok(None, "127.0.0.1:7999") and origin_ok("http://127.0.0.1:7999", "127.0.0.1:7999")
    assert not origin_ok("http://127.0.0.1:8000", "127.0.0.1:7999") and not origin_ok(
        "null", "127.0.0.1:7999"
    )
    assert is_json("application/json; charset=utf-8") and is_json("application/merge-patch+json")
    assert not is_json("text/plain") and not is_json(None) and not is_json("multipart/form-data")
    assert bearer("Bearer abc") == "abc" and bearer("Basic abc") is None and bearer(None) is None
    assert query_token(b"a=1&token=xyz") == "xyz" and query_token(b"tokens=1") is None
    assert cookie_value("a=1; kl_7999=tok; b=2", "kl_7999") == "tok" and cookie_value(None, "x") is None


async def test_host_header_must_name_this_server() -> None:
    async with client() as c:
        assert (await c.get("/api/echo")).status_code == 200
        assert (await c.get("/api/echo", headers={"Host": "192.168.1.5:7999"})).status_code == 200
        for host in ("evil.com", "evil.com:7999", "127.0.0.1:8000", "127.0.0.1", "localhost.evil.com:7999"):
            response = await c.get("/api/echo", headers={"Host": host})
            assert response.status_code == 400 and "Host" in response.json()["error"], host


async def test_origin_and_content_type_on_state_changing_requests() -> None:
    async with client() as c:
        assert (await c.post("/api/echo", json={})).status_code == 200
        assert (
            await c.post("/api/echo", json={}, headers={"Origin": "http://127.0.0.1:7999"})
        ).status_code == 200
        assert (await c.post("/api/echo", json={}, headers={"Origin": "http://evil.com"})).status_code == 403
        assert (
            await c.post(
                "/api/echo", content=b"a=1", headers={"content-type": "application/x-www-form-urlencoded"}
            )
        ).status_code == 415
        assert (await c.post("/api/echo")).status_code == 200  # no body at all is fine
        assert (await c.get("/api/echo", headers={"Origin": "http://evil.com"})).status_code == 200


async def test_body_size_limit_with_and_without_content_length() -> None:
    async with client(max_body=1024) as c:
        assert (
            await c.post("/api/echo", content=b"x" * 1024, headers={"content-type": "application/json"})
        ).json()["size"] == 1024
        too_big = await c.post("/api/echo", content=b"x" * 1025, headers={"content-type": "application/json"})
        assert too_big.status_code == 413

        async def stream() -> AsyncIterator[bytes]:
            for _ in range(5):
                yield b"x" * 300

        chunked = await c.post("/api/echo", content=stream(), headers={"content-type": "application/json"})
        assert chunked.status_code == 413
        lying = await c.post(
            "/api/echo", content=b"{}", headers={"content-type": "application/json", "content-length": "-5"}
        )
        assert lying.status_code in (400, 413)


async def test_token_by_query_then_cookie_or_bearer() -> None:
    async with client(token="s3cret") as c:
        assert (await c.get("/api/echo")).status_code == 401
        assert (await c.get("/api/echo?token=wrong")).status_code == 401
        assert (await c.get("/api/echo", headers={"Authorization": "Bearer wrong"})).status_code == 401
        first = await c.get("/api/echo?token=s3cret")
        assert first.status_code == 200
        assert first.headers["set-cookie"] == "kl_7999=s3cret; HttpOnly; SameSite=Strict; Path=/"
        assert (await c.get("/api/echo")).status_code == 200
    async with client(token="s3cret") as c:
        assert (await c.get("/api/echo", headers={"Authorization": "Bearer s3cret"})).status_code == 200
        assert (await c.post("/api/echo", json={}, headers={"Cookie": "kl_7999=s3cret"})).status_code == 200


@pytest.mark.parametrize("token", [None, "t"])
async def test_every_response_carries_the_protective_headers(token: str | None) -> None:
    async with client(token=token) as c:
        for response in (await c.get("/api/echo"), await c.get("/api/echo", headers={"Host": "x"})):
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["referrer-policy"] == "no-referrer"
            assert "default-src 'self'" in response.headers["content-security-policy"]
