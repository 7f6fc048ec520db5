"""The pre-tool hook, as a CLI runs it, reads a script the agent wrote earlier with its file tool.

The agent's two steps are played here: the file is written with `Path.write_text` (its file-write
tool), then the hook process gets the `bash` call as JSON with the agent's `cwd`. The destructive
text is a Python string in a temp file; nothing here hands it to a shell.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from kilo_loop.agent.hook import BLOCK_EXIT, hook_command, write_rules


def _hook(tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    rules = write_rules(tmp_path / "run" / "guard-rules.json", [], [])
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
                          "cwd": str(tmp_path / "project")})
    return subprocess.run(shlex.split(hook_command(rules)), input=payload, cwd=tmp_path, capture_output=True,
                          text=True, check=False, timeout=60)


def test_the_hook_refuses_a_script_on_disk_that_wipes_home(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "scripts" / "clean.sh").write_text("#!/bin/sh\nset -e\nrm -rf \"$HOME\"\n", encoding="utf-8")
    refused = _hook(tmp_path, "sh scripts/clean.sh")
    assert refused.returncode == BLOCK_EXIT, refused.stderr
    assert "scripts/clean.sh" in refused.stderr
    assert json.loads(refused.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_the_hook_lets_an_everyday_script_on_disk_run(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "scripts" / "test.sh").write_text("#!/bin/sh\nset -e\npytest -q\nruff check .\n", encoding="utf-8")
    allowed = _hook(tmp_path, "sh scripts/test.sh")
    assert (allowed.returncode, allowed.stdout) == (0, ""), allowed.stderr
