"""The loop in this process with a fake backend: every command and every stop condition,
asserted on the state (and on the events that built it), without a subprocess."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kilo_loop.loop.commands import (
    AbortAfterSession,
    CommandRefused,
    Pause,
    Resume,
    Revert,
    SetPromptExtra,
    SetSharedContext,
    StopNow,
    SubmitAnswers,
)
from kilo_loop.run.control import AnswerItem
from kilo_loop.run.events import Reverted
from tests.integration.inprocess import done_turn, fail, gate, progress, start_loop, step, text, tool, write

TWO = "# Two\n\n- [ ] First stage\n- [ ] Second stage\n"
THREE = "# Three\n\n- [ ] First stage\n- [ ] Second stage\n- [ ] Third stage\n"
# Data only: the fake backend reports this tool call; the guard kills the session; nothing runs it.
FORCE_PUSH = "git push --force origin main"


def assert_rebuilt(loop_state: object, replayed: object) -> None:
    assert replayed is not None and replayed.snapshot() == loop_state.snapshot()  # type: ignore[attr-defined]


async def test_a_run_to_the_end_and_its_state_rebuilds_from_events(project: Path) -> None:
    run = start_loop(project, [done_turn("stage-1", "a.txt"), done_turn("stage-2", "b.txt", 100)], TWO)
    state = await run.finish()
    assert state.status == "done" and state.completed_stages == ["stage-1", "stage-2"]
    assert state.totals.tokens == 2000 and state.iteration == 2 and state.last_percent == 100
    assert [i.outcome for i in state.iterations] == ["ok", "ok"]
    assert run.types()[:3] == ["state-init", "run-started", "status"]
    assert_rebuilt(state, run.replayed())
    saved = json.loads(run.handle.layout.state.read_text())
    assert saved == state.snapshot()


async def test_pause_then_resume(project: Path) -> None:
    hold = asyncio.Event()
    run = start_loop(project, [[gate(hold), *done_turn("stage-1", "a.txt")], done_turn("stage-2", "b.txt")], TWO)
    await run.backend.started.wait()
    await run.ask(Pause())
    assert run.state.paused
    hold.set()
    await run.until(lambda s: s.status == "paused")
    assert len(run.backend.requests) == 1  # the next iteration waits
    await run.ask(Resume())
    state = await run.finish()
    assert state.status == "done" and not state.paused


async def test_stop_now_kills_the_session(project: Path) -> None:
    run = start_loop(project, [[text("busy"), gate(asyncio.Event()), step()]], TWO)
    await run.backend.started.wait()
    await run.ask(StopNow())
    state = await run.finish()
    assert state.status == "aborted" and state.iterations[-1].outcome == "stopped"
    assert "stop" in [e.data.get("action") for e in run.seen if e.type == "control"]
    with pytest.raises(CommandRefused) as refused:
        await run.ask(Pause())
    assert refused.value.refusal == "conflict"


async def test_abort_after_the_session_lets_it_finish(project: Path) -> None:
    hold = asyncio.Event()
    run = start_loop(project, [[gate(hold), *done_turn("stage-1", "a.txt")], done_turn("stage-2")], TWO)
    await run.backend.started.wait()
    await run.ask(AbortAfterSession())
    assert run.state.abort_requested
    hold.set()
    state = await run.finish()
    assert state.status == "aborted" and state.iterations[0].outcome == "ok"
    assert state.completed_stages == ["stage-1"] and len(run.backend.requests) == 1


async def test_shared_context_continues_the_session_from_the_next_iteration(project: Path) -> None:
    hold = asyncio.Event()
    run = start_loop(project, [[gate(hold), *done_turn("stage-1", "a.txt")], done_turn("stage-2", "b.txt")], TWO)
    await run.backend.started.wait()
    await run.ask(SetSharedContext(True))
    hold.set()
    state = await run.finish()
    assert state.shared_context and state.status == "done"
    assert run.backend.requests[0].session_id is None
    assert run.backend.requests[1].session_id == "ses_inproc000"


async def test_prompt_extra_command_reaches_the_next_prompt(project: Path) -> None:
    hold = asyncio.Event()
    run = start_loop(project, [[gate(hold), *done_turn("stage-1", "a.txt")], done_turn("stage-2", "b.txt")], TWO)
    await run.backend.started.wait()
    await run.ask(SetPromptExtra("Use tabs, not spaces."))
    hold.set()
    state = await run.finish()
    assert "Use tabs, not spaces." not in run.backend.prompt(1)
    assert "Use tabs, not spaces." in run.backend.prompt(2)
    assert state.prompt_extra == "Use tabs, not spaces."


async def test_an_answer_goes_into_the_next_prompt_and_a_stray_one_is_refused(project: Path) -> None:
    ask = [text("need a decision"), write("q.txt"),
           progress("stage-1", "in_progress", needsInput=True,
                    questions=[{"question": "Which database?", "options": ["sqlite", "postgres"]}]), step()]
    run = start_loop(project, [ask, done_turn("stage-1", "a"), done_turn("stage-2", "b")], TWO)
    await run.until(lambda s: s.status == "waiting-answer")
    assert [q.question for q in run.state.pending_questions] == ["Which database?"]
    await run.ask(SubmitAnswers((AnswerItem("Which database?", "2", "dashboard"),)))
    await run.until(lambda s: s.iteration >= 2)
    with pytest.raises(CommandRefused) as refused:
        await run.ask(SubmitAnswers((AnswerItem("Which database?", "1", "dashboard"),)))
    assert refused.value.refusal == "conflict"
    state = await run.finish()
    assert "A: postgres" in run.backend.prompt(2) and state.answers == 1 and state.pending_questions == []


async def test_revert_is_refused_mid_session_whatever_run_it_names(project: Path) -> None:
    hold = asyncio.Event()
    first = start_loop(project, [done_turn("stage-1", "a.txt")], "# One\n\n- [ ] Only stage\n", run_id="older")
    await first.finish()
    run = start_loop(project, [[write("b.txt"), gate(hold), *done_turn("stage-1", "c.txt")],
                               done_turn("stage-2", "d.txt")], TWO, run_id="live")
    await run.backend.started.wait()
    await run.until(lambda s: s.status == "running" and (project / "b.txt").exists())
    for named in (None, "older"):
        with pytest.raises(CommandRefused) as refused:
            await run.ask(Revert(1, named))
        assert refused.value.refusal == "conflict"
    assert (project / "b.txt").exists() and not any(isinstance(e, Reverted) for e in run.seen)
    await run.ask(Pause())
    hold.set()
    await run.until(lambda s: s.status == "paused")
    reply = await run.ask(Revert(1, "older"))
    assert "a.txt" in reply.result.deleted
    reverted = [e for e in run.seen if isinstance(e, Reverted)]
    assert len(reverted) == 1 and reverted[0].run == "older" and reverted[0].iteration_reverted == 1
    await run.ask(Revert(1))
    assert not (project / "c.txt").exists()
    await run.ask(StopNow())
    await run.finish()


async def test_budget_stops_the_run(project: Path) -> None:
    run = start_loop(project, [done_turn("stage-1", "a.txt"), done_turn("stage-2", "b.txt")], THREE, max_cost=0.015)
    state = await run.finish()
    assert state.status == "stopped-budget" and "max-cost" in state.stop_reason
    run = start_loop(project, [done_turn("stage-1", "a.txt")], THREE, max_tokens=500, run_id="tokens")
    state = await run.finish()
    assert state.status == "stopped-budget" and "max-tokens" in state.stop_reason


async def test_stale_iterations_stall_the_run(project: Path) -> None:
    idle = [text("thinking"), progress("stage-1", "in_progress"), step()]
    run = start_loop(project, [idle], TWO, max_stale_iterations=2, hitl="off")
    state = await run.finish()
    assert state.status == "stalled" and state.stale_iterations == 2 and state.iteration == 2


async def test_guard_limits(project: Path) -> None:
    push = [text("pushing"), tool(FORCE_PUSH), step()]
    run = start_loop(project, [push], TWO, guard_stop=True)
    state = await run.finish()
    assert state.status == "stopped-guard" and state.guard_blocks == 1 and "guard" in state.guard_note
    run = start_loop(project, [push], TWO, max_guard_blocks=2, iterations=5, run_id="twice")
    state = await run.finish()
    assert state.status == "stopped-guard" and state.consecutive_guard_blocks == 2
    assert "command guard" in run.backend.prompt(2)


async def test_iterations_used_and_failures(project: Path) -> None:
    run = start_loop(project, [[text("oops"), fail("model exploded")]], TWO, iterations=2, retry=False)
    state = await run.finish()
    assert state.status == "done-with-errors" and [i.outcome for i in state.iterations] == ["failed", "failed"]


async def test_blocked_stage_and_verify_feedback_survive_a_resume(project: Path) -> None:
    goal = "# V\n\n- [ ] First stage :: verify: test -f ok.txt\n- [ ] Second stage\n"
    run = start_loop(project, [done_turn("stage-1", "a.txt")], goal, iterations=1, run_id="v1")
    state = await run.finish()
    assert state.blocked_stages == ["stage-1"] and "test -f ok.txt" in state.verify_feedback
    run = start_loop(project, [[write("ok.txt"), *done_turn("stage-1")], done_turn("stage-2", "z")], goal,
                     resume="v1")
    await run.backend.started.wait()
    prompt = run.backend.prompt(1)
    assert "## Verify failed last iteration" in prompt and "[!] stage-1" in prompt
    state = await run.finish()
    assert state.status == "done" and state.blocked_stages == [] and state.verify_feedback == ""
    assert_rebuilt(state, run.replayed())


# ------------------------------------------------------------------ issue 13: never hang, never lose
ASK = [text("need a decision"), write("q.txt"),
       progress("stage-1", "in_progress", needsInput=True, questions=[{"question": "Which database?"}]), step()]


async def test_an_unanswered_question_is_recorded_and_the_next_prompt_says_so(project: Path) -> None:
    run = start_loop(project, [ASK, done_turn("stage-1", "a"), done_turn("stage-2", "b")], TWO, answer_timeout=0.2)
    state = await run.finish()
    assert state.status == "done" and state.answers == 0
    unanswered = [e for e in run.seen if e.type == "unanswered"]
    assert len(unanswered) == 1 and "Which database?" in unanswered[0].message
    assert "## Unanswered questions" in run.backend.prompt(2) and "Which database?" in run.backend.prompt(2)
    assert "## Unanswered questions" not in run.backend.prompt(3) and state.unanswered == []


async def test_with_no_channel_questions_are_recorded_and_never_waited_for(project: Path) -> None:
    run = start_loop(project, [ASK, done_turn("stage-1", "a"), done_turn("stage-2", "b")], TWO, answer_channel=False)
    state = await run.finish()
    assert state.status == "done" and "waiting-answer" not in [e.data.get("status") for e in run.seen]
    assert "Which database?" in run.backend.prompt(2)


async def test_a_usage_limit_waits_for_its_reset_then_goes_on(project: Path) -> None:
    limited = [text("hi"), fail("APIError: usage limit reached, try again in 1 seconds")]
    run = start_loop(project, [limited, done_turn("stage-1", "a"), done_turn("stage-2", "b")], TWO)
    await run.until(lambda s: s.status == "waiting-quota" and s.quota_until is not None)
    state = await run.finish()
    assert state.status == "done" and state.quota_until is None
    assert [i.outcome for i in state.iterations] == ["ok", "ok"]  # the same iteration went on
    assert len(run.backend.requests) == 3 and state.retry.attempt == 0
    assert "quota-wait" in run.types()
    assert_rebuilt(state, run.replayed())


async def test_a_reset_beyond_max_quota_wait_stops_resumable(project: Path) -> None:
    limited = [text("hi"), fail("Claude usage limit reached, resets in 3 hours")]
    run = start_loop(project, [limited], TWO, max_quota_wait=60)
    state = await run.finish()
    assert state.status == "stopped-budget" and "--max-quota-wait" in state.stop_reason
    assert "--resume" in state.resume_command and len(run.backend.requests) == 1


# ------------------------------------------------------------------ issue 8 item 9: bounded state
async def test_state_keeps_a_window_and_the_history_stays_on_disk(project: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from kilo_loop.run import reducer
    from kilo_loop.web.controller import LiveRun
    from kilo_loop.web.history import known_iterations, page_iterations

    monkeypatch.setattr(reducer, "ITERATIONS_KEPT", 3)
    goal = "# Eight\n\n" + "".join(f"- [ ] Stage {n}\n" for n in range(1, 9))
    run = start_loop(project, [done_turn(f"stage-{n}", f"f{n}.txt") for n in range(1, 9)], goal, iterations=8)
    state = await run.finish()
    assert state.status == "done" and state.iterations_total == 8
    assert [i.iteration for i in state.iterations] == [6, 7, 8]
    saved = json.loads(run.handle.layout.state.read_text())
    assert saved["iterationsTotal"] == 8 and len(saved["iterations"]) == 3
    report = run.handle.layout.report.read_text()
    assert all(f"| {n} | Stage {n} | ok |" in report for n in range(1, 9))  # the run report has them all
    assert_rebuilt(state, run.replayed())
    view = LiveRun(run.handle).snapshot()
    assert view["iterationsTotal"] == 8 and view["iterationsOffset"] == 5
    known = known_iterations(saved)
    page = page_iterations(run.handle.layout, known, 0, 5)
    assert [item["iteration"] for item in page] == [1, 2, 3, 4, 5] and page[0]["stageTitle"] == "Stage 1"
