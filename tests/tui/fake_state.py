"""A fixed run as the dashboard API serves it (a state and log lines), for deterministic TUI snapshots."""

from __future__ import annotations

from typing import Any

NOW = 1_796_212_800.0  # 2026-12-02T12:00:00Z, the clock the snapshots are drawn at
STARTED = "2026-12-02T11:52:30.000Z"


def _event(seq: int, kind: str, message: str, level: str = "info", **data: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"seq": seq, "ts": f"2026-12-02T11:5{min(seq // 4, 9)}:{seq:02d}.000Z", "type": kind,
                             "level": level, "message": message}
    if data:
        event["data"] = data
    return event


STATE: dict[str, Any] = {
    "runId": "20261202-115230-0042", "status": "waiting-answer", "goalTitle": "Split the parser into modules",
    "stages": [
        {"id": "s1", "title": "Extract the tokenizer", "status": "done", "verify": "pytest tests/lexer"},
        {"id": "s2", "title": "Move the AST nodes", "status": "in_progress", "verify": None},
        {"id": "s3", "title": "Wire the new modules", "status": "pending", "verify": None},
        {"id": "s4", "title": "Delete the old parser", "status": "pending", "verify": None},
    ],
    "currentStageId": "s2", "completedStages": ["s1"], "maxIterations": 10, "iteration": 3, "dryRun": True,
    "startedAt": STARTED, "finishedAt": None, "lastPercent": 40, "paused": False,
    "totals": {"tokens": 184_200, "cost": 0.4213}, "contextTokens": 41_000, "answers": 1, "guardBlocks": 2,
    "pendingQuestions": [{"question": "Keep the old parser's public names as aliases?",
                          "options": ["Yes, as deprecated aliases", "No, break them now"]}],
    "notes": [{"id": "n1", "text": "use the helpers in utils/, not new ones", "status": "acknowledged"},
              {"id": "n2", "text": "tests first for the AST move", "status": "queued"}],
    "iterations": [
        {"iteration": 1, "outcome": "ok", "durationMs": 150_000, "startedAt": STARTED},
        {"iteration": 2, "outcome": "ok", "durationMs": 170_000, "startedAt": "2026-12-02T11:55:00.000Z"},
        {"iteration": 3, "outcome": "running", "durationMs": 0, "startedAt": "2026-12-02T11:58:00.000Z"},
    ],
    "seq": 14,
}

EVENTS: list[dict[str, Any]] = [
    _event(1, "run-started", "run 20261202-115230-0042 started: Split the parser into modules", "heading"),
    _event(2, "iteration-started", "Iteration 1/10 — Extract the tokenizer", "heading"),
    _event(3, "tool", "▸ Read src/parser.py", status="completed"),
    _event(4, "guard", "guard blocked: rm -rf build/ (outside the work tree)", "warn"),
    _event(5, "verify", "verify passed: pytest tests/lexer (12 passed)", passed=True),
    _event(6, "stage-done", "stage s1 done: Extract the tokenizer"),
    _event(7, "iteration-started", "Iteration 2/10 — Move the AST nodes", "heading"),
    _event(8, "tool", "▸ Run pytest -q", status="error"),
    _event(9, "guard", "guard blocked: git push --force", "warn"),
    _event(10, "iteration-started", "Iteration 3/10 — Move the AST nodes", "heading"),
    _event(11, "note-acknowledged", "note n1 acknowledged by the agent"),
    _event(12, "tool", "▸ Edit src/ast/nodes.py", status="completed"),
    _event(13, "question", "question: Keep the old parser's public names as aliases?"),
    _event(14, "note-queued", "note n2 for the agent (from the tui): queued"),
]
BUDGET: dict[str, Any] = {"maxCost": 2.0, "maxTokens": 1_000_000, "maxIterations": 10}
