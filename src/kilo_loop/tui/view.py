"""What the run view shows, as text for a terminal (pure functions of the API's state and log frames):
the headline, the clock (elapsed, per iteration, ETA — the web page's arithmetic), the "Now" panel,
cost and tokens against the budget, stages with progress, notes, and log lines with filter and search."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

FINAL = frozenset({"done", "done-with-errors", "error", "aborted", "stopped", "stopped-budget", "stalled",
                   "stopped-guard"})
DOING_TYPES = frozenset({"text", "reasoning", "status", "verify", "question", "answer", "checkpoint", "session",
                         "warning", "stage-done", "control", "note"})
ERROR_TYPES = frozenset({"agent-error", "agent-failed", "crash", "guard-pre"})
FILTERS = ("all", "tools", "errors", "questions", "guard")
NOW_TOOLS = 5
STAGE_MARK = {"done": "✔", "in_progress": "▶", "blocked": "✖", "pending": "·", "skipped": "-"}


def parse_time(value: Any) -> float | None:
    """Epoch milliseconds of an ISO time, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return None


def fmt_duration(ms: float | None) -> str:
    if ms is None or not math.isfinite(ms):
        return "—"
    total = max(0, round(ms / 1000))
    if total < 60:
        return f"{total}s"
    minutes, seconds = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def fmt_cost(value: Any) -> str:
    amount = float(value or 0)
    return f"${amount:.4f}" if 0 < amount < 0.01 else f"${amount:.2f}"


def fmt_tokens(value: Any) -> str:
    number = int(value or 0)
    if number >= 1_000_000:
        return f"{number / 1_000_000:.1f}M"
    return f"{number / 1000:.1f}k" if number >= 1000 else str(number)


def is_final(state: dict[str, Any]) -> bool:
    return str(state.get("status")) in FINAL


def stage_counts(state: dict[str, Any]) -> tuple[int, int]:
    stages = state.get("stages") or []
    done = sum(1 for stage in stages if stage.get("status") == "done")
    return max(done, len(state.get("completedStages") or [])), len(stages)


@dataclass(frozen=True)
class Clock:
    elapsed: float | None
    average: float | None
    running_for: float | None
    eta: float | None


def run_clock(state: dict[str, Any], now_ms: float) -> Clock:
    """Elapsed, the running iteration's time, the finished iterations' average, and the ETA: the iterations
    the stages left are likely to need at this run's pace, capped by the iteration budget."""
    items = [item for item in state.get("iterations") or [] if isinstance(item, dict)]
    started, finished = parse_time(state.get("startedAt")), parse_time(state.get("finishedAt"))
    final = is_final(state)
    elapsed = None if started is None else (finished if final and finished is not None else now_ms) - started
    done = [item for item in items if item.get("outcome") != "running" and (item.get("durationMs") or 0) > 0]
    average = sum(item["durationMs"] for item in done) / len(done) if done else None
    running = None if final else next((item for item in items if item.get("outcome") == "running"), None)
    running_start = parse_time(running.get("startedAt")) if running else None
    running_for = None if running_start is None else max(0.0, now_ms - running_start)
    eta = None
    if not final and average is not None:
        done_stages, total = stage_counts(state)
        finished_iterations = max(0, int(state.get("iteration") or 0) - (1 if running else 0))
        per_stage = finished_iterations / done_stages if done_stages else 1
        needed = math.ceil((total - done_stages) * per_stage)
        left = max(0, int(state.get("maxIterations") or 0) - finished_iterations)
        eta = max(0.0, min(needed, left) * average - (running_for or 0))
    return Clock(elapsed, average, running_for, eta)


def eta_text(state: dict[str, Any], clock: Clock) -> str:
    if is_final(state):
        return "finished"
    status = state.get("status")
    if status == "waiting-answer":
        return "waiting for you"
    if status == "paused":
        return "paused"
    return "after the first iteration" if clock.eta is None else f"~{fmt_duration(clock.eta)}"


def bar(ratio: float, width: int) -> str:
    filled = round(max(0.0, min(1.0, ratio)) * width)
    return "█" * filled + "░" * (width - filled)


def headline(state: dict[str, Any], width: int = 20) -> str:
    done, total = stage_counts(state)
    ratio = done / total if total else 0.0
    status = str(state.get("status") or "idle").replace("-", " ")
    extra = " · pause requested" if state.get("paused") and not is_final(state) else ""
    return (f"{status}{extra} · stages {done}/{total} {bar(ratio, width)} {round(ratio * 100)}% · "
            f"agent reports {state.get('lastPercent') or 0}%")


def clock_line(state: dict[str, Any], now_ms: float) -> str:
    clock = run_clock(state, now_ms)
    of = f"{state.get('iteration') or 0}/{state.get('maxIterations') or '?'}"
    running = f" ({fmt_duration(clock.running_for)})" if clock.running_for is not None else ""
    return (f"elapsed {fmt_duration(clock.elapsed)} · iteration {of}{running} · "
            f"{fmt_duration(clock.average)}/iteration · ETA {eta_text(state, clock)}")


def figures_line(state: dict[str, Any], budget: dict[str, Any] | None) -> str:
    totals = state.get("totals") or {}
    budget = budget or {}
    cost = fmt_cost(totals.get("cost"))
    if budget.get("maxCost"):
        cost += f"/{fmt_cost(budget['maxCost'])}"
    tokens = fmt_tokens(totals.get("tokens"))
    if budget.get("maxTokens"):
        tokens += f"/{fmt_tokens(budget['maxTokens'])}"
    return (f"cost {cost} · tokens {tokens} · ctx {fmt_tokens(state.get('contextTokens'))} · "
            f"answers {state.get('answers') or 0} · guard blocks {state.get('guardBlocks') or 0}")


def stage_lines(state: dict[str, Any]) -> list[str]:
    current, final = state.get("currentStageId"), is_final(state)
    lines = []
    for index, stage in enumerate(state.get("stages") or []):
        status = str(stage.get("status") or "pending")
        if stage.get("id") == current and status == "pending" and not final:
            status = "in_progress"
        pointer = ">" if stage.get("id") == current and not final else " "
        lines.append(f"{pointer}{STAGE_MARK.get(status, '·')} {index + 1}. {stage.get('title', '')} "
                     f"[{status.replace('_', ' ')}]")
    return lines


@dataclass
class NowPanel:
    """What the agent did last and its last tool lines this iteration (fed the log frames)."""

    doing: str = ""
    tools: tuple[str, ...] = ()

    def feed(self, event: dict[str, Any]) -> None:
        kind, message = str(event.get("type")), str(event.get("message") or "")
        if kind in ("iteration-started", "run-started"):
            self.doing, self.tools = message, ()
        elif kind == "tool":
            self.tools = (*self.tools, message)[-NOW_TOOLS:]
        elif (kind in DOING_TYPES or kind.startswith("note-")) and message:
            self.doing = message


WAITING = {"waiting-answer": "Waiting for your answer: press a to answer",
           "paused": "Paused: press p to resume", "waiting-quota": "Waiting for the usage limit to reset"}


def now_lines(state: dict[str, Any], now: NowPanel) -> list[str]:
    stages = state.get("stages") or []
    if is_final(state):
        return [f"Finished: {state.get('stopReason') or str(state.get('status')).replace('-', ' ')}"]
    index = next((i for i, s in enumerate(stages) if s.get("id") == state.get("currentStageId")), -1)
    if index >= 0:
        head = f"Stage {index + 1} of {len(stages)}: {stages[index].get('title', '')}"
    else:
        head = "Starting…" if state.get("status") == "starting" else "Between stages"
    lines = [head, WAITING.get(str(state.get("status")), now.doing)]
    lines += [f"  {tool}" for tool in now.tools]
    unanswered = state.get("unanswered") or []
    if unanswered:
        lines.append(f"{len(unanswered)} question(s) went unanswered (the run went on)")
    return lines


NOTE_STATUS = {"delivered": "delivered, waiting for the agent to confirm"}


def note_lines(state: dict[str, Any], limit: int = 5) -> list[str]:
    lines = []
    for note in (state.get("notes") or [])[-limit:]:
        text = str(note.get("text", ""))
        text = text if len(text) <= 80 else text[:79] + "…"
        status = NOTE_STATUS.get(str(note.get("status")), str(note.get("status")))
        lines.append(f"{note.get('id')} {text} — {status}")
    return lines


def log_kinds(event: dict[str, Any]) -> frozenset[str]:
    kind, raw = str(event.get("type")), event.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kinds = set()
    if kind == "tool":
        kinds.add("tools")
    failed = (kind == "tool" and data.get("status") == "error") or (kind == "verify" and data.get("passed") is False)
    if event.get("level") in ("error", "warn") or kind in ERROR_TYPES or failed:
        kinds.add("errors")
    if kind in ("question", "answer"):
        kinds.add("questions")
    if kind.startswith("guard"):
        kinds.add("guard")
    return frozenset(kinds)


def is_section(event: dict[str, Any]) -> bool:
    return event.get("type") in ("iteration-started", "run-started")


def log_text(event: dict[str, Any]) -> str:
    message = str(event.get("message") or "").replace("\n", " ⏎ ")
    if is_section(event) or event.get("type") == "tool":
        return message if not is_section(event) else f"── {message}"
    stamp = str(event.get("ts") or "")[11:19]
    return f"{stamp} {message}".strip()


def visible(event: dict[str, Any], filter_name: str, search: str) -> bool:
    if filter_name != "all" and not is_section(event) and filter_name not in log_kinds(event):
        return False
    return not search or search.lower() in log_text(event).lower()


def shown_lines(events: Iterable[dict[str, Any]], filter_name: str, search: str) -> list[str]:
    return [log_text(event) for event in events if visible(event, filter_name, search)]


def merge_head(state: dict[str, Any], head: dict[str, Any]) -> dict[str, Any]:
    """An SSE `state` frame (the header and the newest iterations) folded into the state shown."""
    if head.get("runId") not in (None, state.get("runId")):
        return state
    iterations = {item.get("iteration"): item for item in state.get("iterations") or [] if isinstance(item, dict)}
    for item in head.get("iterations") or []:
        if isinstance(item, dict):
            iterations[item.get("iteration")] = item
    kept = [iterations[key] for key in sorted(k for k in iterations if isinstance(k, int))][-50:]
    return {**state, **head, "iterations": kept}
