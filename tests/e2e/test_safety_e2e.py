"""The loop's safety net end to end: verify gates, the two guard layers, redaction, retries,
budgets, stall detection and `kill -9` + `--resume`, each through `python -m kilo_loop` with a
real CLI (kilo where the runtime matters, opencode, about half the cost, elsewhere).

Which path each case covers: under both transports, what reaches the loop differently (secrets in
events from the server's stream and from stdout, a provider failure retried in the same session,
a token budget that aborts a session through the API or ends a process); under `run` only, what the
loop decides by itself whatever the transport (verify, the guard's runtime layer — serve refuses
before the command runs, in test_serve_e2e.py —, stall, kill -9 and resume; the serve transport's
kill -9 and resume is test_serve_kill_9_of_the_loop_then_the_next_run_kills_the_leftover_server)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
from pathlib import Path

import pytest

from .conftest import (
    BOTH_TRANSPORTS,
    LOOP_DIR,
    RUN_TRANSPORT,
    Loop,
    LoopRun,
    bash,
    commit_count,
    iteration_marker,
    iteration_requests,
    write,
    write_handoff,
    write_progress,
)
from .fake_provider import FakeProvider, calls, fail, hold, say

pytestmark = pytest.mark.e2e

# Killing kilo just after a tool call (as the guard does) can leave its snapshot lock behind in
# $XDG_STATE_HOME/kilo/locks; the next kilo session in the project then waits ~60 s for the lock
# to go stale and ~120 s for its snapshot budget. Kilo's own snapshots are not what these tests
# are about, so the test that kills kilo and then runs it again switches them off.
NO_KILO_SNAPSHOTS = {"snapshot": False}
HELD_S = 90.0  # long enough that a reply the loop should have cut off would show up as a failure
START_TIMEOUT_S = 240.0


def seen_in(provider: FakeProvider, iteration: int) -> list[str]:
    """What the model was shown, request by request, during one iteration."""
    return [r.all_text for r in iteration_requests(provider, iteration)]


def iteration_tools(run: LoopRun, iteration: int) -> list[tuple[str, str]]:
    """(command or tool, status) of each tool call an iteration logged."""
    return [(e["data"]["input"].get("command", e["data"]["tool"]), e["data"]["status"])
            for e in run.events("tool") if e.get("iteration") == iteration]


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- verify gate


@RUN_TRANSPORT
def test_failing_verify_blocks_the_stage_until_fixed(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    plan = project / "plan.md"
    plan.write_text("# Flag\n\n- [ ] Fix the flag :: verify: cat ok.txt; grep -q fixed ok.txt\n", encoding="utf-8")
    # The agent claims "done" both times; only the loop's own verify decides.
    fake_provider.add_turns(
        bash("echo still-broken-7781 > ok.txt"), write_progress(project, 1, "stage-1", "done"), say("Done, I think."),
        marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        bash("echo fixed > ok.txt"), write_progress(project, 2, "stage-1", "done"), say("Fixed."),
        marker=iteration_marker(2),
    )

    run = loop.run("opencode", project, "--goal", "plan.md", "-n", "3")

    assert run.returncode == 0, run.describe()
    first, second = run.report(1), run.report(2)
    assert first["verify"]["passed"] is False and first["verify"]["exitCode"] == 1
    assert "still-broken-7781" in first["verify"]["outputTail"]
    verdicts = [(e["iteration"], e["data"]["passed"]) for e in run.events("verify")]
    assert verdicts == [(1, False), (2, True)], run.describe()
    assert "verify failed: `cat ok.txt; grep -q fixed ok.txt` exited 1" in run.stdout
    # The failure and its output reach the next prompt, and the fresh session's model.
    assert "## Verify failed last iteration" not in run.prompt(1)
    prompt = run.prompt(2)
    assert "## Verify failed last iteration" in prompt and "still-broken-7781" in prompt
    assert "1. [!] stage-1: Fix the flag" in prompt  # blocked, not done
    assert all("still-broken-7781" in text for text in seen_in(fake_provider, 2))
    assert second["verify"]["passed"] is True
    state = run.state()
    assert state["status"] == "done" and state["completedStages"] == ["stage-1"], run.describe()
    assert "- [x] Fix the flag" in plan.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- guard


@RUN_TRANSPORT  # serve: tests/e2e/test_serve_e2e.py
def test_guard_denies_before_execution_and_aborts_at_runtime(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    """About 60 s on 2 cores: two `kilo run` sessions, five tool turns in the first (a commit kilo refuses
    by the loop's rule, a command the user's own rule refuses, a push only the runtime guard catches and
    the session is killed for), then the clean finish — the two guard layers are only seen in a real CLI."""
    project = git_project
    commits = commit_count(project)
    push = 'bash -c "git push origin main"'  # no "git push*" glob matches this; the runtime guard does
    fake_provider.add_turns(
        bash("printf x > staged.txt && git add staged.txt"),
        bash("git commit -m x"),
        bash("touch forbidden.txt"),
        bash(push),
        # Never delivered when the loop kills the session on the push; else it would finish the stage.
        hold(HELD_S, then=write_progress(project, 1, "stage-1", "done")),
        marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        write_progress(project, 2, "stage-1", "done"), say("Done without committing."),
        marker=iteration_marker(2),
    )

    # The user's own inline KILO_CONFIG_CONTENT (the provider, and a bash rule of theirs):
    # the loop must merge its deny rules into it, not replace it.
    run = loop.run("kilo", project, "--goal-text", "Stage a file", "-n", "3", "--agent", "code",
                   inline=True, permission={"bash": {"*": "allow", "touch forbidden*": "deny"}},
                   config=NO_KILO_SNAPSHOTS)

    assert run.returncode == 0, run.describe()
    assert iteration_tools(run, 1) == [
        ("printf x > staged.txt && git add staged.txt", "completed"),
        ("git commit -m x", "error"),  # the loop's pre-execution rule, enforced by kilo
        ("touch forbidden.txt", "error"),  # the user's own rule still applies
        (push, "completed"),  # ran: only the runtime guard catches it
    ], run.describe()
    assert commit_count(project) == commits
    assert not (project / "forbidden.txt").exists()
    denied = [e["data"] for e in run.events("tool") if e["data"]["status"] == "error"]
    assert "git commit*" in denied[0]["error"] and "touch forbidden*" in denied[1]["error"]
    assert [e["message"] for e in run.events("guard-pre")] == ["denied before execution: `git commit -m x`"]
    [guard] = run.events("guard")
    assert guard["iteration"] == 1 and "git push" in guard["message"]
    assert "guard blocked `bash -c \"git push origin main\"`" in run.stdout
    first = run.report(1)
    assert first["outcome"] == "guard" and first["guardHits"] == 1, run.describe()
    # The session was killed right there: the held reply never reached the CLI.
    assert [e for e in run.events("tool") if e.get("iteration") == 1][-1]["data"]["input"]["command"] == push
    # The run went on: the next prompt carries the safety note, and the stage got done.
    assert "## Loop safety feedback" not in run.prompt(1)
    assert "## Loop safety feedback" in run.prompt(2)
    assert all("## Loop safety feedback" in text for text in seen_in(fake_provider, 2))
    state = run.state()
    assert state["status"] == "done" and state["guardBlocks"] == 1, run.describe()


# --------------------------------------------------------------------------- redaction


@BOTH_TRANSPORTS
def test_secrets_never_reach_the_run_files(loop: Loop, fake_provider: FakeProvider, git_project: Path) -> None:
    project = git_project
    token = "ghp_" + secrets.token_hex(18)  # 36 alphanumerics, made up at run time
    password = "hunter2" + "secret"
    fake_provider.add_turns(
        bash(f"echo {token}"),
        bash(f"echo password={password}"),
        calls(
            write_handoff(project, f"# Handoff\n\nThe deploy token is {token}; the db has password={password}\n"),
            write_progress(project, 1, "stage-1", "in_progress", summary=f"found {token}"),
        ),
        say(f"The tool printed {token} and password={password}."),
        marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        calls(write(project / "notes.txt", "rotated\n"), write_progress(project, 2, "stage-1", "done")),
        say("Rotated."),
        marker=iteration_marker(2),
    )

    run = loop.run("opencode", project, "--goal-text", "Rotate the token", "-n", "2")

    assert run.returncode == 0, run.describe()
    assert token not in run.stdout and password not in run.stdout, run.describe()
    assert "▸ Run echo ghp_[REDACTED]" in run.stdout and "▸ Run echo password=[REDACTED]" in run.stdout
    assert "The tool printed ghp_[REDACTED]" in run.stdout
    leaks = [str(path.relative_to(project)) for path in files_under(project / LOOP_DIR)
             if token.encode() in path.read_bytes() or password.encode() in path.read_bytes()]
    assert leaks == [], run.describe()
    # They did pass through: redacted in the handoff packet, the prompt and the state.
    assert "The deploy token is ghp_[REDACTED]" in run.prompt(2)
    assert "password=[REDACTED]" in (run.run_dir / "iterations" / "02-handoff-in.md").read_text()
    assert run.state()["iterations"][0]["summary"] == "found ghp_[REDACTED]"


# --------------------------------------------------------------------------- retries


@BOTH_TRANSPORTS
def test_provider_failure_is_retried_in_the_same_session(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    """About 60 s under `run`: kilo's own retry back-off runs between its two failed attempts before the
    loop's retry starts a second `kilo run` on the same session — the retry path is kilo's and the loop's."""
    project = git_project
    fake_provider.add_turns(
        bash("echo FIRST-ATTEMPT-OUTPUT"),
        # KILO_SESSION_RETRY_LIMIT=1: kilo tries twice, then gives up with an `error` event.
        fail(500, "provider exploded"),
        fail(500, "provider exploded"),
        # The loop's retry (same prompt, --session <id>).
        calls(write(project / "after.txt", "ok\n"), write_progress(project, 1, "stage-1", "done")),
        say("Recovered."),
        marker=iteration_marker(1),
    )

    run = loop.run("kilo", project, "--goal-text", "Survive a flaky provider", "-n", "1", "--agent", "code",
                   "--retry-delay", "100", extra_env={"KILO_SESSION_RETRY_LIMIT": "1"})

    assert run.returncode == 0, run.describe()
    assert [type(r.turn).__name__ for r in fake_provider.chat_requests] == ["Calls", "Fail", "Fail", "Calls", "Say"]
    report = run.report(1)
    assert report["retries"] == 1 and "500" in report["retryReason"], run.describe()
    assert report["outcome"] == "ok"
    assert "auto-retry ×1" in run.stdout  # noqa: RUF001 - the seed's wording
    # The retry continued the failed attempt's session: same id, and the model saw attempt one.
    sessions = [e["data"]["session_id"] for e in run.events("session")]
    assert len(sessions) == 2 and sessions[0] == sessions[1] == report["sessionId"], run.describe()
    retried = fake_provider.chat_requests[3]
    assert "FIRST-ATTEMPT-OUTPUT" in retried.all_text
    assert run.state()["status"] == "done"


# --------------------------------------------------------------------------- budgets and stalls


@BOTH_TRANSPORTS
def test_token_budget_stops_mid_session_with_exit_3(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    fake_provider.add_turns(
        bash("echo one > one.txt"),
        hold(HELD_S, then=bash("echo two > two.txt")),
        marker=iteration_marker(1),
    )

    run = loop.run("opencode", project, "--goal-text", "Spend tokens", "-n", "3", "--max-tokens", "10")

    assert run.returncode == 3, run.describe()
    state = run.state()
    assert state["status"] == "stopped-budget" and "--max-tokens 10" in state["stopReason"], run.describe()
    assert len(state["iterations"]) == 1
    assert (project / "one.txt").exists() and not (project / "two.txt").exists()
    assert "--resume" in state["resumeCommand"]


@RUN_TRANSPORT
def test_do_nothing_agent_stalls_with_exit_4(loop: Loop, fake_provider: FakeProvider, git_project: Path) -> None:
    fake_provider.add_turns(say("ok"), marker=iteration_marker(1))
    fake_provider.add_turns(say("ok"), marker=iteration_marker(2))

    run = loop.run("opencode", git_project, "--goal-text", "Change something", "-n", "5",
                   "--max-stale-iterations", "2")

    assert run.returncode == 4, run.describe()
    state = run.state()
    assert state["status"] == "stalled" and len(state["iterations"]) == 2, run.describe()
    assert seen_in(fake_provider, 3) == []
    assert [i["progressSource"] for i in state["iterations"]] == ["fallback", "fallback"]


# --------------------------------------------------------------------------- kill -9 and resume


def child_pids(pid: int) -> list[int]:
    """Direct children of `pid`, read from /proc."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # Field 4 (ppid) follows the parenthesised command name, which may contain spaces.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                children.append(int(stat.parent.name))
    return children


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        group = os.getpgid(pid)
        if group != os.getpgid(0):
            os.killpg(group, signal.SIGKILL)


@RUN_TRANSPORT
def test_kill_9_mid_iteration_then_resume_last_finishes(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    plan = project / "plan.md"
    plan.write_text("# Resume\n\n- [ ] Write done.txt\n", encoding="utf-8")
    fake_provider.add_turns(bash("echo started > started.txt"), hold(HELD_S), marker=iteration_marker(1))

    process = loop.start("opencode", project, "--goal", "plan.md", "-n", "2")
    try:
        held = fake_provider.wait_for_hold(START_TIMEOUT_S)
    finally:
        agents = child_pids(process.pid)  # the CLI runs in its own process group
        process.kill()
        process.communicate(timeout=30)
        for pid in agents:
            kill_group(pid)  # kill -9 orphans the agent CLI; it must not answer into the resumed run
    assert held, "the agent never reached the held reply"
    assert process.returncode == -signal.SIGKILL
    assert (project / "started.txt").exists()
    [saved] = (project / LOOP_DIR / "runs").glob("*/state.json")
    crashed = json.loads(saved.read_text(encoding="utf-8"))  # as the killed process left it
    assert crashed["status"] == "running"
    # state.json is a snapshot written about once per iteration; the events say where the run was.
    events = [json.loads(line) for line in (saved.parent / "events.jsonl").read_text().splitlines() if line]
    kinds = [(event["type"], event.get("iteration")) for event in events]
    assert ("iteration-started", 1) in kinds and ("iteration-finished", 1) not in kinds

    fake_provider.add_turns(
        calls(write(project / "done.txt", "done\n"), write_progress(project, 2, "stage-1", "done")),
        say("Finished after the crash."),
        marker=iteration_marker(2),
    )
    run = loop.run("opencode", project, "--goal", "plan.md", "--resume", "last", "-n", "2")

    assert run.returncode == 0, run.describe()
    state = run.state()  # the same run directory, continued
    assert state["status"] == "done", run.describe()
    assert [(i["iteration"], i["outcome"]) for i in state["iterations"]] == [(1, "interrupted"), (2, "ok")]
    assert "resumed" in run.stdout
    assert (project / "done.txt").read_text() == "done\n"
    assert "- [x] Write done.txt" in plan.read_text(encoding="utf-8")
