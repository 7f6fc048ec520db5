"""`kilo-loop fleet`, `worker` and `submit` refuse what Redis cannot take with one line and exit 2,
and `submit` to a queue nobody serves says so (exit 1) — no traceback, no password printed.
No redis-server is needed: nothing here reaches one (tests/fleet/ runs the real fleet)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.cli import main

SECRET = "hunter2-not-a-real-password"


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.md"
    path.write_text("# A plan\n\n- [ ] One\n", encoding="utf-8")
    return path


def invoke(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, BaseException | None]:
    monkeypatch.delenv("KILO_LOOP_BROKER", raising=False)
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output, result.exception


@pytest.mark.parametrize("broker", ["localhost:6379", f"http://:{SECRET}@10.0.0.5:6379/0", "redis//host"])
@pytest.mark.parametrize("command", ["fleet", "worker", "submit"])
def test_a_broker_that_is_not_a_redis_url_is_a_usage_error(
    command: str, broker: str, plan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = ["--repo", ".", "--goal", str(plan)] if command == "submit" else []
    code, output, exc = invoke([command, "--broker", broker, *extra], monkeypatch)
    assert code == 2 and isinstance(exc, SystemExit), output
    assert "Invalid value for '--broker': not a Redis URL" in output
    assert SECRET not in output


def test_submit_to_a_queue_nobody_serves_is_one_line_and_exit_1(plan: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, output, exc = invoke(["submit", "--broker", f"redis://:{SECRET}@127.0.0.1:1/0", "--repo", ".",
                                "--goal", str(plan), "-n", "2"], monkeypatch)
    assert code == 1 and isinstance(exc, SystemExit), output
    assert output.startswith("Error: cannot reach the queue at redis://:***@127.0.0.1:1/0")
    assert "nothing was queued" in output and SECRET not in output and len(output.strip().splitlines()) == 1


@pytest.mark.parametrize("port", ["-1", "65536"])
def test_a_fleet_port_no_socket_can_have_is_refused_not_replaced_by_a_free_one(
    port: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kilo_loop.fleet.serve

    def no_dashboard(*_: object) -> None:
        raise AssertionError("the dashboard must not start on another port")

    monkeypatch.setattr(kilo_loop.fleet.serve, "fleet_dashboard", no_dashboard)
    code, output, _ = invoke(["fleet", "--broker", "redis://127.0.0.1:1/0", "--port", port], monkeypatch)
    assert code == 2 and "0<=x<=65535" in output


@pytest.mark.parametrize(("name", "body", "needle"), [
    ("plan.md", b"# A plan\n\nno checklist\n", "no stages"),
    ("plan.md", b"\xff\xfe# not UTF-8\n- [ ] One\n", "not UTF-8 text"),
    ("plan.txt", b"- [ ] One\n", "unsupported goal file type '.txt'"),
])
def test_submit_refuses_a_plan_no_worker_could_run_before_queueing_it(
    tmp_path: Path, name: str, body: bytes, needle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    goal = tmp_path / name
    goal.write_bytes(body)
    code, output, exc = invoke(["submit", "--broker", "redis://127.0.0.1:1/0", "--repo", ".", "--goal", str(goal)],
                               monkeypatch)
    assert code == 2 and isinstance(exc, SystemExit), output
    assert "goal error" in output and needle in output
    assert "Traceback" not in output and "cannot reach the queue" not in output


@pytest.mark.parametrize(("flags", "needle"), [
    (["-n", "abc"], "'abc' is not a valid integer"),
    (["--bogus-flag"], "No such option '--bogus-flag'"),
    (["-n", "0"], "--iterations: Input should be greater than or equal to 1"),
    (["stray"], "unexpected extra argument (stray)"),
])
def test_submit_refuses_run_flags_the_run_would_refuse_before_queueing(
    plan: Path, flags: list[str], needle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output, _ = invoke(["submit", "--broker", "redis://127.0.0.1:1/0", "--repo", ".", "--goal", str(plan),
                              "--dry-run", *flags], monkeypatch)
    assert code == 2, output
    assert needle in output and "cannot reach the queue" not in output


def test_submit_names_the_run_flags_the_worker_sets_instead_of_dropping_them_silently(
    plan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output, _ = invoke(["submit", "--broker", "redis://127.0.0.1:1/0", "--repo", ".", "--goal", str(plan),
                              "--goal-text", "another goal", "-C", "/elsewhere", "--quiet", "-n", "2"], monkeypatch)
    assert code == 1 and "cannot reach the queue" in output  # the flags themselves are fine: on to the queue
    assert [line for line in output.splitlines() if "warning" in line] == [
        f"kilo-loop: warning: {flag} has no effect in a submitted run (the worker sets it)"
        for flag in ("--goal-text", "-C", "--quiet")]


def test_submit_with_the_run_id_of_a_run_already_in_the_fleet_queues_nothing(
    plan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    import kilo_loop.fleet.queue
    from kilo_loop.fleet.store import FleetStore

    def no_change(*_: object) -> None:
        raise AssertionError("nothing may be registered or queued")

    monkeypatch.setattr(kilo_loop.fleet.queue, "make_broker", lambda url: SimpleNamespace(client=None))
    monkeypatch.setattr(FleetStore, "__init__", lambda self, client: None)
    monkeypatch.setattr(FleetStore, "job", lambda self, run_id: object() if run_id == "taken" else None)
    monkeypatch.setattr(FleetStore, "register", no_change)
    monkeypatch.setattr(kilo_loop.fleet.queue, "enqueue", no_change)
    code, output, _ = invoke(["submit", "--broker", "redis://127.0.0.1:1/0", "--repo", ".", "--goal", str(plan),
                              "--run-id", "taken"], monkeypatch)
    assert code == 2, output
    assert "run taken is already in the fleet" in output and "nothing was queued" in output


def test_a_worker_told_not_to_wait_on_a_queue_nobody_serves_says_so_and_exits_1(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output, exc = invoke(["worker", "--broker", f"redis://:{SECRET}@127.0.0.1:1/0", "--broker-wait", "0"],
                               monkeypatch)
    assert code == 1 and isinstance(exc, SystemExit), output
    assert output.startswith("Error: cannot reach the queue at redis://:***@127.0.0.1:1/0")
    assert "no worker was started" in output and SECRET not in output and len(output.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["worker", "fleet"])
def test_a_bounded_broker_wait_says_it_is_waiting_then_gives_up(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    code, output, _ = invoke([command, "--broker", f"redis://:{SECRET}@127.0.0.1:1/0", "--broker-wait", "1s"],
                             monkeypatch)
    assert code == 1, output
    lines = output.strip().splitlines()
    assert lines[0].startswith("kilo-loop: waiting for the queue at redis://:***@127.0.0.1:1/0 (")
    assert lines[0].endswith("for up to 1 s")
    assert lines[-1].startswith("Error: cannot reach the queue at redis://:***@127.0.0.1:1/0 within 1 s")
    assert SECRET not in output


def test_a_broker_wait_that_is_not_a_duration_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    code, output, _ = invoke(["worker", "--broker", "redis://127.0.0.1:1/0", "--broker-wait", "soon"], monkeypatch)
    assert code == 2 and "Invalid value for '--broker-wait'" in output and "or forever" in output


@pytest.mark.parametrize("command", [["worker", "--broker", "redis://127.0.0.1:1/0"], ["fleet", "--local", "1"]])
def test_a_workspace_that_is_a_file_is_a_usage_error(
    command: list[str], plan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output, _ = invoke([*command, "--workspace", str(plan)], monkeypatch)
    assert code == 2, output
    assert f"Invalid value for '--workspace': Directory '{plan}' is a file" in output


def test_fleet_with_both_broker_and_local_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import kilo_loop.fleet.local

    def no_server(*_: object) -> None:
        raise AssertionError("no redis-server may start")

    monkeypatch.setattr(kilo_loop.fleet.local.RedisServer, "start", no_server)
    code, output, _ = invoke(["fleet", "--broker", "redis://127.0.0.1:1/0", "--local", "1"], monkeypatch)
    assert code == 2, output
    assert "pass --broker redis://… or --local N, not both" in output


def test_fleet_workspace_without_local_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kilo_loop.commands.fleet
    import kilo_loop.fleet.serve

    def stop_here(*_: object) -> None:
        raise SystemExit(0)

    monkeypatch.setattr(kilo_loop.fleet.serve, "fleet_dashboard", stop_here)
    monkeypatch.setattr(kilo_loop.commands.fleet, "reach_queue", lambda *_: None)
    code, output, _ = invoke(["fleet", "--broker", "redis://127.0.0.1:1/0", "--workspace", str(tmp_path)],
                             monkeypatch)
    assert code == 0 and "kilo-loop: warning: --workspace has no effect without --local" in output


def test_a_fleet_dashboard_over_a_queue_nobody_serves_says_so_and_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    import kilo_loop.fleet.serve

    def no_dashboard(*_: object) -> None:
        raise AssertionError("no dashboard may start")

    monkeypatch.setattr(kilo_loop.fleet.serve, "fleet_dashboard", no_dashboard)
    code, output, _ = invoke(["fleet", "--broker", f"redis://:{SECRET}@127.0.0.1:1/0", "--broker-wait", "0"],
                             monkeypatch)
    assert code == 1, output
    assert output.startswith("Error: cannot reach the queue at redis://:***@127.0.0.1:1/0")
    assert "the dashboard was not started" in output and SECRET not in output


@pytest.mark.parametrize("flag", ["-manthropic/claude-haiku", "-mhigh"])
def test_a_glued_run_flag_with_an_h_in_its_value_is_handed_to_the_run_not_read_as_help(
    flag: str, plan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kilo_loop.commands.fleet

    seen: list[list[str]] = []
    monkeypatch.setattr(kilo_loop.commands.fleet, "check_run_flags", lambda goal, flags: seen.append(flags))
    code, output, _ = invoke(["submit", "--broker", "redis://127.0.0.1:1/0", "--repo", ".", "--goal", str(plan), flag],
                             monkeypatch)
    assert "Usage:" not in output and seen == [[flag]]
    assert code == 1 and "cannot reach the queue" in output
    assert "Queue a plan for the fleet" in CliRunner().invoke(main, ["submit", "--help"]).output
