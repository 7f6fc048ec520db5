"""Does Codex's own sandbox run a command here? `codex sandbox -- true` with the run's environment.

Once bubblewrap is installed, Codex (0.169.0 checked) sandboxes its commands with it; with
`CODEX_HOME` under a temporary directory it cannot find its helper inside that sandbox and runs no
command at all (`bwrap: execvp codex-linux-sandbox: No such file or directory`; openai/codex #24341,
#20906). Inside the loop's jail Codex's sandbox is switched off in favour of the jail; outside it,
a broken sandbox must be reported before the run, not discovered as a run of failed commands.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

FIX = ("run with the loop's jail (--sandbox auto or bwrap: Codex's own sandbox is then switched off in its "
       "favour), or point CODEX_HOME at a directory outside /tmp")


def sandbox_complaint(binary: str, env: Mapping[str, str]) -> str | None:
    """Codex's complaint when its sandbox cannot run `true`; None when it can."""
    try:
        done = subprocess.run([binary, "sandbox", "--", "true"], env=dict(env), capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in (done.stderr + done.stdout).splitlines()
             if line.strip() and not line.startswith(("WARNING", "Stack backtrace")) and not line.strip()[0].isdigit()]
    return lines[-1] if lines else f"exit {done.returncode}"
