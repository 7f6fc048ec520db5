"""The `./kilo-loop` launcher makes its venv showing what pip is doing, then runs the CLI; a failed
install shows the end of pip's log. Run on a copy of the launcher beside a tiny stand-in package
(no dependencies), so the real install is not redone."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Each test makes a venv and runs pip: a minute or more on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

PYPROJECT = """[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "kilo-loop-standin"
version = "0.0.1"
dependencies = [{dependencies}]

[project.scripts]
kilo-loop = "standin:main"
"""


def standin(tmp_path: Path, dependencies: str = "") -> Path:
    repo = tmp_path / "clone"
    (repo / "src").mkdir(parents=True)
    shutil.copy2(ROOT / "kilo-loop", repo / "kilo-loop")
    (repo / "pyproject.toml").write_text(PYPROJECT.format(dependencies=dependencies))
    (repo / "src" / "standin.py").write_text("import sys\ndef main():\n    print('stand-in ran', sys.argv[1:])\n")
    return repo


def launch(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if k.startswith("PIP_")},
           "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    return subprocess.run([str(repo / "kilo-loop"), "--flag"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL, check=False)


def test_the_launcher_shows_progress_then_runs_the_cli(tmp_path: Path) -> None:
    repo = standin(tmp_path)
    first = launch(repo, tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "stand-in ran ['--flag']\n"
    assert "creating the virtual environment" in first.stderr
    assert "s · " in first.stderr and " packages · " in first.stderr  # at least one progress line
    assert "kilo-loop: installed" in first.stderr
    again = launch(repo, tmp_path)
    assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")


def test_a_failed_install_shows_the_end_of_pips_log(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-checkout"  # a local path: no registry is asked
    repo = standin(tmp_path, dependencies=f'"kilo-loop-missing @ {missing.as_uri()}"')
    done = launch(repo, tmp_path)
    assert done.returncode != 0
    assert "installing into" in done.stderr and "failed (pip exit" in done.stderr
    assert "no-such-checkout" in done.stderr
