"""`--goal a --goal b … --parallel N`: plans in their own worktrees, results offered back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kilo_loop.fleet.child import child_argv, plan_flags, plan_label
from tests.fleet.support import (
    agent_binary,
    dashboard_url,
    git,
    goal,
    init_repo,
    loop_env,
    stage,
    start_parallel,
    write_goal,
)


def run(project: Path, env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kilo_loop", *args], cwd=project, env=env, capture_output=True,
                          text=True, check=False, timeout=timeout, stdin=subprocess.DEVNULL)


def test_plan_flags_drop_the_parents_own_flags() -> None:
    argv = ["--goal", "a.md", "--goal=b.md", "--parallel", "2", "-n", "3", "--merge=never", "-C", "/x",
            "-p8000", "--dry-run", "--no-dashboard", "--verify", "pytest -q", "--port", "1",
            "--keep-open", "--keep-open-for", "10m"]
    assert plan_flags(argv) == ["-n", "3", "--dry-run", "--verify", "pytest -q"]


def test_child_argv_is_quiet_headless_and_named() -> None:
    argv = child_argv("g.md", Path("/w"), "r1", ["-n", "2"])
    assert argv[1:3] == ["-m", "kilo_loop"]
    assert argv[-4:] == ["--run-id", "r1", "-n", "2"]
    assert "--no-dashboard" in argv and "--no-confirm" in argv
    assert "--resume" in child_argv("g.md", Path("/w"), "r1", [], resume=True)


def test_plan_labels_are_unique_and_safe() -> None:
    taken: set[str] = set()
    labels = [plan_label(Path(p), taken) for p in ("a b.md", "x/a b.json", "#.md")]
    assert labels == ["a-b", "a-b-2", "plan"]


def test_three_plans_two_at_a_time_all_land(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "repo", {"README.md": "hello\n"})
    (project / "README.md").write_text("hello\nuncommitted work\n")  # the operator's, kept and given to plans
    goals = []
    for name in ("a", "b", "c"):
        goals += ["--goal", str(write_goal(project / "plans" / f"{name}.json", goal(
            f"plan {name}", stage("s1", {"write": {f"{name}.txt": f"{name}\n"}, "sleep": 0.5}),
            stage("s2", {"append": {f"{name}.txt": "more\n"}}))))]
    result = run(project, loop_env(agent_binary(tmp_path)), *goals, "--parallel", "2", "-n", "3", "--no-dashboard")
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("a", "b", "c"):
        assert (project / f"{name}.txt").read_text() == f"{name}\nmore\n"
    assert (project / "README.md").read_text() == "hello\nuncommitted work\n"
    assert git(project, "log", "--oneline").count("\n") == 1, "nothing is committed on the operator's branch"
    assert git(project, "diff", "--cached", "--name-only") == "", "the operator's index is untouched"
    assert "worktrees" not in git(project, "worktree", "list")
    runs = sorted(p.name for p in (project / ".kilocode-loop" / "runs").iterdir())
    assert len(runs) == 3 and all((project / ".kilocode-loop" / "runs" / r / "report.md").is_file() for r in runs)
    assert ".kilocode-loop" not in git(project, "status", "--porcelain")
    assert git(project, "branch", "--list", "kilo-loop/*") == "", "landed plans leave no branch behind"


def test_a_plan_whose_verify_fails_on_the_merged_result_needs_a_merge(tmp_path: Path) -> None:
    """Each plan passes its verify in its own worktree; merged with what landed first, the second fails
    it, so it is `needs-merge` (nothing applied) until the operator fixes the tree and runs `merge`."""
    project = init_repo(tmp_path / "repo")
    first = stage("s1", {"write": {"a.txt": "1\n"}, "sleep": 0.2})
    first["verify"] = "test -f a.txt"
    second = stage("s1", {"write": {"b.txt": "2\n"}, "sleep": 2.0})
    second["verify"] = "test ! -f a.txt"  # true in its own worktree; false once a.txt has landed
    goals = []
    for name, plan in (("first", first), ("second", second)):
        goals += ["--goal", str(write_goal(project / "plans" / f"{name}.json", goal(name, plan)))]
    env = loop_env(agent_binary(tmp_path), KILO_LOOP_SANDBOX="off")
    result = run(project, env, *goals, "--parallel", "2", "-n", "2", "--no-dashboard", "--sandbox", "off")
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()
    assert "needs-merge: verify `test ! -f a.txt` failed on the merged result" in out
    kept = [p.name for p in (project / ".kilocode-loop" / "worktrees").iterdir() if p.is_dir()]
    assert len(kept) == 1 and kept[0].endswith("-second")

    (project / "a.txt").unlink()  # the operator's fix
    merged = run(project, env, "merge", kept[0], "--sandbox", "off")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "verified on the merged result: `test ! -f a.txt`" in merged.stdout
    assert (project / "b.txt").read_text() == "2\n"
    assert git(project, "branch", "--list", "kilo-loop/*") == ""


def test_two_plans_on_the_same_lines_one_lands_one_conflicts(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "repo", {"shared.txt": "one\ntwo\nthree\n"})
    goals = []
    for name, delay in (("first", 0.2), ("second", 1.5)):
        goals += ["--goal", str(write_goal(project / "plans" / f"{name}.json", goal(
            name, stage("s1", {"write": {"shared.txt": f"one\n{name}\nthree\n"}, "sleep": delay}))))]
    result = run(project, loop_env(agent_binary(tmp_path)), *goals, "--parallel", "2", "-n", "2", "--no-dashboard")
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert (project / "shared.txt").read_text() == "one\nfirst\nthree\n", "the first to finish lands whole"
    assert "needs-merge: conflicts in shared.txt" in out and "git -C" in out and "apply --3way" in out
    assert "kilo-loop merge" in out
    patches = list((project / ".kilocode-loop" / "worktrees").glob("*-second.patch"))
    assert len(patches) == 1 and "+second" in patches[0].read_text()
    kept = [p for p in (project / ".kilocode-loop" / "worktrees").iterdir() if p.is_dir()]
    assert len(kept) == 1 and (kept[0] / "shared.txt").read_text() == "one\nsecond\nthree\n", "nothing lost"
    assert not list(project.glob("*.rej")) and not list(project.glob("*.orig")), "no half-applied tree"


def test_merge_never_saves_the_patch_and_applies_nothing(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "repo")
    path = write_goal(project / "plans" / "a.json", goal("a", stage("s1", {"write": {"new.txt": "x\n"}})))
    result = run(project, loop_env(agent_binary(tmp_path)), "--goal", str(path), "--parallel", "1",
                 "--merge", "never", "-n", "2", "--no-dashboard")
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (project / "new.txt").exists()
    patches = list((project / ".kilocode-loop" / "worktrees").glob("*.patch"))
    assert len(patches) == 1 and "new.txt" in patches[0].read_text()
    assert "kilo-loop/" in git(project, "branch", "--list", "kilo-loop/*")


@pytest.mark.skipif(sys.platform != "linux", reason="signals to process groups")
def test_ctrl_c_leaves_every_worktree_resumable(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "repo")
    goals = []
    for name in ("a", "b"):
        goals += ["--goal", str(write_goal(project / "plans" / f"{name}.json", goal(
            name, stage("s1", {"write": {f"{name}.txt": "x\n"}, "sleep": 3}), stage("s2", {"sleep": 3}))))]
    proc = subprocess.Popen([sys.executable, "-m", "kilo_loop", *goals, "--parallel", "2", "-n", "3", "-p", "0"],
                            cwd=project, env=loop_env(agent_binary(tmp_path)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    runs = project / ".kilocode-loop" / "worktrees"
    while time.monotonic() < deadline and len(list(runs.glob("*/.kilocode-loop/runs/*/events.jsonl"))) < 2:
        time.sleep(0.2)
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out
    kept = [p for p in runs.iterdir() if p.is_dir()]
    assert len(kept) == 2, out
    assert out.count("--resume") >= 2
    # Resume one plan: it finishes and its result lands.
    run_id = kept[0].name
    plan = "a" if run_id.endswith("-a") else "b"
    result = run(project, loop_env(agent_binary(tmp_path)), "--goal", f"plans/{plan}.json", "--parallel", "1",
                 "--resume", run_id, "-n", "3", "--no-dashboard")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / f"{plan}.txt").read_text() == "x\n"
    assert not kept[0].exists()


def test_one_dashboard_answers_and_stops_each_plan(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "repo")
    asks = write_goal(project / "plans" / "asks.json", goal(
        "asks", stage("s1", {"write": {"q.txt": "1\n"}, "ask": "Which database?"}),
        stage("s2", {"append": {"q.txt": "2\n"}})))
    slow = write_goal(project / "plans" / "slow.json", goal(
        "slow", *[stage(f"s{n}", {"append": {"slow.txt": f"{n}\n"}, "sleep": 2}) for n in range(1, 13)]))
    proc = start_parallel(project, tmp_path, [asks, slow], "--parallel", "2", "-n", "14", "-p", "0")
    try:
        url = dashboard_url(proc)
        base, token = url.split("/?token=")
        assert httpx.get(f"{base}/api/runs").status_code == 401, "the token is needed even on loopback"
        client = httpx.Client(base_url=base, headers={"authorization": f"Bearer {token}"}, timeout=10)
        deadline = time.monotonic() + 120
        items: list[dict[str, object]] = []
        while time.monotonic() < deadline and not items:
            items = client.get("/api/inbox").json()["items"]
            time.sleep(0.2)
        assert items and items[0]["questions"][0]["question"] == "Which database?"  # type: ignore[index]
        asks_id = str(items[0]["runId"])
        assert client.post(f"/api/runs/{asks_id}/answer", json={"answers": ["PostgreSQL"]}).status_code == 200
        runs = client.get("/api/runs").json()["runs"]
        assert {r["title"] for r in runs} == {"asks", "slow"}
        slow_id = next(r["runId"] for r in runs if r["title"] == "slow")
        assert client.post(f"/api/runs/{slow_id}/control", json={"action": "stop"}).status_code == 200
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (project / "q.txt").read_text() == "1\n2\n", out
    prompt = (project / ".kilocode-loop" / "runs" / asks_id / "iterations" / "02-prompt.md").read_text()
    assert "PostgreSQL" in prompt
    state = json.loads((project / ".kilocode-loop" / "runs" / slow_id / "state.json").read_text())
    assert state["status"] == "aborted" and state["iteration"] < 12, "stopped from the dashboard"
    assert any(p.is_dir() for p in (project / ".kilocode-loop" / "worktrees").iterdir()), "kept for resume"


def test_a_plan_stops_resumably_when_its_parent_is_killed(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "repo")
    slow = write_goal(project / "plans" / "slow.json", goal(
        "slow", *[stage(f"s{n}", {"append": {"slow.txt": f"{n}\n"}, "sleep": 2}) for n in range(1, 8)]))
    proc = start_parallel(project, tmp_path, [slow], "--parallel", "1", "-n", "9", "--no-dashboard")
    states = project / ".kilocode-loop" / "worktrees"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(states.glob("*/.kilocode-loop/runs/*/state.json")):
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)  # the parent is gone at once: no Ctrl+C forwarded
    proc.communicate(timeout=30)
    [state_file] = list(states.glob("*/.kilocode-loop/runs/*/state.json"))
    deadline = time.monotonic() + 60
    status = ""
    while time.monotonic() < deadline and status != "aborted":
        status = json.loads(state_file.read_text()).get("status", "")
        time.sleep(0.3)
    assert status == "aborted", "the orphaned plan stopped and saved instead of running on unsteered"


def test_a_plan_that_cannot_run_stops_all_before_any_worktree(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "repo", {"README.md": "hello\n"})
    good = write_goal(project / "plans" / "a.json", goal("plan a", stage("s1", {"write": {"a.txt": "a\n"}})))
    broken = project / "plans" / "b.json"
    broken.write_text('{"title": "b", "stages": [')
    result = run(project, loop_env(agent_binary(tmp_path)), "--goal", str(good), "--goal", str(broken),
                 "-n", "1", "--no-dashboard", "--keep-open-for", "1m")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "kilo-loop: warning: --keep-open-for has no effect on parallel plans" in result.stderr
    assert f"kilo-loop: goal error: {broken}:1: invalid JSON" in result.stderr
    assert "worktrees" not in git(project, "worktree", "list")
    assert "kilo-loop/" not in git(project, "branch", "--list")
    assert not (project / "a.txt").exists()
