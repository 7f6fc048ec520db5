from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from kilo_loop.agent.kilo.runtime import KILO, OPENCODE, build_command, detect_runtime
from kilo_loop.agent.protocol import AgentRequest, AgentResult
from kilo_loop.agent.subprocess_run import child_environment
from kilo_loop.loop.commands import Pause, SetSharedContext, command_for
from kilo_loop.loop.hitl import match_answers, resolve_option
from kilo_loop.loop.retry import backoff_delay_ms, transient_reason
from kilo_loop.run.control import AnswerItem, ControlError, RunControl
from kilo_loop.run.state import Question
from kilo_loop.run.status import EXIT_CODES, exit_code_for
from kilo_loop.settings import ConfigError, load_settings


def test_runtime_detection_and_command() -> None:
    assert detect_runtime("/usr/bin/opencode") is OPENCODE
    assert detect_runtime("/x/kilo") is KILO and detect_runtime("/x/opencode", "kilo") is KILO
    request = AgentRequest(prompt="do it", cwd=Path("/p"), title="t", agent="a", session_id="ses_1")
    assert build_command("opencode", OPENCODE, request) == [
        "opencode", "run", "--format", "json", "--auto", "--agent", "a", "--title", "t",
        "--session", "ses_1", "do it"]
    assert child_environment(request, {"PWD": "/elsewhere"})["PWD"] == "/p"


@pytest.mark.parametrize("message", ["read ECONNRESET", "HTTP 429: slow down", "APIError: HTTP 503: x",
                                     "Provider is overloaded", "socket hang up", "Connection reset by peer"])
def test_transient_errors(message: str) -> None:
    assert transient_reason(AgentResult(exit_code=1, error=message)) is not None


def test_not_transient() -> None:
    assert transient_reason(AgentResult(exit_code=1, error="invalid api key")) is None
    assert transient_reason(AgentResult(exit_code=1, error="ETIMEDOUT", timed_out=True)) is None
    assert transient_reason(AgentResult(exit_code=1, error="ECONNRESET", killed=True)) is None
    assert transient_reason(AgentResult(exit_code=0)) is None
    assert transient_reason(AgentResult(exit_code=1, error="x", stderr_tail="fetch failed")) == "fetch failed"


def test_backoff_doubles_and_caps() -> None:
    rng = random.Random(1)
    delays = [backoff_delay_ms(n, 2000, 60000, rng) for n in range(1, 10)]
    assert 1000 <= delays[0] <= 2000 and 2000 <= delays[1] <= 4000
    assert all(d <= 60000 for d in delays) and delays[-1] >= 30000


def test_exit_codes() -> None:
    assert EXIT_CODES == {"done": 0, "done-with-errors": 1, "error": 1, "aborted": 2, "stopped-budget": 3,
                          "stalled": 4, "stopped-guard": 5}
    assert exit_code_for("running") == 1


async def test_control_channel() -> None:
    assert command_for("pause") == Pause() and command_for("set-shared-context", True) == SetSharedContext(True)
    with pytest.raises(ControlError):
        command_for("set-shared-context", "yes")
    with pytest.raises(ControlError):
        command_for("explode")
    control = RunControl()
    control.pause()
    waiting = asyncio.ensure_future(control.wait_until_resumed())
    await asyncio.sleep(0)
    assert not waiting.done()
    control.submit_answers([AnswerItem("q", "a")])
    assert (await control.next_answers()) == [AnswerItem("q", "a")]
    control.stop()  # a Stop wakes the paused loop and every waiting question
    await asyncio.wait_for(waiting, 1)
    assert await control.next_answers() is None


def test_answers_match_questions() -> None:
    questions = [Question(question="DB?", options=["sqlite", "pg"]), Question(question="Name?")]
    answers = match_answers(questions, [AnswerItem("Name?", "kilo"), AnswerItem("DB?", "2")], 3)
    assert [(a.question, a.answer) for a in answers] == [("DB?", "pg"), ("Name?", "kilo")]
    assert resolve_option("9", questions[0]) == "9"


def test_settings_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / ".kilocode-loop" / "config.json"
    config.parent.mkdir()
    config.write_text('{"iterations": 7, "maxCost": 2.5, "sessionMode": "continue", "notify": "a b", "agent": "x"}')
    settings = load_settings({}, tmp_path)
    assert settings.iterations == 7 and settings.max_cost == 2.5 and settings.shared_context
    assert settings.notify == ["a", "b"]
    monkeypatch.setenv("KILO_LOOP_ITERATIONS", "8")
    assert load_settings({}, tmp_path).iterations == 8
    assert load_settings({"iterations": 9}, tmp_path).iterations == 9
    assert load_settings({}, tmp_path).agent == "x"


@pytest.mark.parametrize("body, needle", [('{"iterations": "many"}', "'iterations'"), ('{"port": "high"}', "'port'"),
                                          ("[1]", "JSON object"), ("{oops", "not valid JSON"),
                                          ('{"sessionMode": "both"}', "sessionMode")])
def test_settings_errors_name_file_and_key(tmp_path: Path, body: str, needle: str) -> None:
    config = tmp_path / ".kilocode-loop" / "config.json"
    config.parent.mkdir()
    config.write_text(body)
    with pytest.raises(ConfigError) as err:
        load_settings({}, tmp_path)
    assert str(config) in str(err.value) and needle in str(err.value)
