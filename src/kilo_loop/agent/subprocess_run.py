"""One agent CLI session as a subprocess: its own process group, stdin /dev/null, the
stdout stream parsed into AgentEvents as it arrives, a stderr tail kept, the result filled in.

Every CLI backend builds a `CliInvocation` (command, environment, stream parser, how to read
warnings off stderr) and hands it to `CliAgentRun`; what differs between CLIs stays in their
own packages.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kilo_loop.agent.protect_check import protect_env
from kilo_loop.agent.protocol import AgentEvent, AgentRequest, AgentResult
from kilo_loop.agent.tally import ResultTally
from kilo_loop.process_group import terminate_process_group
from kilo_loop.sandbox.failure import jail_failure

if TYPE_CHECKING:
    from kilo_loop.sandbox.jail import Jail

_READ_CHUNK = 1 << 16
_STDERR_TAIL_LINES = 40


class StreamParser(Protocol):
    def feed(self, chunk: bytes) -> Iterator[AgentEvent]: ...

    def finish(self) -> Iterator[AgentEvent]: ...


def no_warnings(stderr: str) -> list[str]:
    return []


@dataclass
class CliInvocation:
    command: list[str]
    env: dict[str, str]
    parser: StreamParser
    warnings: Callable[[str], list[str]] = no_warnings
    # Token totals: "sum" adds every StepFinished (kilo's per-step figures); "last" keeps the
    # latest (CLIs whose final event repeats the session's totals).
    token_totals: str = "sum"
    # Called with the filled-in result at the end (e.g. to explain a CLI's refusal to start).
    on_finish: Callable[[AgentResult], None] | None = None
    # The run's jail: the CLI (and every command it runs) starts inside it.
    jail: Jail | None = None
    # Events to report before the session starts (e.g. the loop undid a change to the CLI's config).
    preface: tuple[AgentEvent, ...] = ()


def jailed(invocation: CliInvocation, request: AgentRequest) -> tuple[list[str], dict[str, str]]:
    """The command and environment to start: wrapped in the run's jail when there is one (a reviewer's
    jail keeps the project read-only except its verdict file)."""
    if invocation.jail is None:
        return invocation.command, invocation.env
    if request.read_only:
        return invocation.jail.wrap(invocation.command, invocation.env, "reviewer", request.review_file)
    return invocation.jail.wrap(invocation.command, invocation.env)


def child_environment(request: AgentRequest, base: Mapping[str, str] | None = None,
                      extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The inherited environment, the backend's entries, the request's, and PWD = the project
    (kilo and opencode take their working directory from PWD, not from the real cwd); the stage's
    protect globs for the pre-tool hook."""
    env = dict(os.environ if base is None else base)
    env.update(extra or {})
    env.update(request.env)
    env.update(protect_env(str(request.cwd), request.protect))
    env["PWD"] = str(request.cwd)
    return env


class CliAgentRun:
    """One CLI subprocess; iterate `events()`, then read `result`."""

    def __init__(self, invocation: CliInvocation, request: AgentRequest) -> None:
        self._invocation = invocation
        self._command = invocation.command
        self._request = request
        self._parser = invocation.parser
        self._result = AgentResult(exit_code=None, session_id=request.session_id)
        self._stderr: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._tally = ResultTally(self._result, token_totals=invocation.token_totals)
        self._process: asyncio.subprocess.Process | None = None

    @property
    def command(self) -> list[str]:
        return list(self._command)

    @property
    def result(self) -> AgentResult:
        return self._result

    async def kill(self, reason: str) -> None:
        self._result.mark_killed(reason)
        if self._process is not None:
            await terminate_process_group(self._process)

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        for early in self._invocation.preface:
            yield early
        command, env = jailed(self._invocation, self._request)
        try:
            self._process = await asyncio.create_subprocess_exec(
                *command,
                cwd=self._request.cwd,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            self._result.error = f"could not start {self._command[0]}: {exc}"
            return
        stderr_task = asyncio.create_task(self._drain_stderr(self._process))
        try:
            async for event in self._stream(self._process):
                yield event
        finally:
            await self._finish(self._process, stderr_task)

    async def _stream(self, process: asyncio.subprocess.Process) -> AsyncGenerator[AgentEvent, None]:
        assert process.stdout is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._request.timeout_s if self._request.timeout_s else None
        while True:
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            try:
                chunk = await asyncio.wait_for(process.stdout.read(_READ_CHUNK), remaining)
            except TimeoutError:
                self._result.timed_out = True
                self._result.error = self._result.error or "iteration timed out (--max-iteration-minutes)"
                await terminate_process_group(process)
                return
            if not chunk:
                break
            for event in self._parser.feed(chunk):
                self._tally.record(event)
                yield event
        for event in self._parser.finish():
            self._tally.record(event)
            yield event

    async def _drain_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        async for line in process.stderr:
            self._stderr.append(line.decode("utf-8", "replace").rstrip())

    async def _finish(self, process: asyncio.subprocess.Process, stderr_task: asyncio.Task[None]) -> None:
        if process.returncode is None:
            try:
                await asyncio.wait_for(process.wait(), 5)
            except TimeoutError:
                await terminate_process_group(process)
        # The group may still hold children the CLI spawned (a shell, a dev server).
        await terminate_process_group(process, grace_s=1.0)
        try:
            await asyncio.wait_for(stderr_task, 2)
        except TimeoutError:
            stderr_task.cancel()
        result = self._result
        result.exit_code = process.returncode
        result.stderr_tail = "\n".join(self._stderr)
        result.warnings = self._invocation.warnings(result.stderr_tail)
        result.text = self._tally.text
        failure = jail_failure(result.stderr_tail, process.returncode) if self._invocation.jail else None
        if not self._tally.saw_activity and failure is not None and not result.killed:
            result.error = failure  # what bubblewrap refused, and what to do, not a silent CLI
        elif not self._tally.saw_activity and result.error is None:
            result.error = f"agent produced no events (exit {process.returncode})"
        elif result.error is None and process.returncode not in (0, None) and not result.killed:
            result.error = f"agent exited with status {process.returncode}"
        if self._invocation.on_finish is not None:
            self._invocation.on_finish(result)
        _drop_empty_verdict(self._request)


def _drop_empty_verdict(request: AgentRequest) -> None:
    """The reviewer's jail needed its verdict file to exist; one it left empty was never written."""
    path = request.review_file
    if request.read_only and path is not None:
        with contextlib.suppress(OSError):
            if path.stat().st_size == 0:
                path.unlink()
