"""Notifications through apprise, delivered to a real HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import queue
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import apprise
import pytest
from apprise.plugins.slack import NotifySlack
from apprise.plugins.telegram import NotifyTelegram
from hypothesis import given
from hypothesis import strategies as st

from kilo_loop.notify import NOTIFY_EVENTS, Notifier, mask_target, parse_targets, to_apprise_url

WAIT_S = 10.0  # generous bound for a request to arrive; never a timing assertion
SECRET = "sk-abcdefghijklmnopqrstuvwx0123"


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:  # the decoded JSON body, shape asserted by each test
        return json.loads(self.body)


class Receiver:
    """A ThreadingHTTPServer that records every request; ``hang`` makes it hold each one open."""

    def __init__(self, status: int = 200, hang: bool = False) -> None:
        self.requests: queue.Queue[Received] = queue.Queue()
        self.release = threading.Event()
        self.status = status
        self.hang = hang
        self.answered = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.requests.put(Received(self.command, self.path, headers, body))
                if receiver.hang:
                    receiver.release.wait(30)
                self.send_response(receiver.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")
                receiver.answered += 1

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    def next(self) -> Received:
        return self.requests.get(timeout=WAIT_S)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def hanging_receiver() -> Iterator[Receiver]:
    r = Receiver(hang=True)
    yield r
    r.close()


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fake_redact(text: str) -> str:
    return re.sub(r"sk-[A-Za-z0-9]{10,}", "[REDACTED]", text)


class Log:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.threads: set[int] = set()

    def __call__(self, line: str) -> None:
        self.threads.add(threading.get_ident())
        self.lines.append(line)


# ---------------------------------------------------------------- delivery to a real receiver


async def test_generic_webhook_receives_exact_payload_for_every_event(receiver: Receiver) -> None:
    log = Log()
    notifier = Notifier([f"http://127.0.0.1:{receiver.port}/hook"], fake_redact, log)
    for event in NOTIFY_EVENTS:
        notifier.notify(event, f"title {event}", f"text for {event}")
    await asyncio.wait_for(notifier.aclose(timeout_s=WAIT_S), WAIT_S + 5)

    got = {}
    for _ in NOTIFY_EVENTS:
        request = receiver.next()
        assert request.method == "POST"
        assert request.path == "/hook"
        assert request.headers["content-type"] == "application/json"
        payload = request.json()
        assert isinstance(payload, dict)
        assert set(payload) == {"event", "title", "text", "sentAt"}
        got[payload["event"]] = payload
    assert set(got) == set(NOTIFY_EVENTS)
    for event, payload in got.items():
        assert payload["title"] == f"title {event}"
        assert payload["text"] == f"text for {event}"
        sent_at = datetime.fromisoformat(payload["sentAt"])
        assert payload["sentAt"].endswith("Z") and sent_at.utcoffset() is not None
    assert log.lines == []


async def test_generic_webhook_keeps_query_and_basic_auth(receiver: Receiver) -> None:
    target = f"http://bot:pa55word@127.0.0.1:{receiver.port}/hooks/abc?token=tok-123456&team=x"
    notifier = Notifier([target], fake_redact, Log())
    notifier.notify("run-done", "done", "all stages done")
    request = receiver.next()
    await notifier.aclose()
    path, _, query = request.path.partition("?")
    assert path == "/hooks/abc"
    assert sorted(query.split("&")) == ["team=x", "token=tok-123456"]
    assert request.headers["authorization"] == "Basic Ym90OnBhNTV3b3Jk"  # bot:pa55word
    assert set(request.json()) == {"event", "title", "text", "sentAt"}


async def test_self_hosted_ntfy_posts_plain_http_json_with_title(receiver: Receiver) -> None:
    notifier = Notifier([f"ntfy://127.0.0.1:{receiver.port}/kilo-alerts"], fake_redact, Log())
    notifier.notify("question", "Agent asks", "Which database?")
    request = receiver.next()
    await notifier.aclose()
    # apprise's ntfy plugin publishes JSON to the server root, topic in the body, title as a field.
    assert request.method == "POST"
    assert request.path == "/"
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {"topic": "kilo-alerts", "title": "Agent asks", "message": "Which database?"}


async def test_secret_in_title_and_text_arrives_redacted(receiver: Receiver) -> None:
    notifier = Notifier([f"http://127.0.0.1:{receiver.port}/hook"], fake_redact, Log())
    notifier.notify("guard", f"blocked {SECRET}", f"command used key={SECRET}")
    request = receiver.next()
    await notifier.aclose()
    assert SECRET.encode() not in request.body
    payload = request.json()
    assert payload == {
        "event": "guard",
        "title": "blocked [REDACTED]",
        "text": "command used key=[REDACTED]",
        "sentAt": payload["sentAt"],
    }


async def test_markup_characters_arrive_verbatim(receiver: Receiver) -> None:
    notifier = Notifier(
        [f"http://127.0.0.1:{receiver.port}/hook", f"ntfy://127.0.0.1:{receiver.port}/t"], fake_redact, Log()
    )
    notifier.notify("verify-failed", "assert a < b", "x & y <tag> *bold* _it_")
    bodies = sorted((receiver.next().json() for _ in range(2)), key=len)
    await notifier.aclose()
    assert bodies[0] == {"topic": "t", "title": "assert a < b", "message": "x & y <tag> *bold* _it_"}
    assert (bodies[1]["title"], bodies[1]["text"]) == ("assert a < b", "x & y <tag> *bold* _it_")


async def test_empty_text_falls_back_to_title(receiver: Receiver) -> None:
    notifier = Notifier([f"http://127.0.0.1:{receiver.port}/hook"], fake_redact, Log())
    notifier.notify("stalled", "no progress for 3 iterations", "")
    request = receiver.next()
    await notifier.aclose()
    payload = request.json()
    assert isinstance(payload, dict)
    assert payload["text"] == payload["title"] == "no progress for 3 iterations"


async def test_every_target_gets_the_event(receiver: Receiver) -> None:
    targets = f"http://127.0.0.1:{receiver.port}/a, ntfy://127.0.0.1:{receiver.port}/b"
    notifier = Notifier(parse_targets(targets), fake_redact, Log())
    notifier.notify("budget", "budget reached", "cost limit hit")
    paths = sorted(receiver.next().path for _ in range(2))
    await notifier.aclose()
    assert paths == ["/", "/a"]


def test_notify_works_without_a_running_loop(receiver: Receiver) -> None:
    log = Log()
    notifier = Notifier([f"http://127.0.0.1:{receiver.port}/hook"], fake_redact, log)
    notifier.notify("model-retry", "retrying", "429 from provider")
    assert receiver.next().json()["event"] == "model-retry"
    asyncio.run(notifier.aclose())


# ---------------------------------------------------------------- failures never hold the loop


async def test_notify_returns_before_the_target_answers(hanging_receiver: Receiver) -> None:
    log = Log()
    # A per-send timeout far longer than the receiver's hang: a blocking notify() would see an answer.
    notifier = Notifier([f"http://127.0.0.1:{hanging_receiver.port}/hook"], fake_redact, log, timeout_s=60)
    notifier.notify("question", "Agent asks", "Proceed?")
    assert hanging_receiver.answered == 0
    hanging_receiver.next()  # the request is in flight, held open by the receiver
    assert hanging_receiver.answered == 0
    hanging_receiver.release.set()
    await asyncio.wait_for(notifier.aclose(timeout_s=WAIT_S), WAIT_S + 5)
    assert hanging_receiver.answered == 1
    assert log.lines == []


async def test_aclose_is_bounded_by_its_timeout(hanging_receiver: Receiver) -> None:
    log = Log()
    notifier = Notifier([f"http://127.0.0.1:{hanging_receiver.port}/hook"], fake_redact, log, timeout_s=60)
    notifier.notify("run-done", "done", "ok")
    hanging_receiver.next()
    # the receiver holds the request for 30 s and apprise would wait 60 s; aclose gives up after 1 s
    await asyncio.wait_for(notifier.aclose(timeout_s=1), 5)
    assert hanging_receiver.answered == 0
    assert log.lines == ["notify: 1 notification(s) still in flight after 1s; not waiting"]


async def test_dead_and_hanging_targets_fail_within_timeout_and_log_masked(
    hanging_receiver: Receiver,
) -> None:
    log = Log()
    token = "T0KENabcdef123456"
    hang_target = f"http://127.0.0.1:{hanging_receiver.port}/hook/{token}?key={token}"
    dead_target = f"https://user:{token}@127.0.0.1:{dead_port()}/hook/{token}"
    notifier = Notifier([hang_target, dead_target], fake_redact, log, timeout_s=1)

    notifier.notify("verify-failed", "verify failed", "pytest exited 1")
    assert hanging_receiver.next().path.startswith("/hook/")
    await asyncio.wait_for(notifier.aclose(timeout_s=WAIT_S), WAIT_S + 5)
    # both sends ended on their own per-send timeout, while the receiver still held the request
    assert hanging_receiver.answered == 0
    failures = [line for line in log.lines if "failed" in line]
    assert len(failures) == 2, log.lines

    assert all(token not in line for line in log.lines)
    joined = "\n".join(failures)
    assert f"verify-failed to http://127.0.0.1:{hanging_receiver.port}/… failed" in joined
    assert "verify-failed to https://127.0.0.1:" in joined
    # failure lines are delivered on the loop's thread, not on a worker thread
    assert log.threads == {threading.get_ident()}


async def test_http_error_is_logged_with_masked_target() -> None:
    failing = Receiver(status=500)
    try:
        log = Log()
        notifier = Notifier([f"http://127.0.0.1:{failing.port}/hook/s3cr3tpath"], fake_redact, log)
        notifier.notify("run-done", "done", "ok")
        await asyncio.wait_for(notifier.aclose(timeout_s=WAIT_S), WAIT_S + 5)
    finally:
        failing.close()
    assert len(log.lines) == 1
    line = log.lines[0]
    assert line.startswith(f"notify: run-done to http://127.0.0.1:{failing.port}/… failed: FAILURE")
    assert "500" in line
    assert "s3cr3tpath" not in line


async def test_notify_after_aclose_is_dropped_and_logged(receiver: Receiver) -> None:
    log = Log()
    notifier = Notifier([f"http://127.0.0.1:{receiver.port}/hook"], fake_redact, log)
    await notifier.aclose()
    notifier.notify("run-done", "done", "ok")
    assert log.lines == ["notify: run-done dropped, the notifier is closed"]
    assert receiver.requests.empty()


def test_unknown_event_is_rejected() -> None:
    notifier = Notifier(["http://127.0.0.1:9/hook"], fake_redact, Log())
    with pytest.raises(ValueError, match="unknown notify event 'done'"):
        notifier.notify("done", "t", "x")


def test_no_targets_is_disabled_and_silent() -> None:
    notifier = Notifier([], fake_redact, Log())
    assert not notifier.enabled
    notifier.notify("run-done", "t", "x")
    assert Notifier(["http://127.0.0.1:9/x"], fake_redact, Log()).enabled


# ---------------------------------------------------------------- target mapping (pure)

SLACK = "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdEFGHijklMNOPqrstUVWX"
TELEGRAM = "telegram://123456789:AAF-abc_DEFghiJKLmnoPQRstuVWXyz0123/-1001234567890"


def test_slack_webhook_maps_to_apprise_slack() -> None:
    url = to_apprise_url(SLACK)
    assert url == "slack://T0123ABCD/B0456EFGH/abcdEFGHijklMNOPqrstUVWX?footer=no"
    plugin = apprise.Apprise.instantiate(url)
    assert isinstance(plugin, NotifySlack)
    # the webhook's three tokens survive the mapping; no "Apprise" footer
    assert (plugin.token_a, plugin.token_b, plugin.token_c) == (
        "T0123ABCD",
        "B0456EFGH",
        "abcdEFGHijklMNOPqrstUVWX",
    )
    assert plugin.include_footer is False


def test_telegram_maps_to_apprise_tgram() -> None:
    url = to_apprise_url(TELEGRAM)
    assert url == "tgram://123456789:AAF-abc_DEFghiJKLmnoPQRstuVWXyz0123/-1001234567890"
    plugin = apprise.Apprise.instantiate(url)
    assert isinstance(plugin, NotifyTelegram)
    assert plugin.bot_token == "123456789:AAF-abc_DEFghiJKLmnoPQRstuVWXyz0123"
    assert [str(chat_id) for chat_id, _ in plugin.targets] == ["-1001234567890"]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("https://ntfy.sh/kilo-alerts", "ntfys://ntfy.sh/kilo-alerts"),
        ("ntfy://ntfy.sh/kilo-alerts", "ntfys://ntfy.sh/kilo-alerts"),
        ("ntfy://127.0.0.1:8080/kilo", "ntfy://127.0.0.1:8080/kilo"),
        ("ntfys://ntfy.example.com/kilo", "ntfys://ntfy.example.com/kilo"),
        ("ntfy://tk_abc123@ntfy.example.com/kilo", "ntfy://tk_abc123@ntfy.example.com/kilo"),
        ("https://example.com/hook", "jsons://example.com/hook?:version=&:attachments=&:type=&:message=text"),
        ("http://10.0.0.2:9000", "json://10.0.0.2:9000?:version=&:attachments=&:type=&:message=text"),
        (
            "https://example.com/h?token=abc",
            "jsons://example.com/h?:version=&:attachments=&:type=&:message=text&-token=abc",
        ),
    ],
)
def test_url_forms_map_to_apprise(target: str, expected: str) -> None:
    assert to_apprise_url(target) == expected
    assert apprise.Apprise.instantiate(expected) is not None


def test_ntfy_scheme_is_plain_http_in_apprise() -> None:
    plugin = apprise.Apprise.instantiate(to_apprise_url("ntfy://127.0.0.1:8080/kilo"))
    assert plugin is not None and plugin.secure is False
    plugin = apprise.Apprise.instantiate(to_apprise_url("https://ntfy.sh/kilo"))
    assert plugin is not None and plugin.secure is True


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("garbage", "unsupported form"),
        ("ftp://user:hunter2hunter2@files.example.com/x", "unsupported form"),
        ("telegram://not-a-token/123", "expected telegram://"),
        ("telegram://123456:hunter2hunter2", "expected telegram://"),
        ("https://hooks.slack.com/services/T1/hunter2hunter2", "Slack incoming webhook"),
        ("ntfy://ntfy.example.com/", "ntfy topic"),
        ("ntfy://ntfy.example.com/bad%20topic", "ntfy topic"),
        ("https:///hunter2hunter2", "invalid host"),
        ("http://exa_mple!.com/hunter2hunter2", "invalid host"),
    ],
)
def test_invalid_targets_fail_at_construction_without_leaking(target: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as excinfo:
        Notifier([target], fake_redact, Log())
    assert "hunter2" not in str(excinfo.value)
    assert mask_target(target) in str(excinfo.value)


def test_invalid_timeout_is_rejected() -> None:
    with pytest.raises(ValueError, match="positive"):
        Notifier(["http://127.0.0.1:9/x"], fake_redact, Log(), timeout_s=0)


def test_parse_targets() -> None:
    assert parse_targets(None) == []
    assert parse_targets("") == []
    assert parse_targets("a, b c,,a") == ["a", "b", "c"]
    assert parse_targets(["a b", "c,d", "a"]) == ["a", "b", "c", "d"]
    with pytest.raises(ValueError, match="must be strings"):
        parse_targets(["a", 3])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("target", "masked"),
    [
        (SLACK, "https://hooks.slack.com/…"),
        (TELEGRAM, "telegram://…"),
        ("https://ntfy.sh/kilo-alerts", "https://ntfy.sh/…"),
        ("ntfy://user:pw@127.0.0.1:8080/kilo", "ntfy://127.0.0.1:8080/…"),
        ("https://example.com", "https://example.com/…"),
        ("https://example.com?token=x", "https://example.com/…"),
        ("garbage", "…"),
        ("discord://webhook_id/webhook_token", "discord://…"),
    ],
)
def test_mask_target_examples(target: str, masked: str) -> None:
    assert mask_target(target) == masked


# "Zq9" keeps a generated token from coinciding with the visible parts (scheme, host, "…").
_TOKEN = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", min_size=5, max_size=40
).map(lambda s: "Zq9" + s)


@given(token=_TOKEN)
def test_mask_target_never_shows_the_token(token: str) -> None:
    forms = [
        f"https://hooks.slack.com/services/T{token}/B{token}/{token}",
        f"https://ntfy.sh/{token}",
        f"ntfy://127.0.0.1:8080/{token}",
        f"ntfy://{token}@ntfy.example.com/topic",
        f"telegram://123456:{token}/-100123",
        f"https://example.com/hook/{token}",
        f"https://example.com/hook?token={token}",
        f"http://user:{token}@127.0.0.1:9000/hook",
        f"{token}",
    ]
    for target in forms:
        assert token not in mask_target(target), target
