"""The dashboard API as `kilo-loop watch` speaks it: the same routes and SSE stream the web page uses (a run's
`/api/…`, or one run's `/api/runs/ID/…` on a fleet dashboard), with the same refusals, worded by the server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from kilo_loop.errors import KiloLoopError
from kilo_loop.tui.target import Target

SOURCE = "tui"  # how notes sent from here are labelled in the run's log


class ApiRefused(KiloLoopError):
    """The dashboard refused a request (its words), or did not answer."""


@dataclass
class SseFrame:
    event: str  # "log", "state", "hello", "run" (a fleet's frames have no name: "log")
    raw: str  # the JSON text, parsed on demand: a watcher reads only the newest of many state frames
    seq: int | None = None

    @property
    def data(self) -> Any:
        try:
            return orjson.loads(self.raw)
        except orjson.JSONDecodeError:
            return None


@dataclass
class SseParser:
    """Server-sent events, fed line by line (pure)."""

    _event: str = ""
    _data: list[str] = field(default_factory=list)
    _id: str | None = None

    def feed(self, line: str) -> SseFrame | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        return None

    def _dispatch(self) -> SseFrame | None:
        event, data, ident = self._event or "log", self._data, self._id
        self._event, self._data, self._id = "", [], None
        if not data:
            return None
        seq = int(ident) if ident is not None and ident.isdigit() else None
        return SseFrame(event, "\n".join(data), seq)


def refusal_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or f"HTTP {response.status_code}"
    if isinstance(body, dict):
        detail = body.get("error") or body.get("detail")
        if isinstance(detail, list):  # a validation error: its first message
            detail = "; ".join(str(item.get("msg", item)) if isinstance(item, dict) else str(item)
                               for item in detail[:3])
        if detail:
            return str(detail)
    return f"HTTP {response.status_code}"


class DashboardClient:
    def __init__(self, target: Target, timeout: float = 30.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.target = target
        headers = {"authorization": f"Bearer {target.token}"} if target.token else {}
        # plain http never uses TLS: not loading the CA bundle keeps a few MB out of a long-lived watcher
        verify = not target.base.startswith("http://")
        self._http = httpx.AsyncClient(base_url=target.base, headers=headers, timeout=timeout, verify=verify,
                                       transport=transport)
        self.run_id: str | None = target.run_id

    @property
    def fleet(self) -> bool:
        return self.target.run_id is not None

    def _path(self, suffix: str) -> str:
        return f"api/runs/{self.target.run_id}/{suffix}" if self.fleet else f"api/{suffix}"

    async def close(self) -> None:
        await self._http.aclose()

    async def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiRefused(f"the dashboard at {self.target.base} did not answer ({exc or type(exc).__name__}): "
                             "is the run still going?") from None
        if response.status_code >= 400:
            raise ApiRefused(refusal_text(response))
        return response.json() if response.content else {}

    async def state(self) -> dict[str, Any]:
        body = await self._request("GET", self._path("state"))
        if not isinstance(body, dict):
            raise ApiRefused("the dashboard answered /api/state with something that is not a run's state")
        if body.get("runId"):
            self.run_id = str(body["runId"])
        return body

    async def budget(self) -> dict[str, Any] | None:
        """The run's --max-cost / --max-tokens (a run's dashboard serves them with its receipts)."""
        if self.fleet or not self.run_id:
            return None
        try:
            body = await self._request("GET", f"api/runs/{self.run_id}/receipts")
        except ApiRefused:
            return None
        budget = body.get("budget") if isinstance(body, dict) else None
        return budget if isinstance(budget, dict) else None

    async def control(self, action: str) -> Any:
        return await self._request("POST", self._path("control"), json={"action": action})

    async def answer(self, answers: list[tuple[str, str]]) -> Any:
        if self.fleet:
            body: dict[str, Any] = {"answers": [answer for _, answer in answers]}
        else:
            body = {"answers": [{"question": q, "answer": a} for q, a in answers]}
        return await self._request("POST", self._path("answer"), json=body)

    async def note(self, text: str) -> Any:
        return await self._request("POST", self._path("notes"), params={"source": SOURCE}, json={"text": text})

    async def withdraw(self, note_id: str) -> Any:
        return await self._request("POST", self._path(f"notes/{note_id}/withdraw"), params={"source": SOURCE},
                                   json={})

    async def revert(self, iteration: int) -> Any:
        if self.fleet:
            raise ApiRefused("a fleet dashboard does not revert: run `kilo-loop revert` on the worker's machine")
        return await self._request("POST", "api/revert", json={"iteration": iteration})

    async def events(self, after: int) -> AsyncIterator[SseFrame]:
        """One connection's frames, from the seq after `after`; ends when the server closes the stream."""
        params: dict[str, Any] = {"after": after}
        if self.run_id and not self.fleet:
            params["run"] = self.run_id
        parser = SseParser()
        async with self._http.stream("GET", self._path("events"), params=params,
                                     timeout=httpx.Timeout(10.0, read=None)) as response:
            if response.status_code >= 400:
                await response.aread()
                raise ApiRefused(refusal_text(response))
            rest = b""
            async for chunk in response.aiter_bytes():  # split here: httpx's line decoder costs more per line
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    frame = parser.feed(line.removesuffix(b"\r").decode("utf-8", "replace"))
                    if frame is not None:
                        yield frame
