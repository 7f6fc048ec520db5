"""One serve-transport turn against a scripted in-process server API (httpx MockTransport):
the stream mapped to AgentEvents, permissions answered before the tool runs, dropped frames
reconciled, kill / timeout abort the turn, a dead server is a transient failure."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from kilo_loop.agent.protocol import (
    AgentEvent,
    AgentQuestion,
    AgentRequest,
    GuardRejected,
    SessionStarted,
    StepFinished,
    Text,
    ToolUse,
)
from kilo_loop.agent.serve import backend as serve_backend
from kilo_loop.agent.serve.backend import ServeAgentRun, ServeBackend
from kilo_loop.agent.serve.broker import PermissionBroker
from kilo_loop.agent.serve.client import ServerClient
from kilo_loop.guard.runtime import Guard
from kilo_loop.loop.retry import transient_reason

SES = "ses_1"
Frame = dict[str, Any]


def ev(kind: str, **props: Any) -> Frame:
    return {"type": kind, "properties": props}


def busy() -> Frame:
    return ev("session.status", sessionID=SES, status={"type": "busy"})


def idle() -> Frame:
    return ev("session.idle", sessionID=SES)


def tool(part_id: str, status: str, command: str, **state: Any) -> Frame:
    part = {"id": part_id, "sessionID": SES, "messageID": "msg_a", "type": "tool", "callID": f"call_{part_id}",
            "tool": "bash", "state": {"status": status, "input": {"command": command}, **state}}
    return ev("message.part.updated", sessionID=SES, part=part)


def text(part_id: str, value: str) -> Frame:
    part = {"id": part_id, "sessionID": SES, "messageID": "msg_a", "type": "text", "text": value,
            "time": {"start": 1, "end": 2}}
    return ev("message.part.updated", sessionID=SES, part=part)


def step() -> Frame:
    part = {"id": "prt_step", "sessionID": SES, "messageID": "msg_a", "type": "step-finish", "reason": "stop",
            "cost": 0.5, "tokens": {"total": 12, "input": 10, "output": 2, "reasoning": 0,
                                    "cache": {"read": 0, "write": 0}}}
    return ev("message.part.updated", sessionID=SES, part=part)


class FakeApi:
    """The server API, scripted: `on_prompt` frames go out after the prompt, `on_reply[id]` after a reply."""

    def __init__(self, on_prompt: list[Frame], *, messages: list[Any] | None = None, end_stream: bool = False,
                 status: str = "idle") -> None:
        self.on_prompt = on_prompt
        self.on_reply: dict[str, list[Frame]] = {}
        self.messages = messages or []
        self.end_stream = end_stream
        self.status = status
        self.calls: list[tuple[str, str, Any]] = []
        self.on_stream_end: Callable[[], None] = lambda: None
        self._frames: asyncio.Queue[Frame | None] = asyncio.Queue()

    def push(self, frames: list[Frame]) -> None:
        for frame in frames:
            self._frames.put_nowait(frame)
        if self.end_stream:
            self._frames.put_nowait(None)

    async def _stream(self) -> AsyncIterator[bytes]:
        yield b'data: {"type":"server.connected","properties":{}}\n\n'
        while (frame := await self._frames.get()) is not None:
            yield b"data: " + json.dumps(frame).encode() + b"\n\n"
        self.on_stream_end()

    async def handle(self, request: httpx.Request) -> httpx.Response:
        path, body = request.url.path, json.loads(request.content) if request.content else None
        self.calls.append((request.method, path, body))
        if path == "/event":
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=self._stream())
        if path == "/session" and request.method == "POST":
            return httpx.Response(200, json={"id": SES})
        if path.endswith("/prompt_async"):
            self.push(self.on_prompt)
            return httpx.Response(204)
        if path.startswith(("/permission/", "/question/")):
            self.push(self.on_reply.get(path.split("/")[2], []))
            return httpx.Response(200, json=True)
        if path.endswith("/message"):
            return httpx.Response(200, json=self.messages)
        if path == "/session/status":
            return httpx.Response(200, json={SES: {"type": self.status}} if self.status != "idle" else {})
        if path.endswith("/abort"):
            return httpx.Response(200, json=True)
        return httpx.Response(404, json={"error": path})

    def posted(self, suffix: str) -> list[Any]:
        return [body for method, path, body in self.calls if method == "POST" and path.endswith(suffix)]


async def _never_exits(within_s: float) -> bool:
    return False


def make_backend(api: FakeApi, guard: Guard | None = None) -> ServeBackend:
    backend = ServeBackend("kilo", "kilo", fallback=SimpleNamespace(start=None))  # type: ignore[arg-type]
    backend.using_fallback = False
    backend.broker = PermissionBroker(guard or Guard(temp_dirs=["/tmp"]), "/work/project")
    backend._server = SimpleNamespace(alive=True, returncode=None, log_tail=lambda: "",  # type: ignore[assignment]
                                      exited=_never_exits)
    backend._client = ServerClient("http://127.0.0.1:9", "kilo", "pw", transport=httpx.MockTransport(api.handle))
    return backend


def request(**kwargs: Any) -> AgentRequest:
    return AgentRequest(prompt="do it", cwd=Path("/work/project"), title="t", **kwargs)


async def collect(run: ServeAgentRun, on_event: Callable[[AgentEvent], Any] | None = None) -> list[AgentEvent]:
    events = []
    async for event in run.events():
        events.append(event)
        if on_event is not None:
            await on_event(event)
    return events


@pytest.fixture(autouse=True)
def quick_silence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_backend, "_SILENCE_S", 0.05)
    monkeypatch.setattr(serve_backend, "_UNCONFIRMED_TURN_S", 0.2)


async def test_a_turn_streams_the_same_events_the_run_transport_yields() -> None:
    api = FakeApi([busy(), tool("p1", "running", "ls"), tool("p1", "completed", "ls", output="a\n"),
                   text("p2", "All done."), step(), idle()])
    run = make_backend(api).start(request(model="local/fake", agent="code"))
    assert isinstance(run, ServeAgentRun)

    events = await collect(run)

    assert events == [SessionStarted(SES), ToolUse("bash", {"command": "ls"}, "completed", output="a\n",
                                                   call_id="call_p1"),
                      Text("All done."), StepFinished(tokens=events[3].tokens, cost=0.5, reason="stop")]
    result = run.result
    assert result.exit_code == 0 and not result.failed and result.session_id == SES
    assert result.tokens.total == 12 and result.cost == 0.5 and result.text == "All done."
    [prompt] = api.posted("/prompt_async")
    assert prompt == {"parts": [{"type": "text", "text": "do it"}], "agent": "code",
                      "model": {"providerID": "local", "modelID": "fake"}}
    assert api.posted("/session") == [{"title": "t"}]


async def test_a_destructive_command_is_rejected_before_it_runs_and_the_turn_goes_on() -> None:
    push = 'bash -c "git push --force origin main"'
    asked = ev("permission.asked", id="per_9", sessionID=SES, permission="bash", patterns=[push],
               metadata={"command": push}, always=[], tool={"messageID": "msg_a", "callID": "call_p1"})
    api = FakeApi([busy(), tool("p1", "running", push), asked])
    api.on_reply["per_9"] = [tool("p1", "error", push, error="rejected"), text("p2", "I will not push."), idle()]

    events = await collect(make_backend(api).start(request()))

    [reply] = api.posted("/permission/per_9/reply")
    assert reply["reply"] == "reject" and reply["message"].startswith("denied by the loop's guard: git-push-force")
    rejected = [e for e in events if isinstance(e, GuardRejected)]
    assert [(r.tool, r.subject, r.rule, r.call_id) for r in rejected] == [("bash", push, "git-push-force", "call_p1")]
    assert rejected[0].decision.denied and rejected[0].reason
    assert Text("I will not push.") in events


async def test_an_ordinary_command_is_allowed_once() -> None:
    asked = ev("permission.asked", id="per_1", sessionID=SES, permission="bash", patterns=["ls"],
               metadata={"command": "ls"}, always=[], tool={"messageID": "msg_a", "callID": "call_p1"})
    api = FakeApi([busy(), asked])
    api.on_reply["per_1"] = [tool("p1", "completed", "ls", output=""), idle()]
    events = await collect(make_backend(api).start(request()))
    assert api.posted("/permission/per_1/reply") == [{"reply": "once"}]
    assert not [e for e in events if isinstance(e, GuardRejected)]


async def test_dropped_frames_are_reconciled_from_the_message_list() -> None:
    messages = [{"info": {"id": "msg_a", "role": "assistant"},
                 "parts": [{"id": "p9", "type": "text", "text": "Only in the list.", "time": {"start": 1, "end": 2}}]}]
    api = FakeApi([busy()], messages=messages)  # busy, then silence: idle was dropped

    events = await collect(make_backend(api).start(request()))

    assert events[-1] == Text("Only in the list.")
    assert ("GET", "/session/status", None) in api.calls


async def test_kill_aborts_the_turn() -> None:
    api = FakeApi([busy()], status="busy")
    run = make_backend(api).start(request())

    async def stop_soon() -> None:
        await asyncio.sleep(0.2)
        await run.kill("stopped by the operator")

    stopper = asyncio.create_task(stop_soon())
    await asyncio.wait_for(collect(run), 5)
    await stopper
    assert api.posted(f"/session/{SES}/abort") == [None]
    assert run.result.killed and run.result.error == "stopped by the operator"


async def test_the_iteration_timeout_aborts_the_turn_and_is_not_transient() -> None:
    api = FakeApi([busy()], status="busy")
    run = make_backend(api).start(request(timeout_s=0.3))
    await asyncio.wait_for(collect(run), 5)
    assert run.result.timed_out and api.posted("/abort")
    assert transient_reason(run.result) is None


async def test_a_dead_server_mid_turn_is_a_transient_failure() -> None:
    api = FakeApi([busy(), tool("p1", "completed", "ls", output="")], end_stream=True)
    backend = make_backend(api)
    async def exited(within_s: float) -> bool:
        return not server.alive

    server = SimpleNamespace(alive=True, returncode=None, log_tail=lambda: "boom", exited=exited)
    backend._server = server  # type: ignore[assignment]

    def die() -> None:
        server.alive, server.returncode = False, -9

    api.on_stream_end = die
    run = ServeAgentRun(backend, request())
    events = await collect(run)
    assert any(isinstance(e, ToolUse) for e in events)
    assert "died mid-turn" in (run.result.error or "")
    assert transient_reason(run.result) is not None


async def test_the_agents_question_is_answered_or_rejected_so_it_never_hangs() -> None:
    question = ev("question.asked", id="que_1", sessionID=SES,
                  questions=[{"question": "Which colour?", "header": "C", "options": [{"label": "red"}]}])
    api = FakeApi([busy(), question])
    api.on_reply["que_1"] = [text("p2", "Red it is."), idle()]
    run = make_backend(api).start(request())
    assert isinstance(run, ServeAgentRun)

    async def answer(event: AgentEvent) -> None:
        if isinstance(event, AgentQuestion):
            assert event.questions[0].options == ("red",)
            await run.answer(event.request_id, ["red"])

    events = await collect(run, answer)
    assert api.posted("/question/que_1/reply") == [{"answers": [["red"]]}]
    assert Text("Red it is.") in events

    unanswered = FakeApi([busy(), question])
    unanswered.on_reply["que_1"] = [idle()]
    await collect(make_backend(unanswered).start(request()))
    assert unanswered.posted("/question/que_1/reject") == [None]


async def test_a_shared_session_is_continued_and_its_earlier_messages_are_not_replayed() -> None:
    earlier = [{"info": {"id": "msg_old", "role": "assistant"},
                "parts": [{"id": "p_old", "type": "text", "text": "old", "time": {"start": 1, "end": 2}}]}]
    api = FakeApi([busy(), idle()], messages=earlier)
    events = await collect(make_backend(api).start(request(session_id=SES)))
    assert api.posted("/session") == []  # no new session
    assert Text("old") not in events


async def test_a_turn_killed_before_its_prompt_never_sends_it() -> None:
    api = FakeApi([busy(), idle()])
    run = make_backend(api).start(request())
    await run.kill("stopped by the operator")
    await asyncio.wait_for(collect(run), 5)
    assert api.posted("/prompt_async") == [] and run.result.killed


async def test_each_servers_password_is_handed_over_as_a_secret_before_the_server_starts(tmp_path: Path) -> None:
    fake = tmp_path / "kilo"
    fake.write_text("#!/bin/sh\nexit 3\n")  # a server that cannot start: the password was handed over already
    fake.chmod(0o755)
    backend = ServeBackend(str(fake), "kilo", fallback=SimpleNamespace(start=None))  # type: ignore[arg-type]
    secrets: list[str] = []
    warnings: list[str] = []
    up = await backend.open(project=tmp_path, env={}, guard=None, run_dir=tmp_path / "runs" / "r1",
                            warn=warnings.append, secret=secrets.append)
    assert up is False and "falling back" in warnings[-1]
    assert backend._server is not None and secrets == [backend._server.password]
    await backend.aclose()
