"""The pure parts of the hand-over: which paths a stage commits, its message, the run's branch name,
--commit-author."""

from __future__ import annotations

import pytest

from kilo_loop.finish.commits import FinishError, author_env
from kilo_loop.finish.finisher import run_branch_name
from kilo_loop.finish.message import commit_message
from kilo_loop.finish.paths import stage_paths
from kilo_loop.run.receipts import StageReceipt


def test_a_stage_commits_its_changes_but_not_the_users_work_in_progress_nor_the_loops_files() -> None:
    split = stage_paths(
        changed=["src/a.py", "notes.txt", ".kilocode-loop/progress.json", "plans/work.md", "src/b.py"],
        dirty_at_start=["notes.txt", "old.txt"], loop_files=["plans/work.md"])
    assert split.commit == ("src/a.py", "src/b.py")
    assert split.left_out == ("notes.txt",)


def test_the_message_is_the_title_the_receipt_and_the_trailers() -> None:
    receipt = StageReceipt("s2", "Wire   the parser\ninto the CLI", "done", iterations=[3, 4], duration_ms=61_400,
                           tokens=12_345, cost=0.0421, verify="passed", verify_command="pytest -q", review="pass")
    files = [f"src/f{n}.py" for n in range(23)]
    message = commit_message(receipt, "20261202-010203-0001", files)
    lines = message.splitlines()
    assert lines[0] == "Wire the parser into the CLI" and lines[1] == ""
    assert "Changed 23 file(s):" in lines and "  … and 3 more" in lines and "  src/f19.py" in lines
    assert "Verify: `pytest -q` passed" in lines and "Review: pass" in lines
    assert "Iterations: 2 (3, 4) · 61 s · 12,345 tokens · $0.0421" in lines
    assert lines[-2:] == ["Kilo-Loop-Run: 20261202-010203-0001", "Kilo-Loop-Stage: s2"]


def test_a_stage_without_verify_says_so() -> None:
    message = commit_message(StageReceipt("s1", "Docs", "done"), "r", ["README.md"])
    assert "Verify: none (the stage has no verify command)" in message


def test_the_runs_branch_is_named_after_the_goal() -> None:
    assert run_branch_name("Add a --json flag to export!", "r1") == "kilo-loop/add-a-json-flag-to-export-r1"
    assert run_branch_name("???", "r1") == "kilo-loop/run-r1"
    assert len(run_branch_name("x" * 200, "r1")) == len("kilo-loop/") + 40 + len("-r1")


def test_commit_author() -> None:
    assert author_env("Ada Lovelace <ada@example.com>") == {"GIT_AUTHOR_NAME": "Ada Lovelace",
                                                             "GIT_AUTHOR_EMAIL": "ada@example.com"}
    assert author_env(None) == {}
    for bad in ("Ada", "<ada@example.com>", "Ada <>"):
        with pytest.raises(FinishError, match="is not `Name <email>`"):
            author_env(bad)
