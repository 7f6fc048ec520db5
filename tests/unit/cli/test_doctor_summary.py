"""`kilo-loop doctor` over every backend: one installed agent CLI is enough, the summary says which a
run would use, and a *_BIN naming a missing file is named."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kilo_loop.doctor.checks import agent_clis, binary
from kilo_loop.doctor.probe import run_checks


def test_none_installed_is_one_failure_naming_the_pick() -> None:
    check = agent_clis([], ["kilo", "claude"], "kilo", "npm install -g @kilocode/cli")
    assert check.status == "fail" and "one is enough, and a run would use kilo" in check.detail
    assert check.fix.startswith("npm install -g @kilocode/cli")


def test_one_installed_is_enough() -> None:
    check = agent_clis(["claude"], ["kilo"], "claude", "x")
    assert check.status == "ok" and check.detail == "claude installed (one is enough); a run would use claude; " \
        "not installed: kilo"
    assert agent_clis(["claude"], ["kilo"], "kilo", "npm i").status == "fail"  # the run's pick is missing


def test_a_bin_variable_naming_a_missing_file_is_named() -> None:
    check = binary("kilo", None, None, "npm install -g @kilocode/cli", "KILO_BIN", "/opt/nope/kilo")
    assert check.detail == "not found: KILO_BIN names /opt/nope/kilo"


def test_every_backend_without_any_installed(tmp_path: Path) -> None:
    environ = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    rows = run_checks(("kilo", "opencode", "claude"), 0, tmp_path, environ, picked="kilo")
    assert [row.check for row in rows][:1] == ["agent CLIs"]
    assert not any(row.check.endswith(": binary") for row in rows)  # no failure per missing CLI


def test_every_backend_with_a_missing_kilo_bin(tmp_path: Path) -> None:
    environ = {"PATH": f"{tmp_path}:{os.path.dirname(sys.executable)}", "HOME": str(tmp_path),
               "KILO_BIN": str(tmp_path / "gone" / "kilo")}
    rows = run_checks(("kilo", "claude"), 0, tmp_path, environ, picked="kilo")
    assert any(row.check == "kilo: binary" and "KILO_BIN names" in row.detail for row in rows)
