"""The review gate from the dashboard: `POST /api/review/gate` marks each finding Mitigate now or
Defer and may add a change request; it answers the gate the terminal would answer otherwise."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import Field
from starlette.responses import Response

from kilo_loop.loop.commands import CommandRefused, SubmitAnswers
from kilo_loop.review.gate import reply_from_marks
from kilo_loop.run.control import AnswerItem
from kilo_loop.web.context import conflict, json_response
from kilo_loop.web.deps import ActiveRun
from kilo_loop.web.schemas import Body

MAX_ROWS = 500


class GateRequest(Body):
    marks: dict[str, Literal["mitigate", "defer"]] = Field(default_factory=dict, max_length=MAX_ROWS,
                                                           description="finding id → mitigate | defer")
    change_request: str = Field("", max_length=8000, description="free-text change for the fix pass")


router = APIRouter(prefix="/api/review")


@router.post("/gate", summary="Answer the review gate: mark findings Mitigate now / Defer, ask for a change")
async def post_gate(body: GateRequest, live: ActiveRun) -> Response:
    state = live.state
    gate, pending = state.review_gate, state.pending_questions
    if gate is None or not pending or live.answered is pending:
        raise conflict("no review gate is waiting for an answer")
    reply = reply_from_marks([str(row["id"]) for row in gate.rows], dict(body.marks), body.change_request)
    live.answered = pending  # a double click sends nothing twice
    try:
        await live.ask(SubmitAnswers((AnswerItem(gate.question, reply, "dashboard"),)))
    except CommandRefused:
        live.answered = None
        raise
    mitigate = sum(1 for mark in body.marks.values() if mark == "mitigate")
    return json_response({"ok": True, "mitigate": mitigate, "reply": reply})
