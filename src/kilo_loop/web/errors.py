"""The one place a domain error becomes an HTTP answer: `{"error": message}` with the status its kind
calls for. The loop and the run never name an HTTP status; routes let their errors through."""

from __future__ import annotations

from kilo_loop.checkpoint.store import CheckpointError
from kilo_loop.errors import KiloLoopError
from kilo_loop.goal.model import GoalError
from kilo_loop.loop.commands import CommandRefused, Refusal
from kilo_loop.project_config import ConfigFileError
from kilo_loop.review.gate import GateReplyError
from kilo_loop.run.control import ControlError
from kilo_loop.run.store import RunNotFound
from kilo_loop.web.context import RequestRefused
from kilo_loop.web.controller import RunBusy, StartRefused

_REFUSALS: dict[Refusal, int] = {Refusal.CONFLICT: 409, Refusal.NOT_FOUND: 404, Refusal.INVALID: 400}
# The first class the error is an instance of decides; a KiloLoopError named nowhere is a bad request.
_STATUS: tuple[tuple[type[KiloLoopError], int], ...] = (
    (ControlError, 400),
    (GateReplyError, 400),
    (StartRefused, 400),
    (GoalError, 400),
    (RunBusy, 409),
    (ConfigFileError, 409),
    (CheckpointError, 409),
    (RunNotFound, 404),
)


def domain_status(exc: KiloLoopError) -> tuple[int, str]:
    """(status, message) for a domain error raised while answering a request."""
    if isinstance(exc, CommandRefused | RequestRefused):
        return _REFUSALS[exc.refusal], exc.message
    if isinstance(exc, GoalError):  # a goal typed in the launcher has no file to name
        return 400, exc.message if exc.source is None else str(exc)
    status = next((code for cls, code in _STATUS if isinstance(exc, cls)), 400)
    return status, str(exc)
