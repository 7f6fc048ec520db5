"""git in the temporary repositories tests make, with a test identity that needs no git config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {"GIT_AUTHOR_NAME": "kilo-loop tests", "GIT_AUTHOR_EMAIL": "tests@kilo-loop.invalid",
            "GIT_COMMITTER_NAME": "kilo-loop tests", "GIT_COMMITTER_EMAIL": "tests@kilo-loop.invalid"}


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; its standard output, or CalledProcessError (with stderr) when it fails."""
    return subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **IDENTITY}, check=True,
                          capture_output=True, text=True).stdout
