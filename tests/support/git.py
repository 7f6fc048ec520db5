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


def private_git_config(directory: Path, *, allow_file_protocol: bool = False) -> dict[str, str]:
    """Environment for a git that reads only a config written in `directory` (identity, `main` as
    the first branch), never the machine's or the user's."""
    config = directory / "config"
    text = "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
    config.write_text(text + ('[protocol "file"]\n\tallow = always\n' if allow_file_protocol else ""))
    return {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1"}


def write(path: Path, content: str | bytes) -> None:
    """Write a file, making its folders; bytes as they are, text as UTF-8."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


def make_repo(path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    """A git repository at `path` with `files` (default: a README) in one commit."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, content in (files or {"README.md": "hello\n"}).items():
        write(path / name, content)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path
