"""`<run dir>/api.json`: where a live run's dashboard API answers and its token, so a command of the same
user on the same machine (`kilo-loop note`) can steer the run through the one API. Written 0600 when a
dashboard adopts a run, removed when the dashboard stops; never printed or served."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from kilo_loop.errors import KiloLoopError

API_FILE = "api.json"


class NoRunApi(KiloLoopError):
    """The run has no dashboard API to talk to (never had one, or its process ended)."""


@dataclass(frozen=True)
class RunApi:
    url: str  # the dashboard's base URL, ending in /
    token: str
    pid: int

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def write_api_file(run_dir: Path, url: str, token: str) -> None:
    path = run_dir / API_FILE
    data = orjson.dumps({"url": url, "token": token, "pid": os.getpid()})
    fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(path.with_suffix(".tmp"), path)


def remove_api_file(run_dir: Path) -> None:
    with contextlib.suppress(OSError):
        (run_dir / API_FILE).unlink()


def read_api_file(run_dir: Path) -> RunApi:
    path = run_dir / API_FILE
    try:
        raw = orjson.loads(path.read_bytes())
        api = RunApi(str(raw["url"]), str(raw["token"]), int(raw["pid"]))
    except FileNotFoundError:
        raise NoRunApi(f"run {run_dir.name} has no dashboard to steer it through: it is not running, or it runs "
                       "with --no-dashboard (steer it from its terminal instead)") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NoRunApi(f"cannot read {path}: {exc}") from None
    if not api.alive():
        raise NoRunApi(f"run {run_dir.name} is not running any more (its process {api.pid} ended): "
                       f"--resume it to send a note")
    return api
