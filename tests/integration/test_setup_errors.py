"""Problems found before a run starts: a clear one-line error, a non-zero exit, nothing created."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.loop_harness import REPO, FakeKilo, done_iteration, run_loop


def cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", ""))
                                                         if p), **(env or {})}
    return subprocess.run([sys.executable, "-m", "kilo_loop", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)


def nothing_created(project: Path) -> bool:
    return not (project / ".kilocode-loop").exists()


def test_project_that_is_not_a_git_repo(tmp_path: Path) -> None:
    result = cli(["--goal-text", "x", "--no-dashboard", "-C", str(tmp_path)], tmp_path)
    assert result.returncode == 2
    assert "not inside a git repository" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert nothing_created(tmp_path)


def test_missing_agent_binary(project: Path) -> None:
    result = cli(["--goal-text", "x", "--no-dashboard", "--no-confirm"], project,
                 {"KILO_BIN": "/nonexistent/kilo", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 2 and "agent CLI not found" in result.stderr
    assert nothing_created(project)


@pytest.mark.parametrize("name, body, needle", [
    ("goal.json", '{"title": "t", "stages": [', "line 1"),
    ("goal.json", '{"title": "t", "stages": []}', "no stages"),
    ("goal.json", '{"title": "t", "stages": [{"title": "a", "done": "yes"}]}', "done"),
    ("goal.md", "# Title only\n\nno checklist\n", "no stages"),
    ("goal.txt", "whatever", "goal.txt"),
])
def test_malformed_goal_fails_before_anything_is_created(project: Path, name: str, body: str, needle: str) -> None:
    goal = project / name
    goal.write_text(body)
    result = cli(["--goal", str(goal), "--dry-run", "--no-dashboard"], project)
    assert result.returncode == 2, result.stderr
    assert str(goal) in result.stderr and needle in result.stderr
    assert nothing_created(project)


def test_missing_goal_file(project: Path) -> None:
    result = cli(["--goal", "nope.md", "--dry-run", "--no-dashboard"], project)
    assert result.returncode == 2 and "nope.md" in result.stderr
    assert nothing_created(project)


def test_wrong_config_value_names_file_and_key(project: Path) -> None:
    (project / ".kilocode-loop").mkdir()
    (project / ".kilocode-loop" / "config.json").write_text('{"maxCost": "lots"}')
    result = cli(["--goal-text", "x", "--dry-run", "--no-dashboard"], project)
    assert result.returncode == 2
    assert "config.json" in result.stderr and "'maxCost'" in result.stderr
    assert not (project / ".kilocode-loop" / "runs").exists()


def test_all_done_goal_needs_force(project: Path, fake: FakeKilo) -> None:
    goal = project / "goal.md"
    goal.write_text("# Done\n- [x] One\n")
    run = run_loop(fake, project, [done_iteration("stage-1", "a")], "--goal", str(goal))
    assert run.proc.returncode == 0 and "already done" in run.proc.stdout and not run.calls
    forced = run_loop(fake, project, [done_iteration("stage-1", "a")], "--goal", str(goal), "--force")
    assert forced.proc.returncode == 0 and len(forced.calls) == 1


def test_review_in_a_dry_run_is_played_by_the_simulator(project: Path) -> None:
    result = cli(["--goal-text", "x", "--dry-run", "--no-dashboard", "--review", "-n", "1", "--hitl", "off"], project,
                 {"KILO_LOOP_DRY_RUN_DELAY": "0"})
    assert result.returncode == 0, result.stderr
    assert "not active yet" not in result.stderr and "reviewer: pass" in result.stdout
    (run,) = (project / ".kilocode-loop" / "runs").iterdir()
    assert (run / "iterations" / "01-review-prompt.md").is_file()


def test_help_lists_the_whole_reference() -> None:
    result = cli(["--help"], REPO)
    for flag in ("--goal-text", "--iterations", "--shared-context", "--session-mode", "--runtime", "--verify",
                 "--max-guard-blocks", "--retry-max-delay", "--auto-fresh-tokens", "--list-goals", "--lan",
                 "--keep-open", "--resume", "--run-id", "--no-confirm", "--prompt-extra"):
        assert flag in result.stdout, flag
    for command in ("report", "revert", "guard", "redact", "new-plan"):
        assert command in result.stdout


def test_goal_and_goal_text_together_are_a_usage_error_not_one_silently_dropped(project: Path) -> None:
    goal = project / "goal.md"
    goal.write_text("# A plan\n\n- [ ] One\n")
    result = cli(["--goal", str(goal), "--goal-text", "something else", "--dry-run", "--no-dashboard",
                  "--no-confirm"], project)
    assert result.returncode == 2, result.stderr
    assert "pass either --goal <file> or --goal-text" in result.stderr and "Traceback" not in result.stderr
    assert nothing_created(project)


def test_flags_a_one_plan_run_without_dashboard_cannot_use_are_named_not_swallowed(project: Path) -> None:
    result = cli(["--goal-text", "x", "--dry-run", "--no-dashboard", "--no-confirm", "--hitl", "off", "-n", "1",
                  "--quiet", "--keep-open-for", "10m", "-p", "8000", "--merge", "never"], project)
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if "warning" in line] == [
        "kilo-loop: warning: --port has no effect with the dashboard off",
        "kilo-loop: warning: --keep-open-for has no effect with the dashboard off",
        "kilo-loop: warning: --merge has no effect on one plan (it applies to several --goal or --parallel)",
    ]
    quiet = cli(["--goal-text", "x", "--dry-run", "--no-dashboard", "--no-confirm", "--hitl", "off", "-n", "1",
                 "--quiet"], project)
    assert quiet.returncode == 0 and "warning" not in quiet.stderr


def test_resume_with_another_goal_is_refused_not_given_its_done_stages(project: Path) -> None:
    plans = project / "plans"
    plans.mkdir()
    (plans / "a.md").write_text("# Plan A\n\n- [ ] first of a\n- [ ] second of a\n")
    (plans / "b.md").write_text("# Plan B\n\n- [ ] first of b\n")
    base = ["--dry-run", "--no-dashboard", "--no-confirm", "--hitl", "off", "--quiet", "-n", "1"]
    stopped = cli([*base, "--goal", "plans/a.md", "--max-tokens", "1", "--run-id", "ra"], project)
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    other = cli([*base, "--goal", "plans/b.md", "--resume", "last"], project)
    assert other.returncode == 2, other.stdout + other.stderr
    assert other.stderr.strip() == ("kilo-loop: --resume last: run ra was started with --goal plans/a.md, not --goal "
                                    "plans/b.md: resume it with --goal plans/a.md, or start a new run without --resume")
    (plans / "a.md").rename(plans / "moved.md")  # the same goal under another name still resumes
    moved = cli([*base, "--goal", "plans/moved.md", "--resume", "ra"], project)
    assert moved.returncode == 0, moved.stdout + moved.stderr


def test_prompt_extra_naming_a_missing_file(project: Path) -> None:
    result = cli(["--goal-text", "x", "--dry-run", "--no-dashboard", "--prompt-extra", "notes.md"], project)
    assert result.returncode == 2, result.stderr
    assert "--prompt-extra notes.md: no such file" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert nothing_created(project)


@pytest.mark.parametrize("extra", [["--goal", "plans/b.md"], ["--parallel", "1"]])
def test_list_goals_with_several_goals_lists_and_starts_nothing(project: Path, extra: list[str]) -> None:
    plans = project / "plans"
    plans.mkdir()
    (plans / "a.md").write_text("# Plan A\n\n- [ ] first of a\n")
    (plans / "b.md").write_text("# Plan B\n\n- [ ] first of b\n")
    result = cli(["--list-goals", "--goal", "plans/a.md", *extra, "--dry-run", "--no-dashboard"], project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "plans/a.md — Plan A" in result.stdout
    assert ("plans/b.md — Plan B" in result.stdout) == ("plans/b.md" in extra)  # the named goals, only them
    assert "started" not in result.stdout
    assert not (project / ".kilocode-loop" / "worktrees").exists()
    assert subprocess.run(["git", "branch", "--list", "kilo-loop/*"], cwd=project, capture_output=True,
                          text=True).stdout == ""


def test_list_goals_lists_a_named_file_discovery_would_not_find(project: Path) -> None:
    (project / "my plan.md").write_text("# Mine\n\n- [x] one\n- [ ] two\n")
    result = cli(["--list-goals", "--goal", "my plan.md", "--goal", "gone.md"], project)
    assert result.returncode == 0, result.stderr
    assert "[ 1/2  50%] markdown  my plan.md — Mine" in result.stdout
    assert "gone.md — gone — file not found" in result.stdout
    assert "No plans found" not in result.stdout


@pytest.mark.parametrize(("path", "as_dir", "needle"), [
    (".kilocode-loop", False, "is a file, but kilo-loop keeps its runs in that directory"),
    (".kilocode-loop/runs", False, "is a file, but kilo-loop keeps its runs in that directory"),
    (".kilocode-loop/progress.json", True, "is a directory, but the loop writes that file there"),
])
def test_a_loop_path_of_the_wrong_kind_stops_the_run_before_it_starts(
    project: Path, path: str, as_dir: bool, needle: str
) -> None:
    target = project / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if as_dir:
        target.mkdir()
    else:
        target.write_text("x")
    result = cli(["--goal-text", "x", "--dry-run", "--no-dashboard", "--no-confirm", "--hitl", "off", "-n", "1"],
                 project)
    assert result.returncode == 2, result.stdout + result.stderr
    kind = "directory" if as_dir else "file"
    assert result.stderr.strip() == f"kilo-loop: {target} {needle}: move the {kind} out of the way"
    assert "Traceback" not in result.stderr and not (project / ".kilocode-loop" / "runs").is_dir()


def test_prompt_extra_naming_a_directory_says_so(project: Path) -> None:
    (project / "notes").mkdir()
    result = cli(["--goal-text", "x", "--dry-run", "--no-dashboard", "--prompt-extra", "./notes"], project)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == ("kilo-loop: --prompt-extra ./notes: is a directory; name the file in it, or "
                                     "pass the instructions themselves")
    assert nothing_created(project)


def test_a_resume_that_cannot_load_its_run_says_what_to_do(project: Path) -> None:
    base = ["--goal-text", "x", "--dry-run", "--no-dashboard", "--no-confirm", "--hitl", "off", "-n", "1"]
    missing = cli([*base, "--resume", "nope"], project)
    assert missing.returncode == 2, missing.stderr
    assert missing.stderr.strip().endswith("no saved run 'nope' under " + str(project / ".kilocode-loop/runs") +
                                           "; to start over, run without --resume (`kilo-loop report --last` shows "
                                           "the newest saved run)")
    assert cli([*base, "--run-id", "r1"], project).returncode == 0
    (project / ".kilocode-loop/runs/r1/state.json").write_text("{")
    damaged = cli([*base, "--resume", "r1"], project)
    assert damaged.returncode == 2 and "state.json: not valid JSON" in damaged.stderr
    assert "to start over, run without --resume" in damaged.stderr and len(damaged.stderr.strip().splitlines()) == 1
