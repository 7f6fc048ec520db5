#!/usr/bin/env python3
"""A stand-in for `kilo run --format json` that replays a scripted scenario.

The scenario (JSON file named by FAKE_AGENT_SCENARIO) is a list with one entry per
invocation; each entry is a list of steps:
  {"event": {...}}                 print one NDJSON event (sessionID filled in)
  {"raw": "text"}                  print a raw line (garbage)
  {"write": "path", "text": "..."} write a file relative to $PWD
  {"delete": "path"}               delete a file relative to $PWD
  {"progress": {...}}              write .kilocode-loop/progress.json
  {"handoff": "..."}               write .kilocode-loop/handoff.md
  {"sleep": seconds}               sleep
  {"spawn_sleeper": seconds}       start a child that sleeps (to test group kills)
  {"stderr": "text"}               print to stderr
  {"exit": code}                   exit now with this code
  {"review": {...}}                write the verdict to the review file the (reviewer) prompt names
An entry may also be {"by_role": {"code": [...], "test": [...], ...}}: a reviewer invocation takes
the steps of its role (read from the review file its prompt names), so parallel reviewers that
start in any order each get their own script.
Every invocation's argv, cwd and PWD are appended to FAKE_AGENT_LOG as JSON lines (under a lock,
so parallel invocations count calls correctly).
"""

import fcntl
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    scenario = json.loads(Path(os.environ["FAKE_AGENT_SCENARIO"]).read_text())
    log = Path(os.environ["FAKE_AGENT_LOG"])
    argv = sys.argv[1:]
    review = next((m.group(1) for a in argv if (m := REVIEW_FILE.search(a))), None)
    with log.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        calls = handle.read().count("\n")
        handle.write(json.dumps({"argv": argv, "cwd": os.getcwd(), "pwd": os.environ.get("PWD"), "review": review,
                                 "env_config": os.environ.get("KILO_CONFIG_CONTENT")}) + "\n")
    steps = scenario[min(calls, len(scenario) - 1)]
    if isinstance(steps, dict):
        role = re.sub(r"^review-?|\.json$", "", Path(review or "").name) or "reviewer"
        steps = steps["by_role"][role]
    session = argv[argv.index("--session") + 1] if "--session" in argv else f"ses_fake{calls:04d}"
    root = Path(os.environ.get("PWD", "."))
    for step in steps:
        if "event" in step:
            event = dict(step["event"])
            event.setdefault("sessionID", session)
            print(json.dumps(event), flush=True)
        elif "raw" in step:
            print(step["raw"], flush=True)
        elif "write" in step:
            target = root / step["write"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step["text"])
        elif "delete" in step:
            (root / step["delete"]).unlink(missing_ok=True)
        elif "progress" in step:
            (root / ".kilocode-loop").mkdir(exist_ok=True)
            (root / ".kilocode-loop" / "progress.json").write_text(json.dumps(step["progress"]))
        elif "handoff" in step:
            (root / ".kilocode-loop").mkdir(exist_ok=True)
            (root / ".kilocode-loop" / "handoff.md").write_text(step["handoff"])
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "spawn_sleeper" in step:
            child = subprocess.Popen(["sleep", str(step["spawn_sleeper"])])
            with Path(os.environ["FAKE_AGENT_LOG"] + ".pids").open("a") as pids:
                pids.write(f"{child.pid}\n{os.getpid()}\n")
        elif "stderr" in step:
            print(step["stderr"], file=sys.stderr, flush=True)
        elif "review" in step:
            (root / review).write_text(json.dumps(step["review"]))
        elif "exit" in step:
            return int(step["exit"])
    return 0


REVIEW_FILE = re.compile(r"^Write `(\.kilocode-loop/review[\w-]*\.json)` as JSON:$", re.MULTILINE)

if __name__ == "__main__":
    sys.exit(main())
