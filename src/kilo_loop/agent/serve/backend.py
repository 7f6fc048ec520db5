"""The serve transport: kilo / opencode driven through one warm `<cli> serve` per run.

`ServeBackend.open()` starts the server when the run starts (a server that
cannot start is reported once and the run falls back to `<cli> run`); each
`start(request)` is one turn: a new session (fresh mode) or the same one
(shared context), the prompt through `prompt_async`, the `/event` stream mapped
onto AgentEvents, every permission request decided by the loop's broker before
the tool runs, and the message list reconciled at the end of the turn. An
iteration timeout or a kill aborts the turn (`POST /session/{id}/abort`); a
server that died mid-turn is reported as a transient failure and restarted on
the next turn, which continues the same session (sessions live on disk).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kilo_loop.agent.kilo.config_files import Snapshot, config_files, restore, snapshot
from kilo_loop.agent.kilo.runtime import RuntimeName as Runtime
from kilo_loop.agent.protocol import (
    AgentBackend,
    AgentEvent,
    AgentPolicy,
    AgentQuestion,
    AgentRequest,
    AgentResult,
    AgentRun,
    GarbageLine,
    GuardRejected,
    Preparation,
    QuestionOption,
    SessionStarted,
    prepare_backend,
)
from kilo_loop.agent.serve.broker import PermissionBroker
from kilo_loop.agent.serve.client import ServerClient, ServerError, ServerGone
from kilo_loop.agent.serve.config import serve_env, user_bash_rules
from kilo_loop.agent.serve.mapping import PermissionAsk, QuestionAsk, TurnBusy, TurnIdle, TurnMapper
from kilo_loop.agent.serve.process import PIDFILE, AgentServer, ServerSpec, ServerStartError, kill_leftovers
from kilo_loop.agent.serve.sse import BadFrame
from kilo_loop.agent.tally import ResultTally
from kilo_loop.run.guard_decision import GuardDecision, GuardLike
from kilo_loop.sandbox.jail import Jail

_SILENCE_S = 3.0  # poll the session's status after this long without a frame
_UNCONFIRMED_TURN_S = 30.0  # a turn never seen busy counts as over (idle) only after this long
_CONNECT_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class _StreamEnded:
    error: Exception | None


@dataclass(frozen=True)
class _Wake:
    """Put on the frame queue by `kill()` so a waiting turn notices at once."""


class ServeBackend:
    """An AgentBackend for kilo / opencode over their server API; `run` is the fallback."""

    transport = "serve"

    def __init__(self, binary: str, runtime_name: str, fallback: AgentBackend, *,
                 start_timeout_s: float = 180.0) -> None:
        self.binary = binary
        self.name = runtime_name
        self.fallback = fallback
        self.start_timeout_s = start_timeout_s
        self.broker = PermissionBroker(None, "")
        self.using_fallback = True  # until open() has a server up
        self._spec: ServerSpec | None = None
        self._pidfile: Path | None = None
        self._server: AgentServer | None = None
        self._client: ServerClient | None = None
        self._lock = asyncio.Lock()
        self._warn: Callable[[str], None] = lambda _message: None
        self._secret: Callable[[str], None] = lambda _value: None
        self._ask_edits = False
        self._claimed: set[str] = set()  # permission/question requests a turn has taken on
        self._turn_sessions: set[str] = set()  # sessions with a turn running now
        self._jail: Jail | None = None
        self._permissions: Any = None  # the loop's permission config, as the first server reported it
        self._config_files: Snapshot = {}  # the project's CLI config files before the first server started

    def prepare(self, policy: AgentPolicy) -> Preparation:
        """The run fallback's child environment (deny globs, snapshots off, isolated home) is the server's too;
        a run with protect globs has the server ask before every edit."""
        self._ask_edits = bool(policy.protect)
        self._jail = policy.jail
        return prepare_backend(self.fallback, policy)

    # ----------------------------------------------------------------- lifecycle
    async def open(self, *, project: Path, env: dict[str, str], guard: GuardLike | None, run_dir: Path,
                   warn: Callable[[str], None], reviewer_guard: GuardLike | None = None,
                   secret: Callable[[str], None] = lambda _value: None) -> bool:
        """Start the run's server; False (said once through `warn`) when it cannot, and `run` is used.
        `reviewer_guard` (a run with reviewers) judges their sessions, and makes every edit ask.
        `secret` is handed each server's password before the server starts (an agent can read it)."""
        self._warn = warn
        self._secret = secret
        killed = kill_leftovers(run_dir.parent)
        if killed:
            warn(f"stopped {killed} agent server(s) left running by an earlier loop that was killed")
        child_env = {**os.environ, **env}
        runtime: Runtime = "opencode" if self.name == "opencode" else "kilo"
        # The user's own rules: their inline config (not the loop's injected globs) and project files.
        self.broker = PermissionBroker(guard, str(project), user_bash_rules(runtime, project, os.environ),
                                       reviewer_guard)
        ask_edits = self._ask_edits or reviewer_guard is not None
        self._spec = ServerSpec(self.binary, runtime, project, serve_env(runtime, child_env, ask_edits, self._jail is not None),
                                self.start_timeout_s, self._jail)
        self._pidfile = run_dir / PIDFILE
        self._config_files = snapshot(config_files(project, runtime))
        try:
            async with self._lock:
                await self._start_server()
        except ServerStartError as exc:
            warn(f"{exc}; falling back to `{self.name} run` for this run")
            return False
        self.using_fallback = False
        return True

    async def _start_server(self) -> None:
        assert self._spec is not None
        await self._stop_server()
        server = AgentServer(self._spec, self._pidfile)
        self._secret(server.password)
        client = ServerClient(server.base_url, server.username, server.password, uds=server.uds)
        self._server, self._client = server, client
        await server.start(client.healthy)
        if self._permissions is None:
            with contextlib.suppress(ServerError, ServerGone):
                self._permissions = await client.permission_config()

    async def permissions_changed(self) -> str | None:
        """Before a session: the server's effective permission config must still be the loop's. One that
        changed (an agent that reached the server's API: `PATCH /config`) is reported and the server
        restarted with the loop's own; a change the restart does not undo (a project config file) is an
        error. None when unchanged (or not checkable)."""
        async with self._lock:
            client, expected = self._client, self._permissions
            if client is None or expected is None or self._server is None or not self._server.alive:
                return None
            try:
                current = await client.permission_config()
            except (ServerError, ServerGone):
                return None
            if current == expected:
                return None
            restored = restore(self._config_files)
            put_back = f" (put back {', '.join(p.name for p in restored)})" if restored else ""
            self._warn(f"the agent server's permission config changed during the run; restarting it with the "
                       f"loop's{put_back}")
            await self._start_server()
            assert self._client is not None
            if await self._client.permission_config() != expected:
                raise ServerError(409, "permission config", "the agent server's permissions still differ from the "
                                  "loop's after a restart: a project config file (.kilo/, kilo.json[c], opencode.json[c]) "
                                  "overrides them; remove it")
            return f"the agent server's permission config was changed to {json.dumps(current)[:300]}"

    async def client(self) -> ServerClient:
        """The live server's client; a server that died is restarted first."""
        async with self._lock:
            server = self._server
            if server is None or not server.alive:
                code = server.returncode if server is not None else None
                self._warn(f"the agent server is not running (exit {code}); starting it again")
                await self._start_server()
            assert self._client is not None
            return self._client

    @property
    def server_alive(self) -> bool:
        return self._server is not None and self._server.alive

    async def server_died(self, within_s: float = 2.0) -> bool:
        """After a lost connection: did the server exit (given a moment to be reaped)?"""
        return self._server is None or await self._server.exited(within_s)

    @property
    def server_returncode(self) -> int | None:
        return self._server.returncode if self._server is not None else None

    def server_log(self) -> str:
        return self._server.log_tail() if self._server is not None else ""

    async def _stop_server(self) -> None:
        server, client = self._server, self._client
        if client is not None:
            await client.aclose()
        if server is not None:
            await server.stop()  # still self._server meanwhile, so kill_now() reaches it
        self._server = self._client = None

    async def aclose(self) -> None:
        """Stop the server with the run."""
        async with self._lock:
            await self._stop_server()

    def kill_now(self) -> None:
        """For a force exit that cannot await (a second Ctrl+C): SIGKILL the server's group."""
        if self._server is not None:
            self._server.kill_now()

    def claim(self, request_id: str, session: str, mine: str | None) -> bool:
        """Whether the turn on session `mine` answers this request. Every turn sees every session's
        requests (a subagent's session asks too): each is answered once, by its own session's turn
        when one is running, else by the first turn to see it (parallel reviewers share the server)."""
        if request_id in self._claimed or (session != mine and session in self._turn_sessions):
            return False
        self._claimed.add(request_id)
        return True

    def turn_started(self, session: str) -> None:
        self._turn_sessions.add(session)

    def turn_ended(self, session: str | None) -> None:
        self._turn_sessions.discard(session or "")

    def start(self, request: AgentRequest) -> AgentRun:
        if self.using_fallback:
            return self.fallback.start(request)
        return ServeAgentRun(self, request)


class ServeAgentRun:
    """One turn on the warm server."""

    def __init__(self, backend: ServeBackend, request: AgentRequest) -> None:
        self._backend = backend
        self._request = request
        self._result = AgentResult(exit_code=None, session_id=request.session_id)
        self._tally = ResultTally(self._result)
        self._client: ServerClient | None = None
        self._session: str | None = None
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._ended = False
        self._answered: set[str] = set()
        self._mapper: TurnMapper | None = None
        self._injected_at = 0.0  # loop time of the last injection
        self._prompted = asyncio.Event()  # the turn's own prompt went out (or the turn ended): notes may follow

    @property
    def result(self) -> AgentResult:
        return self._result

    async def kill(self, reason: str) -> None:
        self._result.mark_killed(reason)
        await self._end_turn()

    async def answer(self, request_id: str, answers: list[str] | None) -> None:
        """Reply to the CLI's question (None rejects it: the agent goes on without an answer)."""
        self._answered.add(request_id)
        if self._client is None:
            return
        with contextlib.suppress(ServerError, ServerGone):
            if answers:
                await self._client.reply_question(request_id, [[a] for a in answers])
            else:
                await self._client.reject_question(request_id)

    async def inject(self, text: str, token: str) -> bool:
        """Put `text` on the running session as a user message: the server queues it and its loop takes
        it into the next model request (after the current step's tools, never aborting them)."""
        await self._prompted.wait()
        client, session, mapper = self._client, self._session, self._mapper
        if self._ended or client is None or session is None or mapper is None:
            return False
        mapper.injected[text] = token
        self._injected_at = asyncio.get_running_loop().time()
        try:
            await client.prompt(session, text, agent=self._request.agent, model=self._request.model,
                                variant=self._request.variant)
        except (ServerError, ServerGone):
            mapper.injected.pop(text, None)
            return False
        return True

    async def _end_turn(self) -> None:
        if self._ended:
            return
        self._ended = True
        self._prompted.set()
        self._queue.put_nowait(_Wake())
        if self._client is not None and self._session is not None:
            with contextlib.suppress(ServerError, ServerGone):
                await self._client.abort(self._session)

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        try:
            async for event in self._turn():
                self._tally.record(event)
                yield event
        except ServerStartError as exc:
            self._result.error = self._result.error or f"agent server could not be restarted: {exc}"
        except ServerGone as exc:
            await self._lost(exc)
        except ServerError as exc:
            self._result.error = self._result.error or str(exc)
        finally:
            self._backend.turn_ended(self._session)
            self._ended = True  # no more notes into this turn
            self._prompted.set()
            self._finish()

    async def _lost(self, exc: ServerGone) -> None:
        if self._result.killed or self._result.timed_out:
            return
        backend = self._backend
        if await backend.server_died():
            why = f"the agent server died mid-turn (exit {backend.server_returncode}; connection reset)"
            self._result.stderr_tail = backend.server_log()
        else:
            why = f"lost the connection to the agent server (connection reset): {exc}"
        self._result.error = self._result.error or why

    def _finish(self) -> None:
        result = self._result
        result.text = self._tally.text
        if result.error is None and not result.killed and not result.timed_out:
            result.exit_code = 0
            if not self._tally.saw_activity:
                result.error = "agent produced no events"

    # ----------------------------------------------------------------- one turn
    async def _turn(self) -> AsyncIterator[AgentEvent]:
        request = self._request
        changed = await self._backend.permissions_changed()
        if changed is not None:
            yield GuardRejected(tool="config", subject="agent server permission config", decision=GuardDecision(
                "deny", "server-config", f"{changed}; the server was restarted with the loop's permissions"))
        self._client = client = await self._backend.client()
        session, known = await self._session_for(client)
        self._session = session
        self._backend.turn_started(session)
        yield SessionStarted(session)
        if self._ended:
            return  # killed before the prompt went out: nothing to start
        mapper = self._mapper = TurnMapper(session, request.prompt, request.thinking, known)
        async with client.events() as frames:
            reader = asyncio.create_task(self._pump(frames))
            try:
                await self._connected()
                if self._ended:
                    return
                await client.prompt(session, request.prompt, agent=request.agent, model=request.model,
                                    variant=request.variant)
                self._prompted.set()
                if self._ended:  # killed while the prompt was on its way: its abort may have come first
                    await client.abort(session)
                    return
                async for event in self._follow(client, mapper):
                    yield event
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
        if not self._ended:
            for event in mapper.reconcile(await client.messages(session)):
                yield event

    async def _session_for(self, client: ServerClient) -> tuple[str, frozenset[str]]:
        """The session to continue (with the messages it already holds), or a new one."""
        if self._request.session_id:
            try:
                messages = await client.messages(self._request.session_id)
            except ServerError as exc:
                if exc.status != 404:
                    raise
            else:
                ids = (m.get("info", {}).get("id") for m in messages if isinstance(m, dict))
                return self._request.session_id, frozenset(i for i in ids if isinstance(i, str))
        return await client.create_session(self._request.title), frozenset()

    async def _pump(self, frames: AsyncIterator[dict[str, Any] | BadFrame]) -> None:
        try:
            async for frame in frames:
                self._queue.put_nowait(frame)
        except (ServerGone, ServerError) as exc:
            self._queue.put_nowait(_StreamEnded(exc))
        else:
            self._queue.put_nowait(_StreamEnded(None))

    async def _connected(self) -> None:
        """Wait for the stream's first frame, so nothing of the turn is missed."""
        try:
            first = await asyncio.wait_for(self._queue.get(), _CONNECT_TIMEOUT_S)
        except TimeoutError as exc:
            raise ServerGone("the event stream sent nothing") from exc
        if isinstance(first, _StreamEnded):
            raise first.error or ServerGone("the event stream closed at once")
        if not isinstance(first, dict) or first.get("type") != "server.connected":
            self._queue.put_nowait(first)

    async def _follow(self, client: ServerClient, mapper: TurnMapper) -> AsyncIterator[AgentEvent]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        timeout = self._request.timeout_s
        deadline = started + timeout if timeout else None
        while not self._ended:
            wait = _SILENCE_S if deadline is None else max(0.0, min(_SILENCE_S, deadline - loop.time()))
            try:
                item = await asyncio.wait_for(self._queue.get(), wait)
            except TimeoutError:
                if deadline is not None and loop.time() >= deadline:
                    await self._time_out()
                    return
                if await self._turn_over(client, mapper, loop.time() - started):
                    return
                continue
            if isinstance(item, _StreamEnded):
                raise item.error or ServerGone("the event stream ended (connection reset)")
            if isinstance(item, BadFrame):
                yield GarbageLine(item.data, item.problem)
                continue
            if isinstance(item, dict):
                for out in mapper.feed(item):
                    if isinstance(out, TurnIdle):
                        if self._awaiting_injection(loop.time()):
                            continue  # a note went in as the session went idle: it starts the loop again
                        return
                    if isinstance(out, TurnBusy):
                        continue
                    async for event in self._act(client, mapper, out):
                        yield event

    async def _act(self, client: ServerClient, mapper: TurnMapper,
                   out: AgentEvent | PermissionAsk | QuestionAsk) -> AsyncIterator[AgentEvent]:
        if isinstance(out, (PermissionAsk, QuestionAsk)) and not self._backend.claim(out.id, out.session_id,
                                                                                      self._session):
            return  # another turn (its own session's) answers it
        if isinstance(out, PermissionAsk):
            tool = mapper.tools.get(out.call_id, "") or out.permission
            verdict = self._backend.broker.decide(out, tool, self._request.protect, self._request.read_only)
            await client.reply_permission(out.id, verdict.reply, verdict.message if verdict.rejected else None)
            if verdict.rejected:
                yield GuardRejected(tool, verdict.subject, verdict.decision, out.call_id)
        elif isinstance(out, QuestionAsk):
            options = tuple(QuestionOption(q.question, q.options) for q in out.questions)
            yield AgentQuestion(out.id, options)
            if out.id not in self._answered:
                await self.answer(out.id, None)  # nobody answered: the agent must not hang
        else:
            yield out

    async def _turn_over(self, client: ServerClient, mapper: TurnMapper, elapsed: float) -> bool:
        """After a silence: is the session idle (an idle frame may have been dropped)?"""
        if not mapper.busy and elapsed < _UNCONFIRMED_TURN_S:
            return False
        if self._awaiting_injection(asyncio.get_running_loop().time()):
            return False
        assert self._session is not None
        return not await client.session_busy(self._session)

    def _awaiting_injection(self, now: float) -> bool:
        """Injected text not yet carried by a model request, for at most `_UNCONFIRMED_TURN_S`."""
        mapper = self._mapper
        return mapper is not None and mapper.awaiting_injection and now - self._injected_at < _UNCONFIRMED_TURN_S

    async def _time_out(self) -> None:
        self._result.timed_out = True
        self._result.error = self._result.error or "iteration timed out (--max-iteration-minutes)"
        await self._end_turn()
