"""A steered run (a fleet worker's, a parallel plan's) through the real CLI: a command its parent
wrote before the run's process was up — a fleet worker hands on what Redis holds while the plan
starts — is taken, not skipped as an earlier process's."""

from __future__ import annotations

from pathlib import Path

from kilo_loop.fleet.inbox import INBOX_FILE, TAKEN_FILE, InboxCommand, append_command
from tests.integration.loop_harness import FakeKilo, run_loop
from tests.integration.test_review_loop import implement, write_goal


def test_a_note_sent_before_the_run_started_reaches_it(project: Path, fake: FakeKilo) -> None:
    run_dir = project / ".kilocode-loop" / "runs" / "steered-1"
    append_command(run_dir, InboxCommand("note", text="keep the public API unchanged"))
    run = run_loop(fake, project, [implement()], "--goal", str(write_goal(project)), "--run-id", "steered-1",
                   "-n", "1", env={"KILO_LOOP_INBOX": "1"})
    assert run.proc.returncode == 0, run.proc.stdout + run.proc.stderr
    queued = [e["data"] for e in run.events() if e["type"] == "note-queued"]
    assert [(n["text"], n["source"]) for n in queued] == [("keep the public API unchanged", "fleet")], queued
    assert int((run_dir / TAKEN_FILE).read_text()) == (run_dir / INBOX_FILE).stat().st_size
