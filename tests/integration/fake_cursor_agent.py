#!/usr/bin/env python3
"""A stand-in for `cursor-agent -p --output-format stream-json` that replays a scripted scenario.

The scenario (JSON file named by FAKE_CURSOR_SCENARIO) has one entry per invocation, each a list
of steps:
  {"replay": "file.ndjson"}     print a recorded stream's lines (session_id replaced by this session's)
  {"event": {...}}              print one event (session_id filled in)
  {"progress": "done"}          write .kilocode-loop/progress.json for the stage the prompt names
  {"write": "path", "text": …}  write a file relative to $PWD
  {"sleep": seconds}            sleep
  {"exit": code}                exit now
Every invocation's argv is appended to FAKE_CURSOR_LOG as a JSON line.
"""

import json
import os
import re
import sys
import time
from pathlib import Path


def stage_of(prompt: str) -> tuple[str, int]:
    stage = re.search(r"^Current stage: (\S+) — ", prompt, re.MULTILINE)
    iteration = re.search(r"^Iteration (\d+) of \d+\.$", prompt, re.MULTILINE)
    return (stage.group(1) if stage else "stage-1"), int(iteration.group(1)) if iteration else 1


def main() -> int:
    scenario = json.loads(Path(os.environ["FAKE_CURSOR_SCENARIO"]).read_text())
    log = Path(os.environ["FAKE_CURSOR_LOG"])
    calls = log.read_text().count("\n") if log.exists() else 0
    argv = sys.argv[1:]
    with log.open("a") as handle:
        handle.write(json.dumps({"argv": argv, "pwd": os.environ.get("PWD"), "home": os.environ.get("HOME"),
                                 "xdg_config": os.environ.get("XDG_CONFIG_HOME")}) + "\n")
    session = argv[argv.index("--resume") + 1] if "--resume" in argv else f"cursor-session-{calls:04d}"
    root = Path(os.environ.get("PWD", "."))
    for step in scenario[min(calls, len(scenario) - 1)]:
        if "replay" in step:
            for line in Path(step["replay"]).read_text().splitlines():
                event = json.loads(line)
                if "session_id" in event:
                    event["session_id"] = session
                print(json.dumps(event), flush=True)
        elif "event" in step:
            print(json.dumps({**step["event"], "session_id": session}), flush=True)
        elif "progress" in step:
            stage, iteration = stage_of(argv[-1])
            report = {"iteration": iteration, "topic": f"cursor on {stage}", "stageId": stage,
                      "stageStatus": step["progress"], "summary": f"did {stage}", "needsInput": False,
                      "questions": []}
            (root / ".kilocode-loop").mkdir(exist_ok=True)
            (root / ".kilocode-loop" / "progress.json").write_text(json.dumps(report))
        elif "write" in step:
            (root / step["write"]).write_text(step["text"])
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "exit" in step:
            return int(step["exit"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
