"""Usage from kilo's own database, through the real loop and the real kilo CLI: the figures read
from the kilo.db the run wrote match the stream's; a missing or corrupt database is a 'usage
unavailable' warning and the iteration still succeeds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from .conftest import Loop, LoopRun, bash, iteration_marker, write_progress
from .fake_provider import FakeProvider, say

pytestmark = pytest.mark.e2e


def one_stage(loop: Loop, provider: FakeProvider, project: Path, **extra_env: str) -> LoopRun:
    provider.add_turns(
        bash("echo counted > counted.txt"),
        write_progress(project, 1, "stage-1", "done"),
        say("Done."),
        marker=iteration_marker(1),
    )
    return loop.run("kilo", project, "--goal-text", "Count the usage", "-n", "2", extra_env=extra_env)


def test_the_usage_in_kilo_db_matches_the_streams(loop: Loop, fake_provider: FakeProvider, git_project: Path,
                                                  agent_home: Path) -> None:
    run = one_stage(loop, fake_provider, git_project)

    assert run.returncode == 0, run.describe()
    report = run.report(1)
    assert report["tokens"] > 0, run.describe()
    assert report["usageDb"]["tokens"] == report["tokens"], run.describe()
    assert report["usageDb"]["cost"] == pytest.approx(report["cost"])
    assert report["usageDb"]["messages"] >= 3  # bash, progress write, final answer
    assert not [e for e in run.events("warning") if "usage" in e["message"]], run.describe()
    # The figures came from the database kilo wrote under the test's HOME, which the loop left as it was.
    db = agent_home / ".local" / "share" / "kilo" / "kilo.db"
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
        titles = [row[0] for row in conn.execute("SELECT title FROM session")]
    assert any(title.startswith("kilo-loop ") and "#1" in title for title in titles)


@pytest.mark.parametrize("kind", ["missing", "corrupt"])
def test_an_unreadable_database_is_usage_unavailable_and_the_iteration_succeeds(
    loop: Loop, fake_provider: FakeProvider, git_project: Path, tmp_path: Path, kind: str
) -> None:
    db = tmp_path / f"{kind}.db"
    if kind == "corrupt":
        db.write_bytes(b"not a database " * 500)
    run = one_stage(loop, fake_provider, git_project, KILO_LOOP_USAGE_DB_PATH=str(db))

    assert run.returncode == 0, run.describe()
    assert run.state()["status"] == "done"
    assert run.report(1)["outcome"] == "ok" and "usageDb" not in run.report(1)
    warnings = [e["message"] for e in run.events("warning") if "usage unavailable" in e["message"]]
    assert warnings and str(db) in warnings[0], run.describe()
