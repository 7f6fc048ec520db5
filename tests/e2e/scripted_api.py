"""What the scripted Anthropic, Responses and Gemini servers share: `FakeProvider`'s script DSL,
recording and holding, with each API's own idea of which request is a model turn, what its
latest prompt is, what text it carries, and how the reply is written (its handler)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from http.server import ThreadingHTTPServer
from typing import Any, ClassVar, Self

from .fake_provider import (
    TITLE_TEXT,
    Calls,
    FakeProvider,
    RecordedRequest,
    Say,
    Turn,
    _Handler,
    unheld,
    usage_for,
)


class ScriptedApi(FakeProvider):
    handler: ClassVar[type[_Handler]]
    id_prefix: ClassVar[str] = "turn"

    # -- what differs per API -----------------------------------------------------------------
    @staticmethod
    def is_turn_path(path: str) -> bool:
        raise NotImplementedError

    @staticmethod
    def offers_tools(body: Mapping[str, Any]) -> bool:
        return bool(body.get("tools"))

    @staticmethod
    def prompt_text(body: Mapping[str, Any]) -> str:
        raise NotImplementedError

    @staticmethod
    def all_text(body: Mapping[str, Any]) -> str:
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------------
    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError(f"{type(self).__name__} already started")
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (self.handler,), {"owner": self}))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def turn_requests(self) -> list[RecordedRequest]:
        """Requests that offered tools (the agent's own turns)."""
        return [r for r in self.requests
                if r.method == "POST" and self.is_turn_path(r.path) and self.offers_tools(r.body)]

    def requests_with(self, marker: str) -> list[RecordedRequest]:
        return [r for r in self.turn_requests if marker in self.prompt_text(r.body)]

    def _record(self, method: str, path: str, body: dict[str, Any] | None,
                authorization: str = "") -> tuple[RecordedRequest, str]:
        with self._lock:
            self._completions += 1
            turn: Turn | None = None
            reply: Turn | None = None
            if method == "POST" and body is not None and self.is_turn_path(path):
                if self.offers_tools(body):
                    turn = self._scripts.next_turn({"messages": [{"role": "user", "content": self.prompt_text(body)}]})
                reply = Say(TITLE_TEXT) if turn is None else turn
            answer = None if reply is None else unheld(reply)
            shaped = {"messages": [{"role": "user", "content": self.all_text(body or {})}]}
            usage = usage_for(shaped, answer) if isinstance(answer, Say | Calls) else None
            record = RecordedRequest(method, path, body or {}, turn, reply, usage, authorization)
            self._requests.append(record)
            return record, f"{self.id_prefix}_{self._completions:04d}"
