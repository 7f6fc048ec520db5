"""The loop end to end through its real entry point (`python -m kilo_loop`), driving the real
`kilo` / `opencode` binaries against the scripted provider.

Each iteration's prompt carries `Iteration N of M.`, which selects that iteration's script; the
scripted model does the work with real tool calls (bash, write) and honours the report contract
by writing `.kilocode-loop/progress.json` itself.

Which path each case covers (the serve transport's own cases are in test_serve_e2e.py):
- two-stage markdown goal with handoff, under `run`: a fresh `kilo run` per iteration, the handoff
  carried in the next prompt (under serve, the two-stage goal of test_serve_e2e.py covers it);
- shared context under `run`: `kilo run --session` continues the session (under serve:
  test_serve_shared_context_continues_the_session_on_the_warm_server);
- opencode's one-stage goal under `run`: the runtime read from the binary, no kilo default agent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import (
    RUN_TRANSPORT,
    Loop,
    LoopRun,
    bash,
    iteration_marker,
    iteration_requests,
    write,
    write_handoff,
    write_progress,
)
from .fake_provider import FakeProvider, calls, say

pytestmark = pytest.mark.e2e

TWO_STAGE_PLAN = """# Two small files

Create two files, one stage each.

- [ ] Create alpha.txt
- [ ] Create beta.txt
"""
HANDOFF = "# Handoff\n\nHANDOFF-FROM-ONE: alpha.txt exists; beta.txt is next.\n"


def tool_events(run: LoopRun, iteration: int) -> list[tuple[str, str, str]]:
    """(tool, status, heading) of each `tool` event an iteration logged."""
    return [(e["data"]["tool"], e["data"]["status"], e["message"])
            for e in run.events("tool") if e.get("iteration") == iteration]


def seen_in(provider: FakeProvider, iteration: int) -> list[str]:
    """What the model was shown, request by request, during one iteration."""
    return [r.all_text for r in iteration_requests(provider, iteration)]


@RUN_TRANSPORT
def test_kilo_two_stage_markdown_goal_with_handoff(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    plan = project / "plan.md"
    plan.write_text(TWO_STAGE_PLAN, encoding="utf-8")
    fake_provider.add_turns(
        bash("printf alpha > alpha.txt"),
        calls(write_handoff(project, HANDOFF), write_progress(project, 1, "stage-1", "done", percent=50)),
        say("Stage one is done."),
        marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        calls(write(project / "beta.txt", "beta\n"), write_progress(project, 2, "stage-2", "done", percent=100)),
        say("Stage two is done."),
        marker=iteration_marker(2),
    )

    # No --agent: the loop's kilo default agent is used.
    run = loop.run("kilo", project, "--goal", "plan.md", "-n", "3")

    assert run.returncode == 0, run.describe()
    state = run.state()
    assert state["status"] == "done", run.describe()
    assert state["completedStages"] == ["stage-1", "stage-2"]
    assert [i["outcome"] for i in state["iterations"]] == ["ok", "ok"]  # stopped early: -n 3
    text = plan.read_text(encoding="utf-8")
    assert "- [x] Create alpha.txt" in text and "- [x] Create beta.txt" in text and "- [ ]" not in text
    assert (project / "alpha.txt").read_text() == "alpha"
    assert (project / "beta.txt").read_text() == "beta\n"

    # Every tool call is a heading on stdout and a `tool` event of its iteration (the calls of
    # one model turn run concurrently, so their order is not fixed).
    progress = project / ".kilocode-loop" / "progress.json"
    assert sorted(tool_events(run, 1)) == sorted([
        ("bash", "completed", "▸ Run printf alpha > alpha.txt"),
        ("write", "completed", f"▸ Write {project / '.kilocode-loop' / 'handoff.md'}"),
        ("write", "completed", f"▸ Write {progress}"),
    ])
    assert sorted(tool_events(run, 2)) == sorted([
        ("write", "completed", f"▸ Write {project / 'beta.txt'}"),
        ("write", "completed", f"▸ Write {progress}"),
    ])
    for *_, heading in tool_events(run, 1) + tool_events(run, 2):
        assert heading in run.stdout, run.describe()

    # The handoff written in iteration 1 is in iteration 2's prompt, archived and sent.
    assert "HANDOFF-FROM-ONE" not in run.prompt(1)
    assert "## Handoff from the previous session\n# Handoff\n\nHANDOFF-FROM-ONE" in run.prompt(2)
    assert "HANDOFF-FROM-ONE" in (run.run_dir / "iterations" / "02-handoff-in.md").read_text()
    second = seen_in(fake_provider, 2)
    assert second and all("HANDOFF-FROM-ONE" in text for text in second)
    # Fresh mode: iteration 2 is a new session that never saw iteration 1's conversation.
    assert all("Stage one is done." not in text for text in second)
    first_session, second_session = (i["sessionId"] for i in state["iterations"])
    assert first_session and second_session and first_session != second_session


@RUN_TRANSPORT
def test_kilo_shared_context_continues_the_session(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    """About 60 s on 2 cores: two `kilo run` processes (each starts kilo afresh, 15 to 25 s on a loaded
    machine), the second with `--session`; nothing cheaper shows the CLI continuing its own session."""
    project = git_project
    fake_provider.add_turns(
        calls(write(project / "gamma.txt", "half\n"), write_progress(project, 1, "stage-1", "in_progress")),
        say("SHARED-ONE: first half written."),
        marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        calls(bash("printf 'half\\nwhole\\n' > gamma.txt"), write_progress(project, 2, "stage-1", "done")),
        say("Finished."),
        marker=iteration_marker(2),
    )

    run = loop.run("kilo", project, "--goal-text", "Write gamma.txt", "-n", "2", "--shared-context",
                   "--agent", "code")

    assert run.returncode == 0, run.describe()
    state = run.state()
    assert state["status"] == "done", run.describe()
    first, second = state["iterations"]
    assert first["sessionId"] and first["sessionId"] == second["sessionId"] == state["sessionId"]
    # The server's iteration-2 requests carry iteration 1's prompt, tool calls and text.
    seen = seen_in(fake_provider, 2)
    assert seen, run.describe()
    for text in seen:
        assert "Iteration 1 of 2." in text and "SHARED-ONE: first half written." in text
    # Shared mode asks for no handoff.
    assert "handoff.md" not in run.prompt(2)
    assert (project / "gamma.txt").read_text() == "half\nwhole\n"


@RUN_TRANSPORT
def test_opencode_one_stage_goal(loop: Loop, fake_provider: FakeProvider, git_project: Path) -> None:
    project = git_project
    fake_provider.add_turns(
        bash("echo ran-by-opencode > ran.txt"),
        write_progress(project, 1, "stage-1", "done"),
        say("Done."),
        marker=iteration_marker(1),
    )

    run = loop.run("opencode", project, "--goal-text", "Record that opencode ran", "-n", "2")

    assert run.returncode == 0, run.describe()
    state = run.state()
    assert state["status"] == "done" and state["runtime"] == "opencode", run.describe()
    assert state["agent"] is None  # kilo's default agent is not passed to opencode
    assert "runtime opencode" in run.stdout
    # The bash call ran unattended (--auto).
    assert (project / "ran.txt").read_text() == "ran-by-opencode\n"
    assert [e["data"]["status"] for e in run.events("tool")] == ["completed", "completed"]
    assert state["iterations"][0]["filesChanged"] == ["ran.txt"]
