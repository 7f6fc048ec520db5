"""Backends that spawn `kilo run` / `opencode run --format json` and stream their events."""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path

from kilo_loop.agent.ndjson import NdjsonEventParser
from kilo_loop.agent.protocol import AgentEvent, AgentRequest, AgentResult
from kilo_loop.agent.tally import ResultTally
from kilo_loop.safety.process_group import terminate_process_group

_READ_CHUNK = 1 << 16
_STDERR_TAIL_LINES = 40


@dataclass(frozen=True)
class Runtime:
    """What differs between kilo and opencode (the rest of `run` is shared)."""

    name: str
    auto_flag: str
    config_env: str
    project_configs: tuple[str, ...]
    env_prefix: str


KILO = Runtime("kilo", "--auto", "KILO_CONFIG_CONTENT", ("kilo.json", ".kilo/kilo.json"), "KILO")
OPENCODE = Runtime(
    "opencode",
    "--dangerously-skip-permissions",
    "OPENCODE_CONFIG_CONTENT",
    ("opencode.json", ".opencode/opencode.json"),
    "OPENCODE",
)
RUNTIMES = {"kilo": KILO, "opencode": OPENCODE}


def detect_runtime(binary: str, requested: str = "auto") -> Runtime:
    """`auto` picks opencode when the binary's name says so, kilo otherwise."""
    if requested in RUNTIMES:
        return RUNTIMES[requested]
    return OPENCODE if "opencode" in Path(binary).name.lower() else KILO


def build_command(binary: str, runtime: Runtime, request: AgentRequest) -> list[str]:
    command = [binary, "run", "--format", "json"]
    if request.auto_approve:
        command.append(runtime.auto_flag)
    for flag, value in (("--agent", request.agent), ("--model", request.model), ("--variant", request.variant)):
        if value:
            command += [flag, value]
    if request.thinking:
        command.append("--thinking")
    command += ["--title", request.title]
    if request.session_id:
        command += ["--session", request.session_id]
    command.append(request.prompt)
    return command


def child_environment(request: AgentRequest, base: dict[str, str] | None = None) -> dict[str, str]:
    # Both CLIs take their working directory from PWD, not from the real cwd.
    env = dict(os.environ if base is None else base)
    env.update(request.env)
    env["PWD"] = str(request.cwd)
    return env


class CliAgentRun:
    """One `run` subprocess: its own process group, stdin /dev/null, events parsed as they arrive."""

    def __init__(self, binary: str, runtime: Runtime, request: AgentRequest) -> None:
        self._command = build_command(binary, runtime, request)
        self._request = request
        self._parser = NdjsonEventParser()
        self._result = AgentResult(exit_code=None, session_id=request.session_id)
        self._stderr: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._tally = ResultTally(self._result)
        self._process: asyncio.subprocess.Process | None = None

    @property
    def result(self) -> AgentResult:
        return self._result

    async def kill(self, reason: str) -> None:
        self._result.mark_killed(reason)
        if self._process is not None:
            await terminate_process_group(self._process)

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self._command,
                cwd=self._request.cwd,
                env=child_environment(self._request),
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
        result.text = self._tally.text
        if not self._tally.saw_activity and result.error is None:
            result.error = f"agent produced no events (exit {process.returncode})"
        elif result.error is None and process.returncode not in (0, None) and not result.killed:
            result.error = f"agent exited with status {process.returncode}"


class CliBackend:
    """An AgentBackend for a kilo-lineage CLI binary."""

    def __init__(self, binary: str, runtime: Runtime) -> None:
        self.binary = binary
        self.runtime = runtime
        self.name = runtime.name

    def start(self, request: AgentRequest) -> CliAgentRun:
        return CliAgentRun(self.binary, self.runtime, request)
