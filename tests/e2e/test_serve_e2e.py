"""The serve transport end to end: the loop drives one warm `kilo serve` / `opencode serve` per
run against the scripted provider, answers every permission request with its guard BEFORE the
command runs, and leaves no server process behind however the run ends.

Destructive commands here are data: the scripted model asks the agent to run them, and each one
targets a canary inside the test's temp directory (the agent's HOME) — the guard must refuse it
before it runs, which the surviving canary proves.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from .conftest import (
    LOOP_DIR,
    Loop,
    LoopRun,
    bash,
    commit_count,
    iteration_marker,
    iteration_requests,
    write,
    write_progress,
)
from .fake_provider import FakeProvider, Runtime, hold, say

pytestmark = pytest.mark.e2e

PLAN = "# Two files\n\n- [ ] Create alpha.txt\n- [ ] Create beta.txt\n"
HELD_S = 120.0
START_TIMEOUT_S = 240.0
REJECTED = "denied by the loop's guard"


def processes_in(directory: Path) -> list[int]:
    """Live processes whose working directory is `directory` (the agent server runs in the project)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if Path(os.readlink(entry / "cwd")) == directory:
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_gone(directory: Path, seconds: float = 15.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := processes_in(directory)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def guard_events(run: LoopRun) -> list[dict[str, object]]:
    return [e["data"] for e in run.events("guard")]


@pytest.mark.parametrize("runtime", ["kilo", "opencode"])
def test_serve_rejects_destructive_commands_before_they_run_and_the_goal_completes(
    loop: Loop, fake_provider: FakeProvider, git_project: Path, runtime: Runtime
) -> None:
    project = git_project
    (project / "plan.md").write_text(PLAN, encoding="utf-8")
    canary = loop.home / "canary"  # outside the repository, inside the test's temp dir
    canary.mkdir()
    (canary / "keep.txt").write_text("still here\n", encoding="utf-8")
    commits = commit_count(project)
    force_push = 'bash -c "git push --force origin main"'
    built_name = "X=rm; $X -rf ~/canary"
    outside_rm = "cd ~ && rm -rf canary"  # no deny glob matches: the guard itself must refuse it
    fake_provider.add_turns(
        bash("printf alpha > alpha.txt"),
        bash("touch forbidden.txt"),  # the user's own deny rule applies first
        bash(force_push),
        bash(built_name),
        bash(outside_rm),
        write_progress(project, 1, "stage-1", "done", percent=50),
        say("Stage one is done, without those commands."),
        marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        write(project / "beta.txt", "beta\n"),
        write_progress(project, 2, "stage-2", "done", percent=100),
        say("Stage two is done."),
        marker=iteration_marker(2),
    )

    run = loop.run(runtime, project, "--goal", "plan.md", "-n", "3", "--transport", "serve", inline=True,
                   permission={"bash": {"*": "allow", "touch forbidden*": "deny"}})

    assert run.returncode == 0, run.describe()
    state = run.state()
    assert state["status"] == "done" and state["completedStages"] == ["stage-1", "stage-2"], run.describe()
    assert (canary / "keep.txt").read_text() == "still here\n"
    assert commit_count(project) == commits
    assert (project / "alpha.txt").read_text() == "alpha" and (project / "beta.txt").read_text() == "beta\n"
    refused = [e["data"]["input"]["command"] for e in run.events("tool") if e["data"]["status"] == "error"]
    assert refused == ["touch forbidden.txt", force_push, built_name, outside_rm], run.describe()
    assert not (project / "forbidden.txt").exists()
    rejected = guard_events(run)
    assert [g.get("before_execution") for g in rejected] == [True, True, True], run.describe()
    assert state["guardBlocks"] == 3 and run.report(1)["guardHits"] == 3
    assert run.report(1)["outcome"] == "ok"  # the session was not killed: it finished the stage
    # The agent's next model request carried the rejection message, and the next prompt the feedback.
    first = iteration_requests(fake_provider, 1)
    assert any(REJECTED in r.all_text and "git-push-force" in r.all_text for r in first), run.describe()
    assert "## Loop safety feedback" in run.prompt(2)
    assert "agent server up" in run.stdout
    assert wait_gone(project) == []
    assert not list((project / LOOP_DIR / "runs").glob("*/agent-server.pid"))


def test_serve_shared_context_continues_the_session_on_the_warm_server(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    fake_provider.add_turns(
        write(project / "gamma.txt", "half\n"), write_progress(project, 1, "stage-1", "in_progress"),
        say("SHARED-ONE: first half written."), marker=iteration_marker(1),
    )
    fake_provider.add_turns(
        bash("printf 'half\\nwhole\\n' > gamma.txt"), write_progress(project, 2, "stage-1", "done"),
        say("Finished."), marker=iteration_marker(2),
    )

    run = loop.run("kilo", project, "--goal-text", "Write gamma.txt", "-n", "2", "--shared-context")

    assert run.returncode == 0, run.describe()
    state = run.state()
    first, second = state["iterations"]
    assert first["sessionId"] and first["sessionId"] == second["sessionId"] == state["sessionId"]
    seen = [r.all_text for r in iteration_requests(fake_provider, 2)]
    assert seen and all("SHARED-ONE: first half written." in text for text in seen), run.describe()
    assert (project / "gamma.txt").read_text() == "half\nwhole\n"
    # One server for the whole run: one `agent server up` line.
    assert run.stdout.count("agent server up") == 1


def _server_pid(project: Path) -> int:
    [pidfile] = (project / LOOP_DIR / "runs").glob("*/agent-server.pid")
    pid = json.loads(pidfile.read_text())["pid"]
    assert isinstance(pid, int)
    return pid


def _alive(pid: int, settle_s: float = 5.0) -> bool:
    """Whether `pid` runs (not a zombie), waiting up to `settle_s` for a signalled process to go."""
    deadline = time.monotonic() + settle_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        if state == "Z" or time.monotonic() >= deadline:
            return state != "Z"
        time.sleep(0.1)


@pytest.mark.parametrize("how", ["stop", "ctrl-c-twice"])
def test_serve_server_is_gone_after_stop_and_force_exit(
    loop: Loop, fake_provider: FakeProvider, git_project: Path, how: str
) -> None:
    project = git_project
    fake_provider.add_turns(bash("echo started > started.txt"), hold(HELD_S), marker=iteration_marker(1))
    process = loop.start("opencode", project, "--goal-text", "Wait", "-n", "2", "--transport", "serve")
    try:
        assert fake_provider.wait_for_hold(START_TIMEOUT_S), "the agent never reached the held reply"
        server = _server_pid(project)
        assert _alive(server, 0)
        if how == "stop":
            process.send_signal(signal.SIGTERM)  # the loop's Stop
        else:
            process.send_signal(signal.SIGINT)
            time.sleep(0.5)
            process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    # A quiet machine may finish the first Ctrl+C's stop (exit 2) before the second arrives; the second
    # then ends the process at once (130, or death by SIGINT, which a shell also reports as 130).
    forced = (2, 130, -signal.SIGINT)
    assert process.returncode in (forced if how != "stop" else (0, 1, 2, 3, 4, 130)), out + err
    assert not _alive(server)
    assert wait_gone(project) == []


def test_serve_iteration_timeout_aborts_the_turn_and_the_server_goes_with_the_run(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    fake_provider.add_turns(bash("echo one > one.txt"), hold(HELD_S, then=bash("echo two > two.txt")),
                            marker=iteration_marker(1))

    run = loop.run("opencode", project, "--goal-text", "Slow", "-n", "1", "--max-iteration-minutes", "0.5",
                   "--transport", "serve")

    report = run.report(1)
    assert report["outcome"] == "timeout", run.describe()
    assert (project / "one.txt").exists() and not (project / "two.txt").exists()
    assert wait_gone(project) == []


def test_serve_kill_9_of_the_loop_then_the_next_run_kills_the_leftover_server(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    (project / "plan.md").write_text("# Resume\n\n- [ ] Write done.txt\n", encoding="utf-8")
    fake_provider.add_turns(bash("echo started > started.txt"), hold(HELD_S), marker=iteration_marker(1))
    # Without the jail: a jailed server dies with a killed loop (tests/e2e/test_jail_e2e.py), so only an
    # unjailed one can be left behind for the next run to find.
    bare = {"KILO_LOOP_SANDBOX": "off"}
    process = loop.start("opencode", project, "--goal", "plan.md", "-n", "2", "--transport", "serve", extra_env=bare)
    try:
        assert fake_provider.wait_for_hold(START_TIMEOUT_S), "the agent never reached the held reply"
        server = _server_pid(project)
    finally:
        process.kill()  # kill -9: the loop cannot stop its server
        process.communicate(timeout=30)
    assert _alive(server, 0), "the server should have outlived the killed loop"

    fake_provider.add_turns(write(project / "done.txt", "done\n"), write_progress(project, 2, "stage-1", "done"),
                            say("Finished after the crash."), marker=iteration_marker(2))
    run = loop.run("opencode", project, "--goal", "plan.md", "--resume", "last", "-n", "2", "--transport", "serve",
                   extra_env=bare)

    assert not _alive(server)
    assert "left running by an earlier loop" in run.stdout, run.describe()
    assert run.returncode == 0, run.describe()
    assert run.state()["status"] == "done"
    assert wait_gone(project) == []


def test_serve_a_server_that_dies_mid_turn_is_restarted_and_the_iteration_retried_in_the_same_session(
    loop: Loop, fake_provider: FakeProvider, git_project: Path
) -> None:
    project = git_project
    fake_provider.add_turns(
        bash("echo FIRST-ATTEMPT-OUTPUT"),
        hold(HELD_S),  # the server is killed while it waits for this reply
        write_progress(project, 1, "stage-1", "done"),  # the retry, on a new server, same session
        say("Recovered."),
        marker=iteration_marker(1),
    )
    process = loop.start("opencode", project, "--goal-text", "Survive", "-n", "1", "--transport", "serve",
                         "--retry-delay", "100")
    try:
        assert fake_provider.wait_for_hold(START_TIMEOUT_S), "the agent never reached the held reply"
        server = _server_pid(project)
        os.killpg(server, signal.SIGKILL)  # our own test server process group, by its recorded pid
        out, err = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    run = LoopRun(process.args, process.returncode, out, err, 0.0, project)  # type: ignore[arg-type]
    assert run.returncode == 0, run.describe()
    report = run.report(1)
    assert report["retries"] == 1 and "died mid-turn" in report["retryReason"], run.describe()
    assert "starting it again" in run.stdout
    sessions = [e["data"]["session_id"] for e in run.events("session")]
    assert len(sessions) == 2 and sessions[0] == sessions[1], run.describe()
    retried = iteration_requests(fake_provider, 1)[-1]
    assert "FIRST-ATTEMPT-OUTPUT" in retried.all_text  # the new server continued the same conversation
    assert run.state()["status"] == "done"
    assert wait_gone(project) == []
