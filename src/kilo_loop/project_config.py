"""The project's `.kilocode-loop/config.json`, read in one place.

The settings, the guard's own patterns (read without the settings stack, for the pre-tool hook), the
dashboard's launcher (which writes the default verify back) and `kilo-loop init` all read the file
here, so a malformed one is the same error wherever it is met: it names the file and says what to do.
What the keys mean is each reader's business; this only hands over the JSON object. The standard
`json` module, not orjson: the pre-tool hook reads the file, and orjson imports dataclasses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kilo_loop.errors import ConfigError
from kilo_loop.run.layout import LOOP_DIR, ProjectLayout

CONFIG_RELATIVE = Path(LOOP_DIR) / "config.json"
_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "true or false",
          type(None): "null"}


class ConfigFileError(ConfigError):
    """config.json exists but cannot be read as a JSON object; it is left untouched."""


def config_path(project: Path) -> Path:
    return ProjectLayout(project).config


def read_config_file(path: Path) -> dict[str, Any]:
    """The JSON object `path` holds; {} when there is no such file. ConfigFileError when it is not a
    regular file, cannot be read, is not JSON or not an object."""
    if not path.exists():
        return {}
    if not path.is_file():
        raise ConfigFileError(f"{path} is not a file: move it out of the way, or make it a JSON object of settings")
    try:
        raw = json.loads(path.read_bytes())
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot be read ({exc.strerror or exc}): check its permissions") from exc
    except ValueError as exc:  # not JSON, or not UTF-8
        raise ConfigFileError(f"{path}: not valid JSON ({exc}): fix it, or move it out of the way") from exc
    if not isinstance(raw, dict):
        raise ConfigFileError(f"{path}: expected a JSON object of settings ({{\"key\": value, …}}), "
                              f"got {_KINDS.get(type(raw), 'something else')}: fix it, or move it out of the way")
    return raw


def read_project_config(project: Path) -> dict[str, Any]:
    """The project's config.json as a JSON object ({} when there is none)."""
    return read_config_file(config_path(project))
