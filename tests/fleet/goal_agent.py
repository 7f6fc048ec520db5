#!/usr/bin/env python3
"""A stand-in for `kilo run --format json` whose script lives in the goal itself, so plans that
run side by side (worktrees, fleet workers) each do their own work without a shared scenario file.

The current stage's details may hold one line `agent: {json}` with any of:
  "write": {"path": "text", ...}   write files (relative to $PWD)
  "append": {"path": "text", ...}  append to files
  "sleep": seconds                 think for a while (stands in for the model)
  "ask": "question"                ask the operator (needsInput)
  "error": "message"               fail with an APIError event (e.g. a 429 with a reset time)
  "error_once": "message"          the same, only the first time this stage runs in this tree
  "done": false                    do not claim the stage done this time
Each session prints step_start, a tool_use per file, a text and a step_finish with tokens,
and marks the current stage done in .kilocode-loop/progress.json. With GOAL_AGENT_LOG set, each
session that ends appends {"run", "stage", "start", "end"} to that file (a test counts sessions per
job and checks that no two of a job's sessions overlapped).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

STAGE = re.compile(r"^Current stage: (?P<id>\S+) — (?P<title>.+)$", re.MULTILINE)
SCRIPT = re.compile(r"^agent: (?P<json>\{.*\})\s*$", re.MULTILINE)


def emit(kind: str, session: str, **part: object) -> None:
    print(json.dumps({"type": kind, "timestamp": int(time.time() * 1000), "sessionID": session, "part": part}),
          flush=True)


def current_section(prompt: str) -> str:
    start = prompt.find("## Current stage")
    if start < 0:
        return ""
    end = prompt.find("\n## ", start + 5)
    return prompt[start:] if end < 0 else prompt[start:end]


def main() -> int:
    argv = sys.argv[1:]
    prompt = argv[-1] if argv else ""
    session = argv[argv.index("--session") + 1] if "--session" in argv else f"ses_{uuid.uuid4().hex[:12]}"
    root = Path(os.environ.get("PWD", "."))
    stage = STAGE.search(prompt)
    stage_id = stage["id"] if stage else "stage-1"
    match = SCRIPT.search(current_section(prompt))
    script = json.loads(match["json"]) if match else {}
    started = time.time()
    emit("step_start", session)
    time.sleep(float(script.get("sleep", 0)))
    marker = root / ".kilocode-loop" / f"errored-{stage_id}"
    message = script.get("error") or (script.get("error_once") if not marker.exists() else None)
    if message:
        marker.parent.mkdir(exist_ok=True)
        marker.write_text("1")
        print(json.dumps({"type": "error", "timestamp": 0, "sessionID": session,
                          "error": {"name": "APIError", "data": {"message": message}}}), flush=True)
        return 1
    for mode, files in (("w", script.get("write", {})), ("a", script.get("append", {}))):
        for name, text in files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open(mode) as handle:
                handle.write(text)
            emit("tool_use", session, tool="write", callID=uuid.uuid4().hex[:8],
                 state={"status": "completed", "input": {"filePath": str(target)}, "output": "ok"})
    emit("text", session, text=f"worked on {stage_id}")
    progress = {"stageId": stage_id, "stageStatus": "done" if script.get("done", True) else "in_progress",
                "percent": 100, "topic": f"work on {stage_id}", "summary": "done by the goal agent",
                "needsInput": bool(script.get("ask")),
                "questions": [{"question": script["ask"], "options": []}] if script.get("ask") else []}
    (root / ".kilocode-loop").mkdir(exist_ok=True)
    (root / ".kilocode-loop" / "progress.json").write_text(json.dumps(progress))
    emit("step_finish", session, reason="stop", cost=0.001,
         tokens={"total": 1200, "input": 1000, "output": 200, "reasoning": 0, "cache": {"read": 0, "write": 0}})
    log = os.environ.get("GOAL_AGENT_LOG")
    if log:
        line = json.dumps({"run": root.name, "stage": stage_id, "start": started, "end": time.time()})
        with open(log, "a") as handle:
            handle.write(line + "\n")  # one short write: lines of parallel sessions do not interleave
    return 0


if __name__ == "__main__":
    sys.exit(main())
