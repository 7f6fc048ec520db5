"""Out-of-band notifications (seed "Notifications"), delivered through apprise.

Target forms accepted by ``--notify`` and mapped to apprise URLs by :func:`to_apprise_url`:

- ``https://hooks.slack.com/services/T…/B…/…``  -> ``slack://T…/B…/…`` (incoming webhook)
- ``https://ntfy.sh/<topic>``                   -> ``ntfys://ntfy.sh/<topic>`` (https)
- ``ntfy://<host>[:port]/<topic>``               -> ``ntfy://…`` (self-hosted, plain http;
  ``ntfys://`` is accepted for https, and ``ntfy://ntfy.sh/<topic>`` goes to the cloud over https)
- ``telegram://<botToken>/<chatId>``             -> ``tgram://<botToken>/<chatId>``
- any other ``https://`` / ``http://`` URL        -> apprise ``jsons://`` / ``json://``

Generic webhooks receive exactly ``{title, text, event, sentAt}``.  apprise's JSON notifier
posts ``{version, title, message, attachments, type}`` but lets URL arguments prefixed with ``:``
rename (``:message=text``), drop (``:version=``) or add (``:event=question``) payload keys, so
the payload is shaped through apprise's own URL syntax rather than by a custom plugin; ``event``
and ``sentAt`` change per message, so each send instantiates the target from a fresh URL.  The
target's own query arguments are forwarded as apprise ``-name=value`` GET parameters and
its userinfo becomes HTTP basic auth, as apprise's JSON notifier does.

Delivery never slows the loop: :meth:`Notifier.notify` hands each (target, message) to a daemon
thread that runs apprise's blocking ``notify`` with connect and read timeouts (apprise's ``cto`` /
``rto``) of ``timeout_s``, and returns at once.  A daemon thread (rather than ``asyncio.to_thread``
or apprise's ``async_notify``, whose worker pools are joined at interpreter exit) works with or
without a running event loop and never holds up the process exit.  When ``notify`` is called
inside a running loop the caller's ``log`` runs on that loop's thread, otherwise on the worker
thread.  :meth:`Notifier.aclose` waits for the sends still in flight, at most ``timeout_s``; a send
it gives up on still logs its failure later (from the worker thread once the loop is gone).

Targets hold tokens: they only ever appear in messages through :func:`mask_target`.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import apprise
from apprise import NotifyFormat, NotifyType

from kilo_loop.run.events import now_iso

NOTIFY_EVENTS: tuple[str, ...] = (
    "question",
    "verify-failed",
    "guard",
    "budget",
    "stalled",
    "run-done",
    "model-retry",
)

# Colours the Slack attachment / picks the ntfy icon; the generic JSON payload drops it.
_EVENT_TYPES: dict[str, NotifyType] = {
    "question": NotifyType.INFO,
    "verify-failed": NotifyType.FAILURE,
    "guard": NotifyType.WARNING,
    "budget": NotifyType.WARNING,
    "stalled": NotifyType.WARNING,
    "run-done": NotifyType.SUCCESS,
    "model-retry": NotifyType.WARNING,
}

# Sends in flight at once; beyond this a notification is dropped (and logged), never queued.
_MAX_IN_FLIGHT = 64

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]{0,15})://")
_HOSTPORT_RE = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$")
_SLACK_HOOK_RE = re.compile(r"^/services/([A-Za-z0-9]+)/([A-Za-z0-9]+)/([A-Za-z0-9]+)/?$")
_TELEGRAM_RE = re.compile(r"^telegram://(?:bot)?(\d+:[A-Za-z0-9_-]+)/((?:-?\d+|@\w+)(?:/(?:-?\d+|@\w+))*)/?$")
_NTFY_TOPIC_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NTFY_CLOUD_HOST = "ntfy.sh"
# Schemes whose host is an address, not a credential, so mask_target may show it.
_HOST_VISIBLE_SCHEMES = frozenset({"http", "https", "ntfy", "ntfys"})
# apprise JSON payload shaping: drop version/attachments/type, rename message -> text.
_JSON_PAYLOAD_ARGS = ":version=&:attachments=&:type=&:message=text"
_SECRET_PIECE_MIN = 4


# ---------------------------------------------------------------- targets (pure)


def parse_targets(value: str | Sequence[str] | None) -> list[str]:
    """Split ``--notify`` / config ``"notify"`` into targets (space or comma separated), deduplicated."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    targets: list[str] = []
    for item in items:
        if not isinstance(item, str):
            # ValueError, not TypeError: this is bad user config, reported like any other bad target.
            raise ValueError(f"notify targets must be strings, got {type(item).__name__}")  # noqa: TRY004
        for target in re.split(r"[\s,]+", item):
            if target and target not in targets:
                targets.append(target)
    return targets


def mask_target(target: str) -> str:
    """``scheme://host/…`` for address-like targets, ``scheme://…`` otherwise; never the token part."""
    match = _SCHEME_RE.match(target.strip())
    if match is None:
        return "…"
    scheme = match.group(1).lower()
    if scheme not in _HOST_VISIBLE_SCHEMES:
        return f"{scheme}://…"
    hostport = _hostport(target.strip()[match.end() :])
    return f"{scheme}://{hostport}/…" if hostport else f"{scheme}://…"


def _hostport(rest: str) -> str | None:
    """The ``host[:port]`` of a URL remainder (after ``scheme://``), without userinfo; None if odd."""
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
    hostport = netloc.rpartition("@")[2].lower()
    return hostport if _HOSTPORT_RE.match(hostport) else None


def to_apprise_url(target: str) -> str:
    """The apprise URL for one ``--notify`` target; ``ValueError`` (masked) when it is not a known form."""
    target = target.strip()
    match = _SCHEME_RE.match(target)
    scheme = match.group(1).lower() if match else ""
    if scheme == "telegram":
        return _telegram_url(target)
    if scheme not in _HOST_VISIBLE_SCHEMES:
        raise ValueError(
            f"notify target {mask_target(target)}: unsupported form (expected a Slack webhook, "
            "https://ntfy.sh/<topic>, ntfy://<host>/<topic>, telegram://<botToken>/<chatId> "
            "or an http(s):// webhook URL)"
        )
    if _hostport(target[len(scheme) + 3 :]) is None:
        raise ValueError(f"notify target {mask_target(target)}: missing or invalid host")
    parts = urlsplit(target)
    host = parts.hostname or ""
    if host == "hooks.slack.com":
        return _slack_url(target, parts.path, parts.query)
    if scheme in ("ntfy", "ntfys") or host == _NTFY_CLOUD_HOST:
        return _ntfy_url(target, scheme, host, parts.netloc, parts.path, parts.query)
    forwarded = "&".join(f"-{arg}" for arg in parts.query.split("&") if arg)
    query = "&".join(x for x in (_JSON_PAYLOAD_ARGS, forwarded) if x)
    json_scheme = "jsons" if scheme == "https" else "json"
    return f"{json_scheme}://{parts.netloc}{parts.path}?{query}"


def _telegram_url(target: str) -> str:
    match = _TELEGRAM_RE.match(target)
    if match is None:
        raise ValueError(
            f"notify target {mask_target(target)}: expected telegram://<botToken>/<chatId> "
            "(token like 123456:ABC-def, numeric or @channel chat id)"
        )
    return f"tgram://{match.group(1)}/{match.group(2)}"


def _slack_url(target: str, path: str, query: str) -> str:
    match = _SLACK_HOOK_RE.match(path)
    if match is None:
        raise ValueError(
            f"notify target {mask_target(target)}: expected a Slack incoming webhook "
            "https://hooks.slack.com/services/T…/B…/…"
        )
    # footer=no: no "Apprise" footer under kilo-loop's messages.
    url = "slack://{}/{}/{}?footer=no".format(*match.groups())
    return _with_args(url, query) if query else url


def _ntfy_url(target: str, scheme: str, host: str, netloc: str, path: str, query: str) -> str:
    topics = [segment for segment in path.split("/") if segment]
    if not topics or not all(_NTFY_TOPIC_RE.match(topic) for topic in topics):
        raise ValueError(
            f"notify target {mask_target(target)}: expected an ntfy topic path /<topic> "
            "(letters, digits, _ and -, at most 64)"
        )
    # apprise's ntfy:// is plain http (self-hosted), ntfys:// is https; ntfy.sh itself is always https.
    ntfy_scheme = "ntfy" if scheme == "ntfy" and host != _NTFY_CLOUD_HOST else "ntfys"
    return _join_query(f"{ntfy_scheme}://{netloc}/" + "/".join(topics), query)


def _join_query(url: str, query: str) -> str:
    return f"{url}?{query}" if query else url


def _with_args(url: str, args: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{args}"


def _secret_pieces(target: str) -> tuple[str, ...]:
    """Substrings of a target that may be credentials (everything past a visible host), longest first."""
    match = _SCHEME_RE.match(target)
    rest = target[match.end() :] if match else target
    if mask_target(target).endswith("://…"):
        secret_region = rest
    else:
        netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
        secret_region = f"{netloc.rpartition('@')[0]}/{rest[len(netloc) :]}"
    pieces = {p for p in re.split(r"[/?&=:@#;,]+", secret_region) if len(p) >= _SECRET_PIECE_MIN}
    return tuple(sorted(pieces, key=len, reverse=True))


def _scrub(text: str, secrets: Sequence[str]) -> str:
    for piece in secrets:
        text = text.replace(piece, "…")
    return text


# ---------------------------------------------------------------- delivery


@dataclass(frozen=True)
class _Message:
    event: str
    title: str
    text: str
    sent_at: str


@dataclass(frozen=True)
class _Route:
    masked: str
    url: str
    generic_json: bool
    secrets: tuple[str, ...]

    def url_for(self, message: _Message) -> str:
        if not self.generic_json:
            return self.url
        extras = f":event={quote(message.event, safe='')}&:sentAt={quote(message.sent_at, safe='')}"
        return _with_args(self.url, extras)


def _build_route(target: str, timeout_s: float) -> _Route:
    masked = mask_target(target)
    url = _with_args(to_apprise_url(target), f"cto={timeout_s:g}&rto={timeout_s:g}")
    if apprise.Apprise.instantiate(url) is None:
        raise ValueError(f"notify target {masked}: apprise does not accept it")
    generic = url.startswith(("json://", "jsons://"))
    return _Route(masked=masked, url=url, generic_json=generic, secrets=_secret_pieces(target))


def _failure_detail(result: apprise.AppriseResult) -> str:
    """Status, time taken and apprise's last warning/error, e.g. ``FAILURE after 1.0s: A Connection …``."""
    messages = [entry.message for entry in result.logs() if entry.level in ("WARNING", "ERROR", "CRITICAL")]
    status = f"{result.status.name} after {result.elapsed:.1f}s"
    return f"{status}: {messages[-1]}" if messages else status


class Notifier:
    """Sends run events to the configured targets without ever blocking or failing the loop.

    ``redact`` is applied to every title and text before it leaves the process.  ``log`` receives
    one line per failed or dropped notification, naming the target only as :func:`mask_target`.
    ``notify`` may be called with or without a running asyncio loop (see the module docstring).
    """

    def __init__(
        self,
        targets: Sequence[str],
        redact: Callable[[str], str],
        log: Callable[[str], None],
        timeout_s: float = 10.0,
    ) -> None:
        if not math.isfinite(timeout_s) or timeout_s <= 0:
            raise ValueError(f"notify timeout must be a positive number of seconds, got {timeout_s!r}")
        self._redact = redact
        self._log = log
        # service_timeout=0: apprise sends in the calling (daemon) thread instead of handing the send to
        # its own non-daemon pool, which would hold up interpreter exit; cto/rto bound each request.
        self._asset = apprise.AppriseAsset(service_timeout=0)
        self._routes = tuple(_build_route(target, timeout_s) for target in parse_targets(targets))
        self._pending: set[Future[None]] = set()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def enabled(self) -> bool:
        return bool(self._routes)

    def notify(self, event: str, title: str, text: str) -> None:
        """Queue ``event`` for every target and return immediately."""
        if event not in NOTIFY_EVENTS:
            raise ValueError(f"unknown notify event {event!r}; expected one of {', '.join(NOTIFY_EVENTS)}")
        if not self._routes:
            return
        if self._closed:
            self._log(f"notify: {event} dropped, the notifier is closed")
            return
        title = self._redact(title)
        # apprise refuses an empty body; the title then stands in for the text.
        message = _Message(event, title, self._redact(text) or title, now_iso())
        loop = _running_loop()
        for route in self._routes:
            self._spawn(route, message, loop)

    async def aclose(self, timeout_s: float = 10.0) -> None:
        """Stop accepting notifications and wait up to ``timeout_s`` for the ones in flight."""
        self._closed = True
        with self._lock:
            pending = list(self._pending)
        if not pending:
            return
        _, not_done = await asyncio.wait([asyncio.wrap_future(f) for f in pending], timeout=timeout_s)
        if not_done:
            self._log(
                f"notify: {len(not_done)} notification(s) still in flight after {timeout_s:g}s; not waiting"
            )

    def _spawn(self, route: _Route, message: _Message, loop: asyncio.AbstractEventLoop | None) -> None:
        done: Future[None] = Future()
        with self._lock:
            admitted = len(self._pending) < _MAX_IN_FLIGHT
            if admitted:
                self._pending.add(done)
        if not admitted:
            self._log(f"notify: {message.event} to {route.masked} dropped, {_MAX_IN_FLIGHT} sends in flight")
            return
        worker = threading.Thread(
            target=self._run, args=(route, message, loop, done), name="kilo-loop-notify", daemon=True
        )
        worker.start()

    def _run(
        self, route: _Route, message: _Message, loop: asyncio.AbstractEventLoop | None, done: Future[None]
    ) -> None:
        try:
            detail = self._deliver(route, message)
        except Exception as exc:  # noqa: BLE001 - a plugin bug must be reported, not kill the thread
            detail = f"{type(exc).__name__}: {exc}"
        try:
            if detail is not None:
                self._report(loop, route, message.event, detail)
        finally:
            with self._lock:
                self._pending.discard(done)
            done.set_result(None)

    def _deliver(self, route: _Route, message: _Message) -> str | None:
        """Send one message to one target (blocking); the failure detail, or None on success."""
        app = apprise.Apprise(asset=self._asset)
        if not app.add(route.url_for(message)):
            return "apprise rejected the target URL"
        result = app.notify(
            body=message.text,
            title=message.title,
            notify_type=_EVENT_TYPES[message.event],
            # Declared plain text so apprise escapes it for HTML targets (Telegram's parse_mode=HTML).
            body_format=NotifyFormat.TEXT,
        )
        return None if result else _failure_detail(result)

    def _report(self, loop: asyncio.AbstractEventLoop | None, route: _Route, event: str, detail: str) -> None:
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._log_failure, route, event, detail)
                return
            except RuntimeError:  # the loop has closed since notify(); log from this thread instead
                pass
        self._log_failure(route, event, detail)

    def _log_failure(self, route: _Route, event: str, detail: str) -> None:
        safe_detail = self._redact(_scrub(detail, route.secrets))
        self._log(f"notify: {event} to {route.masked} failed: {safe_detail}")


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
