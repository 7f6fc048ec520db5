"""Small views of a run for the browser, however long the run (pure functions).

The dashboard never ships the whole state: `/api/state` carries the last iterations and
the log tail within a byte budget; SSE state frames carry only the header and the newest
iterations; log events are clipped (a `write` tool's input can hold a whole file).
Full history is paged from disk (`history.py`).
"""

from __future__ import annotations

from typing import Any

import orjson

STATE_BUDGET_BYTES = 256 * 1024
KEPT_ITERATIONS = 50
HEAD_ITERATIONS = 3
KEPT_LOG_LINES = 200
MAX_MESSAGE_CHARS = 2000
MAX_STRING_CHARS = 400
MAX_LIST_ITEMS = 20
MAX_DICT_KEYS = 30
MAX_DEPTH = 3
MAX_FILES_LISTED = 30
MAX_SUMMARY_CHARS = 2000
MAX_STAGE_FIELD_CHARS = 300
_HIDDEN_STATE_KEYS = ("iterations", "logTail")


def clip_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slim_value(value: Any, depth: int = 0) -> Any:
    """A JSON value with long strings clipped and big containers cut, for display only."""
    if isinstance(value, str):
        return clip_text(value, MAX_STRING_CHARS)
    if depth >= MAX_DEPTH and isinstance(value, dict | list):
        return "…"
    if isinstance(value, list):
        items = [slim_value(item, depth + 1) for item in value[:MAX_LIST_ITEMS]]
        return items + ([f"… {len(value) - MAX_LIST_ITEMS} more"] if len(value) > MAX_LIST_ITEMS else [])
    if isinstance(value, dict):
        keys = list(value)[:MAX_DICT_KEYS]
        return {str(key): slim_value(value[key], depth + 1) for key in keys}
    return value


def slim_event(event: dict[str, Any]) -> dict[str, Any]:
    slim = dict(event)
    if isinstance(slim.get("message"), str):
        slim["message"] = clip_text(slim["message"], MAX_MESSAGE_CHARS)
    if "data" in slim:
        slim["data"] = slim_value(slim["data"])
    return slim


def slim_iteration(item: dict[str, Any]) -> dict[str, Any]:
    slim = dict(item)
    files = slim.get("filesChanged")
    if isinstance(files, list):
        slim["filesChangedTotal"] = len(files)
        slim["filesChanged"] = [clip_text(str(f), MAX_STRING_CHARS) for f in files[:MAX_FILES_LISTED]]
    for key in ("summary", "error", "topic", "nextStage", "guardReason", "retryReason"):
        if isinstance(slim.get(key), str):
            slim[key] = clip_text(slim[key], MAX_SUMMARY_CHARS)
    for key in ("warnings", "questions"):
        if isinstance(slim.get(key), list):
            slim[key] = slim_value(slim[key])
    verify = slim.get("verify")
    if isinstance(verify, dict) and isinstance(verify.get("outputTail"), str):
        slim["verify"] = {**verify, "outputTail": clip_text(verify["outputTail"], MAX_SUMMARY_CHARS)}
    return slim


def _slim_stage(stage: Any) -> Any:
    if not isinstance(stage, dict):
        return stage
    return {k: clip_text(v, MAX_STAGE_FIELD_CHARS) if isinstance(v, str) else v for k, v in stage.items()}


def _head(wire: dict[str, Any], iterations: list[Any], keep: int, total: int) -> dict[str, Any]:
    head = {key: value for key, value in wire.items() if key not in _HIDDEN_STATE_KEYS}
    if isinstance(head.get("promptExtra"), str):
        head["promptExtra"] = clip_text(head["promptExtra"], MAX_SUMMARY_CHARS)
    if isinstance(head.get("stages"), list):
        head["stages"] = [_slim_stage(stage) for stage in head["stages"]]
    kept = iterations[-keep:] if keep else []
    head["iterations"] = [slim_iteration(item) if isinstance(item, dict) else item for item in kept]
    head["iterationsTotal"] = total
    head["iterationsOffset"] = total - len(kept)
    return head


def _size(value: Any) -> int:
    return len(orjson.dumps(value))


def compact_state(
    wire: dict[str, Any], budget: int = STATE_BUDGET_BYTES, iterations_total: int | None = None
) -> dict[str, Any]:
    """The state for `/api/state`: the last iterations and log lines, at most `budget` bytes
    (log lines go first, then older iterations, when a run's reports are unusually large).

    `wire` may already hold only the newest iterations; `iterations_total` then says how many there are.
    """
    iterations = list(wire.get("iterations") or [])
    total = len(iterations) if iterations_total is None else iterations_total
    keep = KEPT_ITERATIONS
    snapshot = _head(wire, iterations, keep, total)
    tail = [slim_event(e) for e in list(wire.get("logTail") or [])[-KEPT_LOG_LINES:] if isinstance(e, dict)]
    snapshot["logTail"] = tail
    while _size(snapshot) > budget and (snapshot["logTail"] or keep > 1):
        if snapshot["logTail"]:
            snapshot["logTail"] = snapshot["logTail"][len(snapshot["logTail"]) // 2 + 1 :]
        else:
            keep //= 2
            snapshot = {**_head(wire, iterations, keep, total), "logTail": []}
    return snapshot


def state_head(wire: dict[str, Any], iterations_total: int | None = None) -> dict[str, Any]:
    """What an SSE `state` frame carries: everything but the history, plus the newest iterations."""
    iterations = list(wire.get("iterations") or [])
    return _head(
        wire, iterations, HEAD_ITERATIONS, len(iterations) if iterations_total is None else iterations_total
    )
