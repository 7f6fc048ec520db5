"""Does bubblewrap work on this machine? Probed once per bwrap binary (its path, size and mtime) and
cached beside pre-flight's answers, so a run pays for the probe once per install, not once per run.

The probe runs `true` in a jail shaped like the real one (read-only root, private /tmp and /proc,
new PID and IPC namespaces, capabilities dropped): where user namespaces are off for an ordinary
user, or a container forbids mounts, it fails here with bubblewrap's own message.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kilo_loop.doctor.preflight import binary_key, cache_file

CACHE_NAME = "sandbox.json"
USERNS_HINT = ("user namespaces may be off (`sysctl kernel.unprivileged_userns_clone=1`, or AppArmor's "
               "`kernel.apparmor_restrict_unprivileged_userns=0`); or run with --sandbox off")
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install bubblewrap`, "
                "Arch: `pacman -S bubblewrap`), or run with --sandbox off")
PROBE_ARGS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-pid",
              "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL", "--", "true")


@dataclass(frozen=True)
class BwrapStatus:
    binary: str | None
    usable: bool
    reason: str = ""  # why not
    fix: str = ""

    @property
    def problem(self) -> str:
        """Why not, and what to do."""
        return f"{self.reason}: {self.fix}" if self.fix else self.reason

    @property
    def summary(self) -> str:
        return f"bubblewrap works ({self.binary})" if self.usable else self.reason


def _cache_path(environ: Mapping[str, str]) -> Path:
    return cache_file(environ).with_name(CACHE_NAME)


def _cached(path: Path, key: str) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get(key) is True


def _remember(path: Path, key: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(f".{os.getpid()}.tmp")
        temp.write_text(json.dumps({key: True}), encoding="utf-8")
        temp.replace(path)
    except OSError:
        pass  # the next run probes again


def run_probe(binary: str) -> str | None:
    """bubblewrap's complaint, or None when `true` ran in the jail."""
    try:
        done = subprocess.run([binary, *PROBE_ARGS], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


def probed(binary: str, name: str, check: Callable[[], str | None], environ: Mapping[str, str] | None = None) -> str | None:
    """A further check of what the jail can do here (`name`), cached like the probe when it passes:
    the complaint, or None."""
    env = os.environ if environ is None else environ
    key = binary_key("bwrap", binary)
    path = _cache_path(env).with_name(f"sandbox-{name}.json")
    if key is not None and _cached(path, key):
        return None
    complaint = check()
    if complaint is None and key is not None:
        _remember(path, key)
    return complaint


def probe_bwrap(environ: Mapping[str, str] | None = None, use_cache: bool = True) -> BwrapStatus:
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux"):
        return BwrapStatus(None, False, f"the jail needs Linux (bubblewrap); this is {sys.platform}",
                           "run with --sandbox off")
    binary = shutil.which("bwrap", path=env.get("PATH"))
    if binary is None:
        return BwrapStatus(None, False, "bubblewrap (bwrap) is not installed", INSTALL_HINT)
    key = binary_key("bwrap", binary)
    path = _cache_path(env)
    if use_cache and key is not None and _cached(path, key):
        return BwrapStatus(binary, True)
    complaint = run_probe(binary)
    if complaint is not None:
        return BwrapStatus(binary, False, f"bubblewrap cannot start a jail here ({complaint})", USERNS_HINT)
    if key is not None:
        _remember(path, key)
    return BwrapStatus(binary, True)
