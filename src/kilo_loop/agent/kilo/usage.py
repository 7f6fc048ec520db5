"""Usage from kilo's own database (issue 11, seed 001): a second opinion on the stream's figures.

Where the database is: `KILO_LOOP_USAGE_DB_PATH`, else what `kilo db path` prints, else
`~/.local/share/kilo/kilo.db`. It is opened read-only (an sqlite `mode=ro` URI: the loop never
writes to it). The iteration's session is found by the id the stream reported or else by the
loop's unique session title; the tokens and cost of its assistant messages created since the
iteration started are summed. Anything missing or of another shape is `UsageUnavailable` with the
reason, never an exception: the iteration's outcome does not depend on it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Mapping
from pathlib import Path

from kilo_loop.agent.usage_db import DbUsage, UsageReading, UsageUnavailable

DB_PATH_ENV = "KILO_LOOP_USAGE_DB_PATH"
_DB_PATH_TIMEOUT_S = 15.0


def default_db(environ: Mapping[str, str]) -> Path:
    data = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".local" / "share")
    return Path(data) / "kilo" / "kilo.db"


def cli_db_path(binary: str, env: Mapping[str, str]) -> Path | None:
    """What `<kilo> db path` prints (None when the CLI has no such command or fails)."""
    try:
        done = subprocess.run([binary, "db", "path"], env=dict(env), capture_output=True, text=True,
                              timeout=_DB_PATH_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return Path(lines[-1]) if done.returncode == 0 and lines and lines[-1].endswith(".db") else None


def discover_db(binary: str | None, env: Mapping[str, str]) -> Path:
    """The discovery order of seed 001: the setting, the CLI's own answer, the historical path."""
    if env.get(DB_PATH_ENV):
        return Path(env[DB_PATH_ENV])
    found = cli_db_path(binary, env) if binary else None
    return found or default_db(env)


def _session_ids(db: sqlite3.Connection, session_id: str | None, title: str | None) -> list[str]:
    if session_id:
        rows = db.execute("SELECT id FROM session WHERE id = ?", (session_id,)).fetchall()
        if rows:
            return [row[0] for row in rows]
    if title:
        return [row[0] for row in db.execute("SELECT id FROM session WHERE title = ?", (title,))]
    return []


def _sum_assistant(db: sqlite3.Connection, ids: list[str], since_ms: int) -> tuple[int, float, int]:
    tokens, cost, count = 0, 0.0, 0
    marks = ",".join("?" * len(ids))
    query = f"SELECT data FROM message WHERE session_id IN ({marks}) AND time_created >= ?"
    for (raw,) in db.execute(query, (*ids, since_ms)):
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("role") != "assistant":
            continue
        usage = data.get("tokens") or {}
        tokens += int(usage.get("total") or 0)
        cost += float(data.get("cost") or 0.0)
        count += 1
    return tokens, cost, count


def read_usage(db_path: Path, *, session_id: str | None, title: str | None, since_ms: int = 0) -> UsageReading:
    """The session's assistant tokens and cost since `since_ms` (epoch ms), read-only."""
    if not db_path.is_file():
        return UsageUnavailable(f"no usage database at {db_path}")
    try:
        db = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error as exc:
        return UsageUnavailable(f"cannot open {db_path}: {exc}")
    try:
        ids = _session_ids(db, session_id, title)
        if not ids:
            return UsageUnavailable(f"session {session_id or title!r} is not in {db_path}")
        tokens, cost, count = _sum_assistant(db, ids, since_ms)
    except (sqlite3.Error, ValueError, TypeError, AttributeError) as exc:
        return UsageUnavailable(f"{db_path} is not a kilo usage database this loop can read ({exc})")
    finally:
        db.close()
    return DbUsage(tokens, cost, count, db_path)
