"""The project's kilo / opencode config files as they were when the run's server first started, so
the loop can put them back: the server's `PATCH /config` writes the project's `.kilo/kilo.jsonc`, and
an agent that reached the server's API could make every command `allow` for the rest of the run."""

from __future__ import annotations

import contextlib
from pathlib import Path

from kilo_loop.agent.kilo.runtime import RuntimeName

CONFIG_NAMES = ("kilo.json", "kilo.jsonc", ".kilo/kilo.json", ".kilo/kilo.jsonc", ".kilo/config.json",
                "opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc",
                ".opencode/config.json")
Snapshot = dict[Path, bytes | None]


def config_files(project: Path, runtime: RuntimeName) -> tuple[Path, ...]:
    prefixes = ("kilo", ".kilo/") if runtime == "kilo" else ("opencode", ".opencode/")
    return tuple(project / name for name in CONFIG_NAMES if name.startswith(prefixes))


def snapshot(paths: tuple[Path, ...]) -> Snapshot:
    taken: Snapshot = {}
    for path in paths:
        try:
            taken[path] = path.read_bytes() if path.is_file() else None
        except OSError:
            taken[path] = None
    return taken


def restore(taken: Snapshot) -> list[Path]:
    """Put each file back as it was (a file that did not exist is removed); the paths that changed."""
    changed = []
    for path, content in taken.items():
        current = snapshot((path,))[path]
        if current == content:
            continue
        changed.append(path)
        with contextlib.suppress(OSError):
            if content is None:
                path.unlink()
            else:
                path.write_bytes(content)
    return changed
