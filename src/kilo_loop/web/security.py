"""The dashboard's front door, as one ASGI middleware in front of every route.

In order: the Host header must name this server (no DNS rebinding); on a non-loopback bind
the request must carry the session token (`?token=` once, then an HttpOnly SameSite=Strict
cookie, or `Authorization: Bearer`); a state-changing request must come from this origin and
carry JSON; a body may not exceed the size limit. Every response gets headers that keep the
page from being framed, sniffed, or leaking the URL (and its token) as a referrer.
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
NEEDS_TOKEN = (
    "this dashboard needs its token: open the URL with ?token=… that kilo-loop printed in the terminal"
)
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
    token: str | None = None  # None: loopback bind, no token needed
    cookie_name: str = "kilo_loop_token"
    max_body: int = MAX_BODY_BYTES

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


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        problem, set_cookie = self._check(scope, headers)
        if problem is not None:
            await _reject(send, *problem)
            return
        method = scope["method"]
        if method not in SAFE_METHODS:
            body = await self._read_body(headers, receive)
            if body is None:
                await _reject(send, 413, f"request body over {self.policy.max_body} bytes")
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, self._decorate(send, set_cookie))

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


async def _reject(send: Send, status: int, message: str) -> None:
    body = _error_body(message)
    headers: Iterable[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((name.encode(), value.encode()) for name, value in _SECURITY_HEADERS),
    ]
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    await send({"type": "http.response.body", "body": body})
