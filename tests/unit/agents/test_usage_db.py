"""Usage from kilo's own database: discovery order, read-only reading, and 'usage unavailable'."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from kilo_loop.agent.kilo.backend import KiloBackend
from kilo_loop.agent.kilo.runtime import KILO, OPENCODE
from kilo_loop.agent.kilo.usage import cli_db_path, default_db, discover_db, read_usage
from kilo_loop.agent.protocol import AgentRequest
from kilo_loop.agent.usage_db import DbUsage, UsageUnavailable, mismatch, usage_from_db

# The two tables the reader uses, as kilo 7.7.7 creates them (columns it does not read left out).
SCHEMA = """
CREATE TABLE session (id text PRIMARY KEY, title text NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
                      time_updated integer NOT NULL, data text NOT NULL);
"""


def assistant(tokens: int, cost: float) -> str:
    return json.dumps({"role": "assistant", "cost": cost,
                       "tokens": {"total": tokens, "input": tokens - 5, "output": 5, "reasoning": 0,
                                  "cache": {"write": 0, "read": 0}}})


def make_db(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute("INSERT INTO session VALUES ('ses_a', 'kilo-loop r1 #1: Stage'), ('ses_b', 'other')")
    rows = [("m1", "ses_a", 100, json.dumps({"role": "user"})), ("m2", "ses_a", 110, assistant(300, 0.01)),
            ("m3", "ses_a", 120, assistant(200, 0.02)), ("m4", "ses_b", 130, assistant(999, 9.0)),
            ("m5", "ses_a", 50, assistant(7, 0.5))]
    db.executemany("INSERT INTO message VALUES (?, ?, ?, ?, ?)", [(i, s, t, t, d) for i, s, t, d in rows])
    db.commit()
    db.close()
    return path


def test_sums_the_sessions_assistant_messages_since_the_iteration_started(tmp_path: Path) -> None:
    db = make_db(tmp_path / "kilo.db")
    reading = read_usage(db, session_id="ses_a", title=None, since_ms=100)
    assert isinstance(reading, DbUsage)
    assert (reading.tokens, round(reading.cost, 6), reading.messages) == (500, 0.03, 2)


def test_the_title_finds_the_session_when_the_stream_reported_no_id(tmp_path: Path) -> None:
    db = make_db(tmp_path / "kilo.db")
    reading = read_usage(db, session_id="ses_unknown", title="kilo-loop r1 #1: Stage")
    assert isinstance(reading, DbUsage) and reading.tokens == 507


def test_the_database_is_opened_read_only(tmp_path: Path) -> None:
    db = make_db(tmp_path / "kilo.db")
    db.chmod(stat.S_IRUSR)
    before = db.read_bytes()
    if os.geteuid() != 0:  # root writes anyway; the mode=ro URI is what keeps the loop from writing
        assert isinstance(read_usage(db, session_id="ses_a", title=None), DbUsage)
    assert isinstance(read_usage(db, session_id="ses_a", title=None), DbUsage)
    assert db.read_bytes() == before
    assert not (tmp_path / "kilo.db-journal").exists() and not (tmp_path / "kilo.db-wal").exists()


@pytest.mark.parametrize("content", [None, b"this is not sqlite at all" * 100, "empty-db"])
def test_missing_corrupt_or_foreign_databases_are_unavailable(tmp_path: Path, content: bytes | str | None) -> None:
    path = tmp_path / "kilo.db"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "empty-db":
        sqlite3.connect(path).execute("CREATE TABLE other (x)").connection.close()
    reading = read_usage(path, session_id="ses_a", title="t")
    assert isinstance(reading, UsageUnavailable) and str(path) in reading.reason


def test_a_session_the_database_does_not_have_is_unavailable(tmp_path: Path) -> None:
    reading = read_usage(make_db(tmp_path / "kilo.db"), session_id="nope", title="nope")
    assert isinstance(reading, UsageUnavailable) and "not in" in reading.reason


def test_discovery_order_setting_then_cli_then_default(tmp_path: Path) -> None:
    fake = tmp_path / "fake-kilo"
    fake.write_text("#!/bin/sh\n[ \"$1 $2\" = \"db path\" ] && echo /from/the/cli/kilo.db\n", encoding="utf-8")
    fake.chmod(0o755)
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    assert discover_db(str(fake), {**env, "KILO_LOOP_USAGE_DB_PATH": "/set/kilo.db"}) == Path("/set/kilo.db")
    assert discover_db(str(fake), env) == Path("/from/the/cli/kilo.db")
    assert discover_db(str(tmp_path / "no-such-kilo"), env) == tmp_path / ".local" / "share" / "kilo" / "kilo.db"
    assert default_db({"XDG_DATA_HOME": "/xdg"}) == Path("/xdg/kilo/kilo.db")


def test_a_cli_without_db_path_gives_none(tmp_path: Path) -> None:
    fake = tmp_path / "old-kilo"
    fake.write_text("#!/bin/sh\necho 'unknown command' >&2\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    assert cli_db_path(str(fake), {"PATH": os.environ.get("PATH", "")}) is None


def test_mismatch_is_a_warning_and_agreement_is_none(tmp_path: Path) -> None:
    usage = DbUsage(500, 0.03, 2, tmp_path / "kilo.db")
    assert mismatch(500, 0.03, usage) is None
    warning = mismatch(400, 0.03, usage)
    assert warning and "400" in warning and "500" in warning


def test_the_loop_asks_the_kilo_backend_and_not_opencode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = make_db(tmp_path / "kilo.db")
    monkeypatch.setenv("KILO_LOOP_USAGE_DB_PATH", str(db))
    request = AgentRequest(prompt="p", cwd=tmp_path, title="kilo-loop r1 #1: Stage")
    reading = usage_from_db(KiloBackend("kilo", KILO), request, "ses_a", 0)
    assert isinstance(reading, DbUsage) and reading.tokens == 507
    assert usage_from_db(KiloBackend("opencode", OPENCODE), request, "ses_a", 0) is None


def test_the_usage_db_reading_can_be_switched_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kilo_loop.settings import load_settings

    assert load_settings({}, tmp_path).usage_db is True
    monkeypatch.setenv("KILO_LOOP_USAGE_DB", "false")
    assert load_settings({}, tmp_path).usage_db is False
