"""The dashboard's front door, as one ASGI middleware in front of every route.

In order: the Host header must name this server (no DNS rebinding); the request must carry
the run's token, on loopback as on a LAN bind, as Jupyter does (`?token=` once, then an
HttpOnly SameSite=Strict cookie named after the port, or `Authorization: Bearer`) — any local
process could otherwise drive the loop and run commands as the user; a state-changing request
must come from this origin and carry JSON; a body may not exceed the size limit; and only so
many requests (and, separately, event streams) may be open at once (503 past it). Every
response gets headers that keep the page from being framed, sniffed, or leaking the URL (and
its token) as a referrer. A browser refused for want of the token gets a small HTML page
saying where the link is; API clients get JSON.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl

import orjson
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 64 * 1024
MAX_IN_FLIGHT = 64  # ordinary requests being answered at once
MAX_STREAMS = 16  # open event streams (browser tabs), counted apart: they stay open
STREAM_PATHS = frozenset({"/api/events"})
NEEDS_TOKEN = (
    "this dashboard needs its token: open the URL with ?token=… that kilo-loop printed in the terminal"
)
NEEDS_TOKEN_PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>kilo-loop: open the link from the terminal</title></head>
<body>
<h1>This dashboard needs its link</h1>
<p>kilo-loop printed the address to open in the terminal where it runs, on the line
<code>Dashboard http://&hellip;/?token=&hellip;</code>. Open that link (Ctrl+Click it);
the token then stays in a cookie for this browser.</p>
<p>Lost it? The token changes every time kilo-loop starts: restart it to get a new link.</p>
</body></html>
"""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_SECURITY_HEADERS = (
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
)


def new_token() -> str:
    return secrets.token_urlsafe(24)


@dataclass(frozen=True)
class SecurityPolicy:
    allowed_hosts: frozenset[str]
    token: str | None = None  # None only for an app that is never served (the OpenAPI schema)
    cookie_name: str = "kilo_loop_token"
    max_body: int = MAX_BODY_BYTES
    max_in_flight: int = MAX_IN_FLIGHT
    max_streams: int = MAX_STREAMS

    def host_ok(self, host: str | None) -> bool:
        return host is not None and host.lower() in self.allowed_hosts

    def token_ok(self, candidate: str | None) -> bool:
        if self.token is None:
            return True
        return candidate is not None and secrets.compare_digest(candidate.encode(), self.token.encode())


def origin_ok(origin: str | None, host: str) -> bool:
    """A state-changing request's Origin, when the browser sent one, must be this very server."""
    if origin is None:
        return True
    return origin.lower() in {f"http://{host}".lower(), f"https://{host}".lower()}


def is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def bearer(authorization: str | None) -> str | None:
    if authorization and authorization[:7].lower() == "bearer ":
        return authorization[7:].strip()
    return None


def query_token(query_string: bytes) -> str | None:
    for key, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if key == "token":
            return value
    return None


def cookie_value(cookie_header: str | None, name: str) -> str | None:
    for part in (cookie_header or "").split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            return value
    return None


def _error_body(message: str) -> bytes:
    return orjson.dumps({"error": message})


def wants_html(path: str, accept: str | None) -> bool:
    """A browser loading a page (not the API, unless it asks for HTML rather than JSON)."""
    kinds = (accept or "").lower()
    if path.startswith("/api/") or path.endswith(".json"):
        return "text/html" in kinds and "application/json" not in kinds
    return "application/json" not in kinds


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy
        self.in_flight = 0
        self.streams = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        problem, set_cookie = self._check(scope, headers)
        if problem is not None:
            html = problem[0] == 401 and wants_html(scope["path"], headers.get("accept"))
            await _reject(send, *problem, html=html)
            return
        stream = scope["path"] in STREAM_PATHS
        if stream and self.streams >= self.policy.max_streams:
            await _reject(send, 503, f"too many open event streams (limit {self.policy.max_streams}): "
                                     "close another dashboard tab", retry_after=5)
            return
        if not stream and self.in_flight >= self.policy.max_in_flight:
            await _reject(send, 503, f"too many requests at once (limit {self.policy.max_in_flight}): "
                                     "retry shortly", retry_after=1)
            return
        await self._admitted(scope, receive, send, headers, set_cookie, stream)

    async def _admitted(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers, set_cookie: bool, stream: bool
    ) -> None:
        if stream:
            self.streams += 1
        else:
            self.in_flight += 1
        try:
            if scope["method"] not in SAFE_METHODS:
                body = await self._read_body(headers, receive)
                if body is None:
                    await _reject(send, 413, f"request body over {self.policy.max_body} bytes")
                    return
                receive = _replay(body, receive)
            await self.app(scope, receive, self._decorate(send, set_cookie))
        finally:
            if stream:
                self.streams -= 1
            else:
                self.in_flight -= 1

    def _check(self, scope: Scope, headers: Headers) -> tuple[tuple[int, str] | None, bool]:
        """(status and message to refuse with, or None; whether to set the token cookie)."""
        policy, host = self.policy, headers.get("host")
        if not policy.host_ok(host):
            return (
                400,
                f"unexpected Host header {host!r}: open the dashboard by the address it printed",
            ), False
        from_query = query_token(scope.get("query_string", b""))
        set_cookie = False
        if policy.token is not None:
            if from_query is not None and policy.token_ok(from_query):
                set_cookie = True
            elif not (
                policy.token_ok(cookie_value(headers.get("cookie"), policy.cookie_name))
                or policy.token_ok(bearer(headers.get("authorization")))
            ):
                return (401, NEEDS_TOKEN), False
        if scope["method"] not in SAFE_METHODS:
            assert host is not None
            if not origin_ok(headers.get("origin"), host):
                return (403, f"cross-origin request refused (Origin {headers.get('origin')!r})"), False
            length = headers.get("content-length")
            if length is not None and (not length.isdigit() or int(length) > policy.max_body):
                return (413, f"request body over {policy.max_body} bytes"), False
            if (length is None or length != "0") and not is_json(headers.get("content-type")):
                return (415, "send the body as application/json"), False
        return None, set_cookie

    async def _read_body(self, headers: Headers, receive: Receive) -> bytes | None:
        """The whole (small) body, or None once it passes the limit."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.policy.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    def _decorate(self, send: Send, set_cookie: bool) -> Send:
        policy = self.policy

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _SECURITY_HEADERS:
                    headers.setdefault(name, value)
                if set_cookie and policy.token is not None:
                    headers.append(
                        "set-cookie",
                        f"{policy.cookie_name}={policy.token}; HttpOnly; SameSite=Strict; Path=/",
                    )
            await send(message)

        return wrapped


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _reject(
    send: Send, status: int, message: str, html: bool = False, retry_after: int | None = None
) -> None:
    body = NEEDS_TOKEN_PAGE if html else _error_body(message)
    kind = b"text/html; charset=utf-8" if html else b"application/json"
    headers: Iterable[tuple[bytes, bytes]] = [
        (b"content-type", kind),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *([(b"retry-after", str(retry_after).encode())] if retry_after is not None else []),
        *((name.encode(), value.encode()) for name, value in _SECURITY_HEADERS),
    ]
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    await send({"type": "http.response.body", "body": body})
