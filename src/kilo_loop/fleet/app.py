"""The many-runs dashboard: every run (parallel plans, or a whole fleet) in one list, each run's
live log one click away, one inbox for every run's questions, and controls per run.

The API (all under the same token as the single-run dashboard):
  GET  /api/runs                     live and finished runs, with paused backends
  GET  /api/inbox                    every pending question of every run
  GET  /api/runs/{id}/state          a run's state.json
  GET  /api/runs/{id}/events         its events (SSE; `Last-Event-ID` or `?after=` resumes)
  POST /api/runs/{id}/control        {"action": "stop"|"pause"|"resume"|"abort-after-session"|"shared-context",
                                      "value": bool}
  POST /api/runs/{id}/answer         {"answers": ["…", …]}
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any, Literal

import orjson
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from kilo_loop.fleet.inbox import InboxCommand
from kilo_loop.fleet.sources import RunSource
from kilo_loop.run import notes

_STATIC = resources.files("kilo_loop.fleet") / "static"
_RUN_STATIC = resources.files("kilo_loop.web") / "static"  # one look: the run dashboard's stylesheet
_FILES = {"fleet.js": (_STATIC, "text/javascript"), "fleet.css": (_STATIC, "text/css"),
          "styles.css": (_RUN_STATIC, "text/css"), "favicon.svg": (_RUN_STATIC, "image/svg+xml")}


class ControlBody(BaseModel):
    action: Literal["stop", "pause", "resume", "abort-after-session", "shared-context"]
    value: bool | None = None


class NoteBody(BaseModel):
    text: str = Field(max_length=65_536)


class AnswerBody(BaseModel):
    answers: list[str] = Field(min_length=1, max_length=20)


def _sse(event: dict[str, Any]) -> bytes:
    return b"id: %d\ndata: %s\n\n" % (int(event.get("seq", 0)), orjson.dumps(event))


def _known(source: RunSource, run_id: str) -> None:
    if not any(row["runId"] == run_id for row in source.runs()):
        raise HTTPException(404, f"no run {run_id}")


def create_fleet_app(source: RunSource, title: str = "kilo-loop fleet") -> FastAPI:
    app = FastAPI(title=title, docs_url=None, redoc_url=None)

    @app.get("/", response_class=HTMLResponse)
    def page() -> HTMLResponse:
        return HTMLResponse((_STATIC / "fleet.html").read_text(encoding="utf-8"))

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in _FILES:
            raise HTTPException(404, "not found")
        folder, media_type = _FILES[name]
        return Response((folder / name).read_bytes(), media_type=media_type)

    @app.get("/api/runs")
    def runs() -> JSONResponse:
        paused = source.paused_backends()
        return JSONResponse({"runs": source.runs(), "now": time.time(),
                             "pausedBackends": [{"backend": b, "until": u} for b, u in sorted(paused.items())]})

    @app.get("/api/inbox")
    def inbox() -> JSONResponse:
        items = [{"runId": row["runId"], "title": row["title"], "questions": row["pendingQuestions"]}
                 for row in source.runs() if row["pendingQuestions"]]
        return JSONResponse({"items": items})

    @app.get("/api/runs/{run_id}/state")
    def state(run_id: str) -> JSONResponse:
        value = source.state(run_id)
        if value is None:
            raise HTTPException(404, f"no state for run {run_id} yet")
        return JSONResponse(value)

    @app.get("/api/runs/{run_id}/events")
    async def events(run_id: str, request: Request, after: int = 0) -> StreamingResponse:
        _known(source, run_id)
        last = request.headers.get("last-event-id", "")
        start = int(last) if last.isdigit() else after

        async def stream() -> AsyncIterator[bytes]:
            gone = {"flag": False}
            yield b"retry: 2000\n\n"
            async for event in source.events(run_id, start, lambda: gone["flag"]):
                if await request.is_disconnected():
                    gone["flag"] = True
                    break
                yield _sse(event)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache", "x-accel-buffering": "no"})

    @app.post("/api/runs/{run_id}/control")
    def control(run_id: str, body: ControlBody) -> JSONResponse:
        if body.action == "shared-context" and body.value is None:
            raise HTTPException(422, "shared-context needs a boolean value")
        _send(source, run_id, InboxCommand(body.action, body.value))
        return JSONResponse({"ok": True, "runId": run_id, "action": body.action})

    @app.post("/api/runs/{run_id}/answer")
    def answer(run_id: str, body: AnswerBody) -> JSONResponse:
        _send(source, run_id, InboxCommand("answer", answers=tuple(body.answers)))
        return JSONResponse({"ok": True, "runId": run_id})

    @app.post("/api/runs/{run_id}/notes")
    def note(run_id: str, body: NoteBody) -> JSONResponse:
        try:
            text = notes.check_text(body.text)
        except notes.NoteRefused as exc:
            raise HTTPException(400, str(exc)) from None
        _send(source, run_id, InboxCommand("note", text=text))
        return JSONResponse({"ok": True, "runId": run_id, "status": "sent to the run's inbox"}, status_code=202)

    return app


def _send(source: RunSource, run_id: str, command: InboxCommand) -> None:
    try:
        source.send(run_id, command)
    except KeyError:
        raise HTTPException(404, f"no run {run_id}") from None
