"""The warm server's password out of the agent's reach.

`kilo serve` / `opencode serve` take their password from the environment only, so it sits in
`/proc/<server>/environ`, which any process of the same user may read — every command the agent
runs is one. The jailed server therefore gets a `SHELL` of the loop's: a two-line wrapper that runs
each command in a user namespace of its own (`unshare --user`). The kernel lets a process read
another's environment, memory or descriptors only from the same user namespace (or with
CAP_SYS_PTRACE over it, which a jailed process never has), so the command still writes the project
and reaches the network as before, but the server's secrets are out of reach. The CLIs strip the
password from the environment they give their commands themselves.

Probed once per bubblewrap binary: a kernel or a distribution that forbids nested user namespaces
leaves the wrapper out, with a warning that says what it means.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from kilo_loop.sandbox.probe import PROBE_ARGS, probed

WRAPPER_DIR = "kl-tool-shell"
# Shells the CLIs accept for their bash tool (they look at the name): the wrapper keeps the user's.
_POSIX_SHELLS = frozenset({"bash", "zsh", "sh", "dash", "ksh"})


def real_shell(user_shell: str | None) -> str:
    """The shell the wrapper runs: the user's when the CLIs accept it, else bash, else sh."""
    if user_shell and Path(user_shell).name in _POSIX_SHELLS and Path(user_shell).is_absolute():
        return user_shell
    return shutil.which("bash") or "/bin/sh"


def wrapper_text(unshare: str, shell: str) -> str:
    return f'#!/bin/sh\nexec {unshare} --user -- {shell} "$@"\n'


def write_tool_shell(directory: Path, unshare: str, user_shell: str | None) -> Path:
    """The wrapper, named like the shell it runs (the CLIs pick their shell flags by name)."""
    shell = real_shell(user_shell)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / Path(shell).name
    text = wrapper_text(unshare, shell)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return path  # a restarted server's: written once per run
    path.unlink(missing_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o555)
    return path


def probe_nested_userns(bwrap: str) -> str | None:
    """Why a command in the jail cannot get a user namespace of its own, or None when it can."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "`unshare` (util-linux) is not installed"
    args = [*PROBE_ARGS[:-1], unshare, "--user", "--", "true"]
    try:
        done = subprocess.run([bwrap, *args], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


def unshare_binary() -> str | None:
    found = shutil.which("unshare")
    return os.path.realpath(found) if found else None


def nested_userns(bwrap: str) -> tuple[str | None, str | None]:
    """(the `unshare` binary the wrapper runs, or None; why not) — probed once per bubblewrap install."""
    unshare = unshare_binary()
    complaint = probed(bwrap, "userns", lambda: probe_nested_userns(bwrap))
    if unshare is None or complaint is not None:
        return None, complaint or "`unshare` (util-linux) is not installed"
    return unshare, None
