"""Fold a session's AgentEvents into its AgentResult: session id, tokens, cost, context size,
the first error and a bounded tail of the agent's text (read back for the progress report)."""

from __future__ import annotations

from collections import deque

from kilo_loop.agent.protocol import (
    AgentError,
    AgentEvent,
    AgentResult,
    GarbageLine,
    SessionStarted,
    StepFinished,
    Text,
)

TEXT_TAIL_CHARS = 20_000


class ResultTally:
    def __init__(self, result: AgentResult, text_tail_chars: int = TEXT_TAIL_CHARS) -> None:
        self.result = result
        self.saw_activity = False
        self._text: deque[str] = deque()
        self._chars = 0
        self._limit = text_tail_chars

    def record(self, event: AgentEvent) -> None:
        result = self.result
        if isinstance(event, GarbageLine):
            return
        self.saw_activity = True
        if isinstance(event, SessionStarted):
            result.session_id = event.session_id
        elif isinstance(event, StepFinished):
            result.tokens = result.tokens + event.tokens
            result.cost += event.cost
            result.context_tokens = event.tokens.total
        elif isinstance(event, AgentError):
            result.error = result.error or f"{event.name}: {event.message}"
        elif isinstance(event, Text):
            self._keep(event.text)

    def _keep(self, text: str) -> None:
        self._text.append(text)
        self._chars += len(text)
        while self._chars > self._limit and len(self._text) > 1:
            self._chars -= len(self._text.popleft())

    @property
    def text(self) -> str:
        return "\n".join(self._text)
