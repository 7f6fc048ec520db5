"""Pre-flight through the real entry point: before a real run, the agent CLI's help must list the
flags the loop passes. A CLI lacking one is a clear error (exit 2) before anything is written;
the answer is cached per binary, so the next run does not ask its help again; `--dry-run` and
`KILO_LOOP_PREFLIGHT=0` skip it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.integration.loop_harness import REPO

FULL_HELP = "  --format  --auto  --agent  --model  --variant  --thinking  --title  -s, --session  "


def fake_kilo(directory: Path, help_text: str = FULL_HELP) -> tuple[Path, Path]:
    """A `kilo` that logs each invocation, answers `run --help`, and fails any session at once."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "calls.log"
    script = directory / "kilo"
    script.write_text(f"""#!/bin/sh
echo "$*" >> '{log}'
case "$1 $2" in
  "run --help") echo '{help_text}' ;;
  "--version "*) echo 7.7.7 ;;
  *) echo 'scripted failure' >&2; exit 1 ;;
esac
""", encoding="utf-8")
    script.chmod(0o755)
    return script, log


def loop(project: Path, binary: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("KILO_LOOP_")}
    full.update({"PYTHONPATH": str(REPO / "src"), "KILO_BIN": str(binary), "KILO_LOOP_TRANSPORT": "run",
                 "KILO_LOOP_USAGE_DB": "false", "XDG_CACHE_HOME": str(project.parent / "cache"),
                 "NO_COLOR": "1", "KILO_LOOP_SANDBOX": "off", **env})
    return subprocess.run([sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-dashboard", "--no-confirm",
                           "--goal-text", "write a.txt", *args], cwd=project, env=full, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_cli_without_the_loops_flags_stops_the_run_before_anything_is_written(project: Path,
                                                                                tmp_path: Path) -> None:
    binary, log = fake_kilo(tmp_path / "old", FULL_HELP.replace("-s, --session", ""))
    result = loop(project, binary)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "pre-flight failed" in result.stderr and "--session" in result.stderr
    assert "fix: upgrade kilo" in result.stderr and "kilo-loop doctor" in result.stderr
    assert calls(log) == ["run --help"]  # no session was started
    assert not (project / ".kilocode-loop").exists()


def test_a_passing_check_is_cached_per_binary_until_the_binary_changes(project: Path, tmp_path: Path) -> None:
    binary, log = fake_kilo(tmp_path / "new")
    first = loop(project, binary, "-n", "1", "--no-retry")
    assert "pre-flight" not in first.stderr, first.stderr
    assert calls(log)[0] == "run --help" and len(calls(log)) > 1  # then the session itself
    cache = json.loads((tmp_path / "cache" / "kilo-loop" / "preflight.json").read_text())
    assert len(cache["help"]) == 1 and "--session" in next(iter(cache["help"].values()))

    log.unlink()
    loop(project, binary, "-n", "1", "--no-retry")
    assert "run --help" not in calls(log)  # answered from the cache

    log.unlink()
    binary.write_text(binary.read_text().replace(" -s, --session ", " "), encoding="utf-8")  # an "upgrade"
    result = loop(project, binary, "-n", "1", "--no-retry")
    assert result.returncode == 2 and "--session" in result.stderr
    assert calls(log) == ["run --help"]


def test_dry_run_and_the_switch_skip_it(project: Path, tmp_path: Path) -> None:
    binary, log = fake_kilo(tmp_path / "old", FULL_HELP.replace("--model", ""))
    assert loop(project, binary, "--dry-run", "-n", "1").returncode == 0
    assert calls(log) == []
    switched = loop(project, binary, "-n", "1", "--no-retry", KILO_LOOP_PREFLIGHT="0")
    assert "pre-flight" not in switched.stderr and "run --help" not in calls(log)
