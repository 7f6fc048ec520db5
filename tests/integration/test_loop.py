"""The loop end to end through the real CLI, with a scripted fake `kilo` in real git repos."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.integration.loop_harness import (
    FakeKilo,
    bash,
    done_iteration,
    error,
    progress,
    run_loop,
    step,
    text,
)

TWO_STAGES = "# Two stages\n\n- [ ] First stage\n- [ ] Second stage\n"


def write_goal(project: Path, body: str = TWO_STAGES, name: str = "goal.md") -> Path:
    path = project / name
    path.write_text(body)
    return path


def test_two_stage_goal_completes_and_ticks_markdown(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    run = run_loop(fake, project, [done_iteration("stage-1", "a.txt"), done_iteration("stage-2", "b.txt", 100)],
                   "--goal", str(goal), "-n", "5")
    assert run.proc.returncode == 0, run.proc.stderr + run.proc.stdout
    state = run.state()
    assert state["status"] == "done"
    assert state["completedStages"] == ["stage-1", "stage-2"]
    assert goal.read_text() == TWO_STAGES.replace("[ ]", "[x]")
    assert len(run.calls) == 2
    first = run.calls[0]
    assert first["argv"][:4] == ["run", "--format", "json", "--auto"]
    assert "--session" not in first["argv"]  # fresh mode
    assert first["pwd"] == str(project)
    assert "Iteration 1/5 — First stage" in run.proc.stdout
    report = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert report["filesChanged"] == ["a.txt"] and report["tokens"] == 1000 and report["cost"] == 0.01
    for name in ("state.json", "events.jsonl", "report.md", "iterations/01-prompt.md", "iterations/02-report.md"):
        assert (run.run_dir / name).is_file(), name


def test_tool_headings_on_console_and_in_events(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only stage\n")
    scenario = [[text("look"), bash("pnpm typecheck"), progress("stage-1"), step()]]
    run = run_loop(fake, project, scenario, "--goal", str(goal))
    assert run.proc.returncode == 0, run.proc.stderr
    assert "▸ Run pnpm typecheck" in run.proc.stdout
    tools = [e for e in run.events() if e["type"] == "tool"]
    assert tools and tools[0]["message"] == "▸ Run pnpm typecheck"


def test_handoff_is_embedded_archived_and_deleted(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    first = [text("one"), {"handoff": "# Handoff\n- decided: use sqlite\n"}, {"write": "x.txt", "text": "x"},
             progress("stage-1", "in_progress"), step()]
    run = run_loop(fake, project, [first, done_iteration("stage-1", "y.txt"), done_iteration("stage-2", "z.txt")],
                   "--goal", str(goal), "-n", "3")
    assert run.proc.returncode == 0, run.proc.stderr
    assert "decided: use sqlite" in run.prompt(2)
    assert "decided: use sqlite" not in run.prompt(3)
    assert (run.run_dir / "iterations" / "02-handoff-in.md").read_text().startswith("# Handoff")
    assert not (project / ".kilocode-loop" / "handoff.md").exists()


def test_shared_context_continues_the_session(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    run = run_loop(fake, project, [done_iteration("stage-1", "a"), done_iteration("stage-2", "b")],
                   "--goal", str(goal), "--shared-context")
    assert run.proc.returncode == 0, run.proc.stderr
    second = run.calls[1]["argv"]
    assert second[second.index("--session") + 1] == "ses_fake0000"
    assert "Handoff from the previous session" not in run.prompt(2)


def test_hitl_answer_from_stdin_reaches_next_prompt(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project)
    ask = [text("need a decision"), {"write": "q.txt", "text": "q"},
           progress("stage-1", "in_progress", needsInput=True,
                    questions=[{"question": "Which database?", "options": ["sqlite", "postgres"]}]), step()]
    run = run_loop(fake, project, [ask, done_iteration("stage-1", "a"), done_iteration("stage-2", "b")],
                   "--goal", str(goal), stdin="2\n")
    assert run.proc.returncode == 0, run.proc.stderr
    assert "A: postgres" in run.prompt(2) and "A: postgres" in run.prompt(3)
    answers = json.loads((project / ".kilocode-loop" / "answers.json").read_text())
    assert answers["answers"][0]["answer"] == "postgres"


def test_missing_progress_falls_back_and_scrapes_questions(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only stage\n")
    scenario = [[text("Should I also migrate the old tables?"), {"write": "f", "text": "1"}, step()]]
    run = run_loop(fake, project, scenario, "--goal", str(goal), "-n", "1", "--hitl", "off")
    assert run.proc.returncode == 1, run.proc.stderr
    report = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert report["progressSource"] == "fallback"
    assert "did not write progress.json" in " ".join(report["warnings"])
    assert "Should I also migrate the old tables?" in run.proc.stdout


def test_error_event_with_exit_zero_is_a_failure(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only stage\n")
    scenario = [[text("hi"), error("model exploded"), progress("stage-1"), step()]]
    run = run_loop(fake, project, scenario, "--goal", str(goal), "-n", "1", "--no-retry")
    assert run.proc.returncode == 1
    report = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert report["outcome"] == "failed" and "model exploded" in report["error"]
    assert run.state()["completedStages"] == []


def test_garbage_lines_are_logged_and_skipped(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only stage\n")
    scenario = [[{"raw": "this is not json"}, {"raw": "[1,2]"}, text("ok"), progress("stage-1"), step()]]
    run = run_loop(fake, project, scenario, "--goal", str(goal))
    assert run.proc.returncode == 0, run.proc.stderr
    warnings = [e["message"] for e in run.events() if e["type"] == "warning"]
    assert any("garbage line" in w and "this is not json" in w for w in warnings)


def test_hung_agent_is_killed_with_its_group(project: Path, fake: FakeKilo) -> None:
    goal = write_goal(project, "# One\n- [ ] Only stage\n")
    scenario = [[text("hang"), {"spawn_sleeper": 300}, {"sleep": 300}]]
    started = time.monotonic()
    run = run_loop(fake, project, scenario, "--goal", str(goal), "-n", "1", "--max-iteration-minutes", "0.05")
    assert time.monotonic() - started < 60
    report = json.loads((run.run_dir / "iterations" / "01-report.json").read_text())
    assert report["outcome"] == "timeout"
    pids = [int(p) for p in Path(str(fake.log) + ".pids").read_text().split()]
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        stat = Path(f"/proc/{pid}/stat").read_text()
        assert stat.split(")")[1].split()[0] == "Z", f"process {pid} survived the timeout"


def test_per_stage_overrides_and_flags_reach_the_cli(project: Path, fake: FakeKilo) -> None:
    goal = project / "goal.json"
    goal.write_text(json.dumps({"title": "T", "stages": [
        {"id": "s1", "title": "One", "model": "prov/fast", "agent": "code", "variant": "high"}]}))
    run = run_loop(fake, project, [done_iteration("s1", "a")], "--goal", str(goal), "--model", "prov/slow",
                   "--thinking", "--no-auto")
    assert run.proc.returncode == 0, run.proc.stderr
    argv = run.calls[0]["argv"]
    assert argv[argv.index("--model") + 1] == "prov/fast"
    assert argv[argv.index("--agent") + 1] == "code"
    assert argv[argv.index("--variant") + 1] == "high"
    assert "--thinking" in argv and "--auto" not in argv
    assert argv[argv.index("--title") + 1].startswith("kilo-loop ")
