"""The views of a run sent to the browser stay small however long the run."""

from __future__ import annotations

from typing import Any

import orjson

from kilo_loop.run.state import IterationSummary, RunState, StageState, VerifyResult
from kilo_loop.web.snapshot import (
    KEPT_ITERATIONS,
    STATE_BUDGET_BYTES,
    compact_state,
    slim_event,
    state_head,
)


def long_run(iterations: int = 1000, log_line_chars: int = 500) -> dict[str, Any]:
    state = RunState(
        run_id="r1",
        project="/p",
        goal_title="Goal",
        stages=[StageState(id=f"s{i}", title=f"Stage {i} " + "t" * 80) for i in range(40)],
    )
    for n in range(1, iterations + 1):
        state.iterations.append(
            IterationSummary(
                iteration=n,
                stage_id="s1",
                stage_title="Stage 1",
                outcome="ok",
                tokens=15000 + n,
                cost=0.01,
                topic="A topic " * 10,
                summary="Did things. " * 60,
                files_changed=[f"src/module_{k}.py" for k in range(80)],
                verify=VerifyResult(command="pytest -q", exit_code=1, passed=False, output_tail="F" * 6000),
                warnings=["careful"] * 5,
            )
        )
    state.log_tail = [
        {
            "seq": k,
            "type": "text",
            "level": "info",
            "message": "x" * log_line_chars,
            "data": {"input": {"content": "y" * 50_000}},
        }
        for k in range(200)
    ]
    return state.wire()


def size(value: Any) -> int:
    return len(orjson.dumps(value))


def test_a_thousand_iteration_run_fits_the_budget() -> None:
    wire = long_run()
    assert size(wire) > 10 * STATE_BUDGET_BYTES
    compact = compact_state(wire)
    assert size(compact) <= STATE_BUDGET_BYTES
    assert compact["iterationsTotal"] == 1000
    assert compact["iterations"][-1]["iteration"] == 1000
    assert compact["iterationsOffset"] == 1000 - len(compact["iterations"])
    assert (
        compact["iterations"][-1]["filesChangedTotal"] == 80
        and len(compact["iterations"][-1]["filesChanged"]) == 30
    )


def test_small_runs_keep_everything_recent() -> None:
    wire = long_run(iterations=5, log_line_chars=50)
    compact = compact_state(wire)
    assert [i["iteration"] for i in compact["iterations"]] == [1, 2, 3, 4, 5]
    assert len(compact["logTail"]) == 200 and compact["iterationsOffset"] == 0


def test_the_budget_drops_log_lines_before_iterations() -> None:
    wire = long_run(iterations=60, log_line_chars=1900)
    compact = compact_state(wire, budget=150_000)
    assert size(compact) <= 150_000
    assert len(compact["iterations"]) in (KEPT_ITERATIONS, KEPT_ITERATIONS // 2)
    assert len(compact["logTail"]) < 200


def test_tool_input_is_clipped_in_events() -> None:
    event: dict[str, Any] = {
        "seq": 3,
        "type": "tool",
        "message": "▸ Write big.txt",
        "data": {"tool": "write", "input": {"filePath": "big.txt", "content": "z" * 100_000}},
    }
    slim = slim_event(event)
    assert slim["message"] == "▸ Write big.txt" and slim["data"]["input"]["filePath"] == "big.txt"
    assert size(slim) < 1000
    assert event["data"]["input"]["content"] == "z" * 100_000  # the original is untouched


def test_state_head_carries_only_the_newest_iterations() -> None:
    head = state_head(long_run(iterations=20, log_line_chars=10))
    assert [i["iteration"] for i in head["iterations"]] == [18, 19, 20]
    assert "logTail" not in head and head["iterationsTotal"] == 20
