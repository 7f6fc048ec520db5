"""Provider injection through the real kilo CLI: the scripted provider is reachable ONLY through the
`{env:}` provider the loop injects (no config file names it), and the API key shows up in the
request the CLI sent but nowhere in the run directory or the loop's output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO_ROOT, AgentBins, bash, iteration_marker, write_progress
from .fake_provider import MODEL_ID, FakeProvider, isolated_dirs, say

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-injected-7d1f0c9a4b2e"


def files_containing(root: Path, needle: str) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            found.append(path)
    return found


@pytest.mark.parametrize("transport", ["serve", "run"])
def test_kilo_reaches_the_provider_only_through_the_injected_config(
    agent_bins: AgentBins, fake_provider: FakeProvider, git_project: Path, agent_home: Path, transport: str
) -> None:
    project = git_project
    fake_provider.add_turns(
        bash("echo via-injected-provider > ran.txt"),
        write_progress(project, 1, "stage-1", "done"),
        say("Done."),
        marker=iteration_marker(1),
    )
    env = {name: os.environ[name] for name in ("PATH", "TMPDIR", "LANG") if name in os.environ}
    env.update(isolated_dirs(agent_home))
    # The user's inline config only picks the provider; it knows no URL and no key.
    env["KILO_CONFIG_CONTENT"] = json.dumps({"enabled_providers": ["loop"], "disabled_providers": ["kilo"],
                                             "share": "disabled", "autoupdate": False})
    for flag, value in (("DISABLE_MODELS_FETCH", "1"), ("DISABLE_AUTOUPDATE", "1"),
                        ("TELEMETRY_LEVEL", "off"), ("NO_DAEMON", "1")):
        env[f"KILO_{flag}"] = value
    env.update({
        "KILO_BIN": str(agent_bins.kilo), "PYTHONPATH": str(REPO_ROOT / "src"), "COLUMNS": "500",
        "KILO_LOOP_TRANSPORT": transport,
        # The global names: the loop hands them to the child under its own names.
        "OPENAI_BASE_URL": f"http://127.0.0.1:{fake_provider.port}/v1", "OPENAI_API_KEY": KEY,
    })
    command = [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--no-dashboard",
               "--goal-text", "Record that the injected provider ran", "-n", "2", "--model", f"loop/{MODEL_ID}"]
    done = subprocess.run(command, cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=300, check=False)

    described = f"exit {done.returncode}\n--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-3000:]}"
    assert done.returncode == 0, described
    assert (project / "ran.txt").read_text() == "via-injected-provider\n"
    chats = [r for r in fake_provider.requests if r.is_chat]
    assert chats and all(r.authorization == f"Bearer {KEY}" for r in chats), described
    assert KEY not in done.stdout and KEY not in done.stderr
    assert files_containing(project / ".kilocode-loop", KEY) == []
    assert files_containing(project, KEY) == []
