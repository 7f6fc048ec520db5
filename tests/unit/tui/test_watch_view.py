"""The pure parts of `kilo-loop watch`: the run view's arithmetic and words, the SSE parser, the refusal text,
and what a URL names."""

from __future__ import annotations

import httpx
import pytest

from kilo_loop.tui import view
from kilo_loop.tui.client import SseParser, refusal_text
from kilo_loop.tui.target import BadTarget, from_url

T0 = view.parse_time("2026-12-02T12:00:00.000Z")
assert T0 is not None


def _state(**extra: object) -> dict[str, object]:
    state: dict[str, object] = {
        "status": "running", "startedAt": "2026-12-02T12:00:00.000Z", "maxIterations": 10, "iteration": 3,
        "stages": [{"id": "a", "title": "A", "status": "done"}, {"id": "b", "title": "B", "status": "pending"},
                   {"id": "c", "title": "C", "status": "pending"}],
        "currentStageId": "b",
        "iterations": [{"iteration": 1, "outcome": "ok", "durationMs": 60_000},
                       {"iteration": 2, "outcome": "ok", "durationMs": 120_000},
                       {"iteration": 3, "outcome": "running", "startedAt": "2026-12-02T12:03:00.000Z"}],
    }
    state.update(extra)
    return state


def test_the_clock_is_the_web_pages_arithmetic() -> None:
    clock = view.run_clock(_state(), T0 + 200_000)
    assert clock.elapsed == 200_000 and clock.average == 90_000 and clock.running_for == 20_000
    # 2 finished iterations for 1 done stage: 2 stages left need 4 iterations of 90 s, less the 20 s running
    assert clock.eta == 4 * 90_000 - 20_000
    capped = view.run_clock(_state(maxIterations=3), T0 + 200_000)
    assert capped.eta == 90_000 - 20_000  # the iteration budget caps it


@pytest.mark.parametrize(("status", "words"), [("waiting-answer", "waiting for you"), ("paused", "paused"),
                                               ("done", "finished")])
def test_eta_says_who_the_run_waits_for(status: str, words: str) -> None:
    state = _state(status=status)
    assert view.eta_text(state, view.run_clock(state, T0 + 1000)) == words


def test_durations_costs_and_tokens_read_like_the_dashboard() -> None:
    assert [view.fmt_duration(ms) for ms in (None, 4_000, 90_000, 3_900_000)] == ["—", "4s", "1m 30s", "1h 05m"]
    assert (view.fmt_cost(0.004), view.fmt_cost(0.42), view.fmt_tokens(184_200), view.fmt_tokens(2_500_000)) == (
        "$0.0040", "$0.42", "184.2k", "2.5M")
    line = view.figures_line({"totals": {"cost": 0.5, "tokens": 1000}, "guardBlocks": 2},
                             {"maxCost": 2.0, "maxTokens": None})
    assert "cost $0.50/$2.00" in line and "tokens 1.0k ·" in line and "guard blocks 2" in line


def test_stages_mark_the_current_one_and_the_headline_counts_done() -> None:
    state = _state()
    assert view.stage_lines(state)[1] == ">▶ 2. B [in progress]"
    assert "stages 1/3" in view.headline(state) and "33%" in view.headline(state)
    assert view.stage_lines(_state(status="done"))[1].startswith(" ·")  # a finished run points nowhere


def test_the_now_panel_keeps_what_the_agent_did_last_and_its_last_tools() -> None:
    now = view.NowPanel()
    for event in ({"type": "iteration-started", "message": "Iteration 3"}, *[
            {"type": "tool", "message": f"tool {n}"} for n in range(7)], {"type": "text", "message": "thinking"}):
        now.feed(event)
    assert now.doing == "thinking" and now.tools == tuple(f"tool {n}" for n in range(2, 7))
    lines = view.now_lines(_state(status="waiting-answer"), now)
    assert lines[:2] == ["Stage 2 of 3: B", "Waiting for your answer: press a to answer"]
    assert view.now_lines(_state(status="stopped", stopReason="stopped by you"), now) == ["Finished: stopped by you"]


def test_the_log_filters_and_search() -> None:
    events = [{"type": "iteration-started", "message": "Iteration 1"},
              {"type": "tool", "message": "▸ Run make", "data": {"status": "error"}},
              {"type": "guard", "message": "guard blocked: rm -rf build", "level": "warn"},
              {"type": "question", "message": "? Which one"},
              {"type": "text", "message": "fine"}]
    assert view.shown_lines(events, "guard", "") == ["── Iteration 1", "guard blocked: rm -rf build"]
    assert view.shown_lines(events, "errors", "") == ["── Iteration 1", "▸ Run make", "guard blocked: rm -rf build"]
    assert view.shown_lines(events, "questions", "") == ["── Iteration 1", "? Which one"]
    assert view.shown_lines(events, "all", "MAKE") == ["▸ Run make"]


def test_a_state_frame_merges_its_newest_iterations() -> None:
    state = _state(runId="r1")
    merged = view.merge_head(state, {"runId": "r1", "status": "paused",
                                     "iterations": [{"iteration": 3, "outcome": "ok", "durationMs": 5}]})
    assert merged["status"] == "paused" and [i["outcome"] for i in merged["iterations"]] == ["ok", "ok", "ok"]
    assert view.merge_head(state, {"runId": "other", "status": "done"}) is state


def test_the_sse_parser_reads_named_frames_ids_and_keepalives() -> None:
    parser = SseParser()
    lines = ["retry: 1000", "", "event: hello", 'data: {"seq": 3}', "", ": keepalive", "",
             "id: 4", "event: log", 'data: {"seq": 4, "message": "hi"}', "", 'data: {"seq": 5}', ""]
    frames = [frame for line in lines if (frame := parser.feed(line)) is not None]
    assert [(f.event, f.seq) for f in frames] == [("hello", None), ("log", 4), ("log", None)]
    assert frames[1].data["message"] == "hi"


def test_refusals_are_the_servers_words() -> None:
    assert refusal_text(httpx.Response(409, json={"error": "no question is waiting for an answer"})) == (
        "no question is waiting for an answer")
    assert refusal_text(httpx.Response(404, json={"detail": "no run r9"})) == "no run r9"
    assert refusal_text(httpx.Response(422, json={"detail": [{"msg": "bad action"}]})) == "bad action"
    assert refusal_text(httpx.Response(502, text="")) == "HTTP 502"


def test_a_url_names_the_dashboard_its_token_and_a_fleets_run() -> None:
    target = from_url("http://127.0.0.1:8123/?token=abc")
    assert (target.base, target.token, target.run_id) == ("http://127.0.0.1:8123/", "abc", None)
    fleet = from_url("http://127.0.0.1:9000/?token=t&run=20261202-000000-0001")
    assert fleet.run_id == "20261202-000000-0001" and fleet.base == "http://127.0.0.1:9000/"
    with pytest.raises(BadTarget, match="not a dashboard URL"):
        from_url("ftp://example/")


def test_watch_without_a_running_run_says_so(tmp_path: object) -> None:
    import subprocess
    from pathlib import Path

    from click.testing import CliRunner

    from kilo_loop.commands.watch import watch_command

    project = Path(str(tmp_path))
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    result = CliRunner().invoke(watch_command, ["-C", str(project)])
    assert result.exit_code != 0 and "no saved runs" in str(result.exception)
