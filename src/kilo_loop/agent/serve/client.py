"""A small typed client for the server API of kilo / opencode (`<cli> serve`), over loopback.

Only what the loop uses: health, sessions, `prompt_async`, abort, the message
list, permission and question replies, and the `/event` SSE stream. HTTP
failures become `ServerError` (the server answered) or `ServerGone` (it did not:
refused, reset, timed out) so the backend can tell a bad request from a dead server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from kilo_loop.agent.serve.sse import BadFrame, SseDecoder
from kilo_loop.errors import KiloLoopError

_REQUEST_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
_STREAM_TIMEOUT = httpx.Timeout(None, connect=5.0)
# A server can accept a connection before it is ready and then never answer that first request
# (opencode 1.18.33 and kilo 7.7.7 do): a health probe gives up soon and asks again.
_HEALTH_TIMEOUT = httpx.Timeout(2.0, connect=2.0)


class ServerError(KiloLoopError, RuntimeError):
    def __init__(self, status: int, what: str, body: str) -> None:
        super().__init__(f"{what}: HTTP {status}: {body[:300]}")
        self.status = status


class ServerGone(KiloLoopError, ConnectionError):
    """The server did not answer (connection refused or reset, or it timed out)."""


def split_model(model: str | None) -> dict[str, str] | None:
    """`provider/model` → the API's `{"providerID", "modelID"}` (a bare name has no provider: None)."""
    if not model or "/" not in model:
        return None
    provider, _, model_id = model.partition("/")
    return {"providerID": provider, "modelID": model_id}


class ServerClient:
    def __init__(self, base_url: str, username: str, password: str,
                 transport: httpx.AsyncBaseTransport | None = None, uds: str | None = None) -> None:
        if transport is None and uds is not None:  # a server inside a jail with its own network
            transport = httpx.AsyncHTTPTransport(uds=uds)
        self._http = httpx.AsyncClient(base_url=base_url, auth=(username, password), timeout=_REQUEST_TIMEOUT,
                                       trust_env=False,  # loopback only: no proxy from the environment
                                       transport=transport)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise ServerGone(f"{what}: {type(exc).__name__}: {exc or 'connection reset'}") from exc
        if response.status_code >= 400:
            raise ServerError(response.status_code, what, response.text)
        return response.json() if response.content else None

    async def healthy(self) -> bool:
        try:
            body = await self._call("GET", "/global/health", "health", timeout=_HEALTH_TIMEOUT)
        except (ServerGone, ServerError):
            return False
        return isinstance(body, dict) and body.get("healthy") is True

    async def permission_config(self) -> Any:
        """The `permission` section of the server's effective configuration (`GET /config`)."""
        body = await self._call("GET", "/config", "read config")
        return body.get("permission") if isinstance(body, dict) else None

    async def create_session(self, title: str) -> str:
        body = await self._call("POST", "/session", "create session", json={"title": title})
        session = body.get("id") if isinstance(body, dict) else None
        if not isinstance(session, str) or not session:
            raise ServerError(200, "create session", f"no session id in {body!r}")
        return session

    async def messages(self, session: str) -> list[Any]:
        body = await self._call("GET", f"/session/{session}/message", "list messages")
        return body if isinstance(body, list) else []

    async def prompt(self, session: str, text: str, *, agent: str | None = None, model: str | None = None,
                     variant: str | None = None) -> None:
        payload: dict[str, Any] = {"parts": [{"type": "text", "text": text}]}
        for key, value in (("agent", agent), ("model", split_model(model)), ("variant", variant)):
            if value:
                payload[key] = value
        await self._call("POST", f"/session/{session}/prompt_async", "prompt", json=payload)

    async def abort(self, session: str) -> None:
        await self._call("POST", f"/session/{session}/abort", "abort")

    async def reply_permission(self, request_id: str, reply: str, message: str | None = None) -> None:
        payload = {"reply": reply, **({"message": message} if message else {})}
        await self._call("POST", f"/permission/{request_id}/reply", "permission reply", json=payload)

    async def reply_question(self, request_id: str, answers: list[list[str]]) -> None:
        await self._call("POST", f"/question/{request_id}/reply", "question reply", json={"answers": answers})

    async def reject_question(self, request_id: str) -> None:
        await self._call("POST", f"/question/{request_id}/reject", "question reject")

    async def session_busy(self, session: str) -> bool:
        body = await self._call("GET", "/session/status", "session status")
        status = body.get(session) if isinstance(body, dict) else None
        return isinstance(status, dict) and status.get("type") in ("busy", "retry")

    @asynccontextmanager
    async def events(self) -> AsyncIterator[AsyncIterator[dict[str, Any] | BadFrame]]:
        """The `/event` stream, opened (the server's `server.connected` frame comes first)."""
        try:
            async with self._http.stream("GET", "/event", timeout=_STREAM_TIMEOUT) as response:
                if response.status_code >= 400:
                    raise ServerError(response.status_code, "event stream", (await response.aread()).decode())
                yield _frames(response)
        except httpx.TransportError as exc:
            raise ServerGone(f"event stream: {type(exc).__name__}: {exc or 'connection reset'}") from exc


async def _frames(response: httpx.Response) -> AsyncIterator[dict[str, Any] | BadFrame]:
    decoder = SseDecoder()
    try:
        async for line in response.aiter_lines():
            frame = decoder.feed(line)
            if frame is not None:
                yield frame
    except httpx.TransportError as exc:
        raise ServerGone(f"event stream: {type(exc).__name__}: {exc or 'connection reset'}") from exc
    last = decoder.finish()
    if last is not None:
        yield last
