"""A scripted OpenAI-compatible chat-completions server for driving the real agent CLIs offline.

The server answers `POST /v1/chat/completions` (streaming SSE) from a *script*: a list of turns,
each consumed by one request in order. A turn is text (`say`), one or more tool calls (`call`,
`calls`), an HTTP failure (`fail`) or a dropped connection (`drop_connection`); `hold` keeps any
of these back until a timeout passes or the test calls `release()`. Several scripts
can be keyed by a marker string; a request takes the script whose marker occurs in its latest
user message, else the default script. Requests without tools (the CLI titling a session) get a
short title and consume nothing. When a script runs out, the server says "done".

Every request is recorded, so tests can assert what the model was shown.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal, Self

MODEL_ID = "fake"
PROVIDER_ID = "local"
TITLE_TEXT = "Scripted session"
DONE_TEXT = "done"

Runtime = Literal["kilo", "opencode"]


# --------------------------------------------------------------------------- script DSL


@dataclass(frozen=True)
class Say:
    """An assistant text turn that ends with `finish_reason: stop`."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Calls:
    """An assistant turn of one or more tool calls that ends with `finish_reason: tool_calls`."""

    calls: tuple[ToolCall, ...]
    text: str = ""


@dataclass(frozen=True)
class Fail:
    """An HTTP error response instead of a stream."""

    status: int
    message: str


@dataclass(frozen=True)
class Drop:
    """Close the connection without answering."""


Answer = Say | Calls | Fail | Drop


@dataclass(frozen=True)
class Hold:
    """Keep the reply back: answer with `then` after `seconds`, or as soon as the test releases it."""

    seconds: float
    then: Answer


Turn = Answer | Hold


def say(text: str) -> Say:
    return Say(text)


def call(name: str, arguments: Mapping[str, Any], *, text: str = "") -> Calls:
    """One tool call, optionally preceded by some assistant text in the same turn."""
    return Calls((ToolCall(name, dict(arguments)),), text)


def calls(*turns: Calls) -> Calls:
    """Several tool calls in one assistant turn: `calls(call("read", …), call("bash", …))`."""
    if not turns:
        raise ValueError("calls() needs at least one call(...)")
    return Calls(tuple(c for turn in turns for c in turn.calls), "".join(t.text for t in turns))


def fail(status: int = 500, message: str = "scripted failure") -> Fail:
    if not 400 <= status <= 599:
        raise ValueError(f"fail() needs an HTTP error status (400-599), got {status}")
    return Fail(status, message)


def drop_connection() -> Drop:
    return Drop()


def hold(seconds: float, then: Answer | None = None) -> Hold:
    """A turn whose reply (`then`, by default "done") waits `seconds` or until `FakeProvider.release()`."""
    if not seconds > 0:
        raise ValueError(f"hold() needs a positive number of seconds, got {seconds}")
    return Hold(seconds, Say(DONE_TEXT) if then is None else then)


def unheld(turn: Turn) -> Answer:
    """The answer a turn finally gives (a held turn's `then`)."""
    return turn.then if isinstance(turn, Hold) else turn


# --------------------------------------------------------------------------- SSE encoding (pure)


def _chunk(completion_id: str, choices: list[dict[str, Any]], **extra: Any) -> bytes:
    payload = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL_ID,
        "choices": choices,
        **extra,
    }
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def _delta(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish_reason}


def completion_text(turn: Say | Calls) -> str:
    """What the model 'wrote' in a turn, for counting completion tokens."""
    if isinstance(turn, Say):
        return turn.text
    return turn.text + "".join(c.name + json.dumps(c.arguments) for c in turn.calls)


def usage_for(request_body: Mapping[str, Any], turn: Say | Calls) -> dict[str, int]:
    """Deterministic token counts: about four characters a token."""
    prompt = max(1, len(json.dumps(request_body.get("messages", []))) // 4)
    completion = max(1, len(completion_text(turn)) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def sse_chunks(turn: Say | Calls, completion_id: str, usage: Mapping[str, int]) -> Iterator[bytes]:
    """The SSE byte chunks of one streamed assistant turn, ending with usage and `[DONE]`."""
    yield _chunk(completion_id, [_delta({"role": "assistant", "content": ""})])
    if turn.text:
        # Two pieces, so clients really have to concatenate deltas.
        half = len(turn.text) // 2
        for piece in (turn.text[:half], turn.text[half:]):
            if piece:
                yield _chunk(completion_id, [_delta({"content": piece})])
    if isinstance(turn, Calls):
        for index, tool_call in enumerate(turn.calls):
            head = {"index": index, "id": f"{completion_id}_call_{index}", "type": "function",
                    "function": {"name": tool_call.name, "arguments": ""}}
            arguments = {"index": index, "function": {"arguments": json.dumps(tool_call.arguments)}}
            yield _chunk(completion_id, [_delta({"tool_calls": [head]})])
            yield _chunk(completion_id, [_delta({"tool_calls": [arguments]})])
        yield _chunk(completion_id, [_delta({}, "tool_calls")])
    else:
        yield _chunk(completion_id, [_delta({}, "stop")])
    yield _chunk(completion_id, [], usage=dict(usage))
    yield b"data: [DONE]\n\n"


# --------------------------------------------------------------------------- request inspection (pure)


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a chat message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def user_texts(body: Mapping[str, Any]) -> list[str]:
    messages = body.get("messages", [])
    return [message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]


def wants_tools(body: Mapping[str, Any]) -> bool:
    return bool(body.get("tools"))


def is_chat_path(path: str) -> bool:
    return path.split("?", 1)[0].rstrip("/").endswith("/chat/completions")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it, and what it answered."""

    method: str
    path: str
    body: dict[str, Any]  # {} for GETs and bodies that were not a JSON object
    turn: Turn | None  # the scripted turn consumed, None when the script was not involved
    reply: Turn | None  # what a chat request was answered with (a title for tool-less requests; may be a Hold)
    usage: dict[str, int] | None  # the usage chunk streamed back, when a stream was sent
    authorization: str = ""  # the Authorization header the client sent (provider-injection tests)

    @property
    def is_chat(self) -> bool:
        return self.method == "POST" and is_chat_path(self.path)

    @property
    def user_texts(self) -> list[str]:
        return user_texts(self.body)

    @property
    def all_text(self) -> str:
        """Every message's text joined, for 'did the model see X' assertions."""
        return "\n".join(message_text(m) for m in self.body.get("messages", []) if isinstance(m, dict))


# --------------------------------------------------------------------------- scripts and server


@dataclass
class _Scripts:
    default: deque[Turn]
    keyed: dict[str, deque[Turn]] = field(default_factory=dict)

    def next_turn(self, body: Mapping[str, Any]) -> Turn:
        latest = user_texts(body)[-1:] or [""]
        queue = next((q for marker, q in self.keyed.items() if marker in latest[0]), self.default)
        return queue.popleft() if queue else Say(DONE_TEXT)


class FakeProvider:
    """The scripted server. Use as a context manager, or call `start()` / `stop()`."""

    def __init__(self, script: Iterable[Turn] = (), *, scripts: Mapping[str, Iterable[Turn]] | None = None) -> None:
        self._lock = threading.Lock()
        self._scripts = _Scripts(deque(script), {k: deque(v) for k, v in (scripts or {}).items()})
        self._requests: list[RecordedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._completions = 0
        self._released = threading.Event()
        self._holding = threading.Condition(self._lock)
        self._held = 0  # requests whose held reply was reached (still waiting or not)

    # -- scripting -------------------------------------------------------------------------

    def add_turns(self, *turns: Turn, marker: str | None = None) -> None:
        """Append turns to the default script, or to the script selected by `marker`."""
        with self._lock:
            if marker is None:
                self._scripts.default.extend(turns)
            else:
                self._scripts.keyed.setdefault(marker, deque()).extend(turns)

    def remaining(self, marker: str | None = None) -> int:
        with self._lock:
            queue = self._scripts.default if marker is None else self._scripts.keyed.get(marker, deque())
            return len(queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Chat requests that offered tools (the agent's own turns, not titling)."""
        return [r for r in self.requests if r.is_chat and wants_tools(r.body)]

    # -- holding -----------------------------------------------------------------------------

    @property
    def held(self) -> int:
        """How many requests have reached a `hold` turn so far."""
        with self._lock:
            return self._held

    def wait_for_hold(self, timeout: float) -> bool:
        """Block until some request is being held back; False when `timeout` passes first."""
        with self._holding:
            return self._holding.wait_for(lambda: self._held > 0, timeout)

    def release(self) -> None:
        """Let every held reply (now and later) go out at once."""
        self._released.set()

    def _wait_held(self, turn: Hold) -> None:
        with self._holding:
            self._held += 1
            self._holding.notify_all()
        self._released.wait(turn.seconds)

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeProvider is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError("FakeProvider already started")
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-provider", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self.release()  # no handler thread stays parked on a hold
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering (called from handler threads) -------------------------------------------

    def _record(self, method: str, path: str, body: dict[str, Any] | None,
                authorization: str = "") -> tuple[RecordedRequest, str]:
        """Pick the reply for one request and record both; returns the record and a completion id."""
        with self._lock:
            self._completions += 1
            turn: Turn | None = None
            reply: Turn | None = None
            if method == "POST" and body is not None and is_chat_path(path):
                turn = self._scripts.next_turn(body) if wants_tools(body) else None
                reply = Say(TITLE_TEXT) if turn is None else turn
            answer = None if reply is None else unheld(reply)
            usage = usage_for(body or {}, answer) if isinstance(answer, Say | Calls) else None
            record = RecordedRequest(method, path, body or {}, turn, reply, usage, authorization)
            self._requests.append(record)
            return record, f"chatcmpl-{self._completions}"


def _handler_for(provider: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = provider

    return Handler


class _Handler(BaseHTTPRequestHandler):
    owner: FakeProvider
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep pytest output clean

    def do_GET(self) -> None:
        self.owner._record("GET", self.path, None)
        if self.path.split("?", 1)[0].rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "fake"}]})
        else:
            self._send_error(404, f"no route {self.path}", "not_found")

    def do_POST(self) -> None:
        body = self._read_json()
        record, completion_id = self.owner._record("POST", self.path, body,
                                                   self.headers.get("Authorization") or "")
        reply = record.reply
        if isinstance(reply, Hold):
            self.owner._wait_held(reply)
            reply = reply.then
        try:
            self._answer(body, reply, record, completion_id)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client died (killed while its reply was held back)

    def _answer(self, body: dict[str, Any] | None, reply: Answer | None, record: RecordedRequest,
                completion_id: str) -> None:
        if body is None:
            self._send_error(400, "request body is not a JSON object", "invalid_request")
        elif reply is None:
            self._send_error(404, f"no route {self.path}", "not_found")
        elif isinstance(reply, Fail):
            self._send_error(reply.status, reply.message, "scripted")
        elif isinstance(reply, Drop):
            self._drop()
        else:
            self._stream(sse_chunks(reply, completion_id, record.usage or {}))

    def _read_json(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            parsed = json.loads(self.rfile.read(length) if length else b"{}")
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None

    def _send_json(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, kind: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": kind, "code": status}})

    def _stream(self, chunks: Iterable[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


# --------------------------------------------------------------------------- CLI configuration


def provider_config(
    port: int, permission: Mapping[str, Any] | None = None, *, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The CLI config that points kilo/opencode at the fake provider (DESIGN §5), plus `extra` keys."""
    config: dict[str, Any] = {
        "model": f"{PROVIDER_ID}/{MODEL_ID}",
        "small_model": f"{PROVIDER_ID}/{MODEL_ID}",
        "enabled_providers": [PROVIDER_ID],
        "disabled_providers": ["kilo"],
        "share": "disabled",
        "autoupdate": False,
        "provider": {
            PROVIDER_ID: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Local",
                "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "x"},
                "models": {
                    MODEL_ID: {
                        "name": MODEL_ID,
                        "tool_call": True,
                        "limit": {"context": 128000, "output": 8192},
                    }
                },
            }
        },
    }
    if permission is not None:
        config["permission"] = dict(permission)
    config.update(extra or {})
    return config


def provider_env(
    port: int,
    runtime: Runtime,
    home: Path,
    *,
    permission: Mapping[str, Any] | None = None,
    inline: bool = True,
    extra_config: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Environment overrides for one CLI run against the fake provider.

    Points the CLI at the provider through the inline config variable (`KILO_CONFIG_CONTENT` /
    `OPENCODE_CONFIG_CONTENT`), or with `inline=False` through a config file named by
    `KILO_CONFIG` / `OPENCODE_CONFIG` (leaving the inline variable free for the code under
    test). `extra_config` adds top-level config keys. Switches off model fetches, autoupdate, telemetry and the daemon, and gives the CLI an
    isolated HOME and XDG directories under `home` (created here).
    """
    if runtime not in ("kilo", "opencode"):
        raise ValueError(f"runtime must be 'kilo' or 'opencode', got {runtime!r}")
    prefix = runtime.upper()
    env = isolated_dirs(home)
    config = json.dumps(provider_config(port, permission, extra=extra_config), indent=2)
    if inline:
        env[f"{prefix}_CONFIG_CONTENT"] = config
    else:
        config_file = home / f"{runtime}-provider.json"
        config_file.write_text(config, encoding="utf-8")
        env[f"{prefix}_CONFIG"] = str(config_file)
    for flag, value in (("DISABLE_MODELS_FETCH", "1"), ("DISABLE_AUTOUPDATE", "1"),
                        ("TELEMETRY_LEVEL", "off"), ("NO_DAEMON", "1")):
        env[f"{prefix}_{flag}"] = value
    return env


def isolated_dirs(home: Path) -> dict[str, str]:
    """HOME and the XDG base directories under `home`, created."""
    dirs = {
        "HOME": home,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_STATE_HOME": home / ".local" / "state",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    return {name: str(path) for name, path in dirs.items()}

