"""`kilo-loop doctor --runtime kilo` against the real pinned kilo CLI, through the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO_ROOT, AgentBins
from .fake_provider import isolated_dirs

pytestmark = pytest.mark.e2e


def test_doctor_passes_every_kilo_check_against_the_real_cli(agent_bins: AgentBins, agent_home: Path,
                                                              tmp_path: Path) -> None:
    env = {name: os.environ[name] for name in ("PATH", "TMPDIR", "LANG") if name in os.environ}
    env.update(isolated_dirs(agent_home))
    env.update({"KILO_BIN": str(agent_bins.kilo), "PYTHONPATH": str(REPO_ROOT / "src"),
                "KILO_DISABLE_AUTOUPDATE": "1", "KILO_TELEMETRY_LEVEL": "off", "KILO_DISABLE_MODELS_FETCH": "1"})
    # A database kilo itself wrote: one `kilo db` query creates and migrates it.
    subprocess.run([str(agent_bins.kilo), "db", "SELECT 1"], env=env, cwd=tmp_path, capture_output=True,
                   timeout=120, check=False, stdin=subprocess.DEVNULL)
    done = subprocess.run([sys.executable, "-m", "kilo_loop", "doctor", "--runtime", "kilo", "--json", "--port", "0",
                           "-C", str(tmp_path)], env=env, capture_output=True, text=True, timeout=300, check=False)

    rows = json.loads(done.stdout)
    statuses = {row["check"]: row["status"] for row in rows}
    assert done.returncode == 0, done.stdout + done.stderr
    assert statuses == {
        "kilo: binary": "ok", "kilo: flags the loop uses": "ok", "kilo: provider injection": "ok",
        "kilo: server transport": "ok", "kilo: usage database": "ok",
        "git": "ok", "dashboard port": "ok", "python": "ok", "dependencies": "ok",
        "sandbox": "ok",  # bubblewrap: installed here and by .ci/run
        "sandbox network": "ok",  # a round trip through the loop's proxy from a jail with its own network
    }, done.stdout
    assert "7.7.7" in next(row["detail"] for row in rows if row["check"] == "kilo: binary")
    assert "kilo-loop-doctor-probe" not in done.stdout + done.stderr  # debug config's output is never echoed


def test_doctor_without_the_cli_on_path_fails(agent_home: Path, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT / "src"), **isolated_dirs(agent_home)}
    done = subprocess.run([sys.executable, "-m", "kilo_loop", "doctor", "--runtime", "kilo", "--port", "0"],
                          env=env, capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 1
    assert "✗ kilo: binary: not found" in done.stdout
