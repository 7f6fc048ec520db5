"""The built wheel is the whole program: installed into a fresh venv, away from this repository, its
`kilo-loop` runs the README's dry run to the end. The sdist and the wheel pass `twine check`."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Builds the wheel and the sdist and installs the wheel with its dependencies: minutes on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, f"{command[:4]} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def runtime_files() -> set[str]:
    """Every file of the package git tracks that is not Python source: they must all ship."""
    listed = subprocess.run(["git", "ls-files", "src/kilo_loop"], cwd=ROOT, capture_output=True, text=True, check=True)
    return {name.removeprefix("src/") for name in listed.stdout.split() if not name.endswith(".py")}


def test_the_wheel_installs_into_a_fresh_venv_and_runs_a_dry_run(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home"),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "NO_COLOR": "1", **{k: v for k, v in os.environ.items()
                                                                      if k.startswith("PIP_")}}
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], tmp_path, env)
    wheel, = dist.glob("*.whl")
    sdist, = dist.glob("*.tar.gz")
    run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], tmp_path, env)
    assert runtime_files() <= set(zipfile.ZipFile(wheel).namelist())

    venv.create(tmp_path / "venv", with_pip=True)
    run([str(tmp_path / "venv" / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], tmp_path, env)
    kilo_loop = str(tmp_path / "venv" / "bin" / "kilo-loop")
    from kilo_loop import __version__

    assert run([kilo_loop, "--version"], tmp_path, env).stdout.strip() == f"kilo-loop, version {__version__}"

    project = tmp_path / "project"
    project.mkdir()
    run(["git", "init", "-q"], project, env)
    (project / "plan.md").write_bytes((ROOT / "examples" / "goal.example.md").read_bytes())
    done = run([kilo_loop, "--dry-run", "--goal", "plan.md", "-n", "4", "--no-confirm", "--no-dashboard",
                "--answer-timeout", "1s"], project, env, timeout=300)
    assert "Tidy the README" in done.stdout and "status done" in done.stdout
    runs = list((project / ".kilocode-loop" / "runs").iterdir())
    assert len(runs) == 1 and (runs[0] / "report.md").is_file()
