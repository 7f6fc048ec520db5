"""A connection the loop's proxy refused, shown where the agent's other refusals are: each session's
refusals become `GuardRejected` events at its end (a guard event in the report, and the next prompt
says what was refused and why)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from kilo_loop.agent.protocol import (
    AgentBackend,
    AgentEvent,
    AgentRequest,
    AgentResult,
    AgentRun,
    GuardRejected,
)
from kilo_loop.run.guard_decision import GuardDecision
from kilo_loop.sandbox.proxy import NetworkProxy, Refusal

RULE = "network"


def rejection(refusal: Refusal, proxy: NetworkProxy) -> GuardRejected:
    reason = (f"the jail's network (--sandbox-network {proxy.policy.mode}) reaches only "
              f"{proxy.policy.describe()}; {refusal.target} was refused")
    return GuardRejected(tool="network", subject=refusal.target, decision=GuardDecision("deny", RULE, reason))


class WatchedRun:
    def __init__(self, inner: AgentRun, proxy: NetworkProxy) -> None:
        self._inner = inner
        self._proxy = proxy

    @property
    def result(self) -> AgentResult:
        return self._inner.result

    async def kill(self, reason: str) -> None:
        await self._inner.kill(reason)

    async def answer(self, request_id: str, answers: list[str] | None) -> None:
        answer = getattr(self._inner, "answer", None)
        if answer is not None:
            await answer(request_id, answers)

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        async for event in self._inner.events():
            yield event
            for refusal in self._proxy.drain():
                yield rejection(refusal, self._proxy)
        for refusal in self._proxy.drain():
            yield rejection(refusal, self._proxy)


class WatchedBackend:
    """The run's backend, each session watched for refused connections; everything else is the inner's."""

    def __init__(self, inner: AgentBackend, proxy: NetworkProxy) -> None:
        self._inner = inner
        self._proxy = proxy
        self.name = inner.name

    def start(self, request: AgentRequest) -> AgentRun:
        return WatchedRun(self._inner.start(request), self._proxy)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
