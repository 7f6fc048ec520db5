"""Crash-safe file writes for everything the loop owns."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson


def write_bytes_atomic(path: Path, data: bytes, durable: bool = True) -> None:
    """Write to a temp file in the same directory, fsync it, then rename over `path`.

    A symlink is written through (its target is replaced), the file's mode is kept,
    and the directory is fsynced so the rename itself survives a crash."""
    if path.is_symlink():  # one lstat; a full resolve() costs one per path component, on every write
        path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the rename is still atomic
    finally:
        os.close(fd)


def _mode_for(path: Path) -> int:
    """Keep an existing file's mode; a new file gets the usual 0666 less the umask (mkstemp gives 0600)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_text_atomic(path: Path, text: str, durable: bool = True) -> None:
    """`durable=False` skips the fsyncs: still never torn, but may be lost in a power cut
    (fine for archives that can be regenerated; not for state.json)."""
    write_bytes_atomic(path, text.encode("utf-8"), durable)


def write_json_atomic(path: Path, value: Any, durable: bool = True) -> None:
    write_bytes_atomic(path, orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n", durable)


def read_json(path: Path) -> Any:
    """Read a JSON file; raises ValueError with the path for a broken one."""
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
