"""Seed 001: a usage mismatch between the stream and kilo's own database is a warning in the
iteration's NN-report.json too, not only on the console and in the events."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.integration.loop_harness import FakeKilo, done_iteration, run_loop
from tests.unit.agents.test_usage_db import SCHEMA, assistant


def test_the_mismatch_warning_lands_in_the_iteration_report(project: Path, fake: FakeKilo, tmp_path: Path) -> None:
    db_path = tmp_path / "kilo.db"
    db = sqlite3.connect(db_path)
    db.executescript(SCHEMA)
    db.execute("INSERT INTO session VALUES ('ses_fake0000', 'kilo-loop')")
    far = 10**14  # after the iteration started, whenever the test runs
    db.execute("INSERT INTO message VALUES ('m1', 'ses_fake0000', ?, ?, ?)", (far, far, assistant(77_777, 1.5)))
    db.commit()
    db.close()
    run = run_loop(fake, project, [done_iteration("stage-1")], "--goal-text", "Count it", "-n", "1",
                   env={"KILO_LOOP_USAGE_DB": "true", "KILO_LOOP_USAGE_DB_PATH": str(db_path)})
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    report = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert report.get("usageDb", {}).get("tokens") == 77_777, run.proc.stdout
    assert any(w.startswith("usage mismatch: the stream reported") for w in report["warnings"]), report["warnings"]
