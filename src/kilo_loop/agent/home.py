"""`--isolate-home`: the agent runs with HOME and XDG_* under the run directory (mode 0700),
for operators who do not want the agent touching their real config."""

from __future__ import annotations

import os
from pathlib import Path

from kilo_loop.agent.protocol import AgentPolicy

XDG_DIRS = {"XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share", "XDG_STATE_HOME": ".local/state",
            "XDG_CACHE_HOME": ".cache"}


def home_dir(run_dir: Path) -> Path:
    return run_dir / "agent-home"


def make_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def isolated_home_env(policy: AgentPolicy) -> dict[str, str]:
    """HOME/XDG_* entries for the child (created 0700), or {} when isolation is off."""
    if not policy.isolate_home:
        return {}
    if policy.run_dir is None:
        raise ValueError("--isolate-home needs a run directory")
    home = home_dir(policy.run_dir)
    make_private_dir(home)
    env = {"HOME": str(home)}
    for name, relative in XDG_DIRS.items():
        path = home / relative
        make_private_dir(path)
        env[name] = str(path)
    return env
