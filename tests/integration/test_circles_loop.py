"""Going in circles, in this process with a fake backend: thrash climbs the ladder (fresh session, the
operator's word, the stop with a diagnosis), oscillation is caught on the first return, a doom-looping
session is ended after N calls, and a detector that breaks is a warning while the run goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from kilo_loop.loop.circles.watch import CircleWatch
from kilo_loop.loop.commands import SubmitAnswers
from kilo_loop.run.control import AnswerItem
from kilo_loop.run.status import StopReason
from tests.integration.inprocess import Action, progress, start_loop, step, tool, write

VERIFIED = "# Thrash\n\n- [ ] Make it pass :: verify: test -f ok.txt\n"
PLAIN = "# Swing\n\n- [ ] Settle on a value\n"


def edit_and_claim_done(number: int, body: str | None = None) -> list[Action]:
    """An agent that edits a different line each time and says the stage is done (verify disagrees)."""
    return [write("app.py", body if body is not None else f"value = {number}\n"), progress("stage-1", "done"), step()]


def circle_steps(run: object) -> list[str]:
    return [e.data["step"] for e in run.seen if e.type == "circle"]  # type: ignore[attr-defined]


async def test_thrash_with_nobody_to_ask_takes_a_fresh_session_then_stops(project: Path) -> None:
    run = start_loop(project, [edit_and_claim_done(n) for n in range(1, 8)], VERIFIED, answer_channel=False,
                     iterations=10)
    state = await run.finish()
    assert state.status == StopReason.STALLED and StopReason.STALLED.exit_code == 4
    assert state.iteration == 4  # K=3 found it, the fresh session (4) failed the same way: stop
    assert circle_steps(run) == ["fresh-session", "stop"]
    assert "going in circles (thrash)" in state.stop_reason
    prompt = run.backend.prompt(4)
    assert "## Going in circles" in prompt and "Step back" in prompt and "exit 1" in prompt
    report = run.handle.layout.report.read_text()
    assert "## Going in circles" in report and "Iterations: 1, 2, 3, 4" in report and "app.py" in report
    assert "Ladder: iteration 3: thrash -> fresh-session; iteration 4: thrash -> stop" in report
    assert "| Make it pass | 4 |" in report  # the receipts' streak column
    assert state.circles.streak == 4


async def test_thrash_asks_the_operator_and_stops_when_nobody_answers_in_time(project: Path) -> None:
    run = start_loop(project, [edit_and_claim_done(n) for n in range(1, 8)], VERIFIED, iterations=10,
                     hitl="on-question", answer_timeout=0.2)
    state = await run.finish()
    assert circle_steps(run) == ["fresh-session", "ask-operator", "stop"]
    assert state.status == StopReason.STALLED and state.iteration == 4
    assert any(e.type == "question" and "going in circles" in e.message for e in run.seen)


async def test_an_operators_answer_goes_to_the_agent_and_the_next_repeat_stops(project: Path) -> None:
    run = start_loop(project, [edit_and_claim_done(n) for n in range(1, 8)], VERIFIED, iterations=10)
    state = await run.until(lambda s: bool(s.pending_questions))
    question = state.pending_questions[0].question
    await run.ask(SubmitAnswers((AnswerItem(question, "the fixture path is wrong: use tests/data", "dashboard"),)))
    state = await run.finish()
    assert circle_steps(run) == ["fresh-session", "ask-operator", "stop"]
    assert state.iteration == 5  # K=3, the fresh session (4), the operator's answer (5), then the stop
    assert "use tests/data" in run.backend.prompt(5)


async def test_oscillation_is_caught_on_the_first_return(project: Path) -> None:
    turns = [[write("app.py", body), progress("stage-1", "in_progress"), step()] for body in ("A\n", "B\n", "A\n", "C\n")]
    run = start_loop(project, turns, PLAIN, answer_channel=False, iterations=4)
    state = await run.finish()
    found = [e for e in run.seen if e.type == "circle"]
    assert [(e.iteration, e.data["kind"], e.data["step"]) for e in found] == [(3, "oscillation", "fresh-session")]
    assert "checkpoint before iteration 2" in found[0].message
    assert state.circles.oscillations == 1 and state.iterations[2].circles is not None
    assert "## Going in circles" in run.backend.prompt(4) and "came back" in run.backend.prompt(4)


async def test_a_session_repeating_one_call_is_ended_after_eight(project: Path) -> None:
    looping: list[Action] = [step(500, 0.005)] + [tool("cat README.md") for _ in range(50)] + [step()]
    run = start_loop(project, [looping, [write("ok.txt"), progress("stage-1", "done"), step()]], VERIFIED,
                     answer_channel=False, iterations=2)
    state = await run.finish()
    assert state.status == "done"
    assert sum(1 for e in run.seen if e.type == "tool" and e.iteration == 1) == 8
    ended = [e for e in run.seen if e.type == "session-ended-early"]
    assert len(ended) == 1 and ended[0].data["calls"] == 8 and ended[0].data["tokens"] == 500
    assert ended[0].data["saved_tokens"] > 0 and "saved up to" in ended[0].message
    first = state.iterations[0]
    assert first.outcome == "ended-early" and first.circles is not None and first.circles.saved_tokens > 0
    assert "ended early by the loop" in run.backend.prompt(2)
    assert "Sessions ended early (doom loops): 1" in run.handle.layout.report.read_text()


async def test_a_broken_detector_is_a_warning_and_the_run_goes_on(project: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("detector bug")

    monkeypatch.setattr(CircleWatch, "observe", broken)
    run = start_loop(project, [[write("ok.txt"), progress("stage-1", "done"), step()]], VERIFIED,
                     answer_channel=False, iterations=2)
    state = await run.finish()
    assert state.status == "done"
    assert any(e.type == "warning" and "circle detectors failed (RuntimeError: detector bug)" in e.message
               for e in run.seen)
