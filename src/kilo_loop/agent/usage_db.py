"""Usage as the agent CLI's own database has it, beside the stream's figures (issue 11, seed 001).

A backend that can read one has `usage_from_db(session_id, title, since_ms)`; the loop asks the
backend that ran the request (through a runtime router or a server transport's run fallback) and
shows the reading beside the stream's figures, a mismatch as a warning. Today: kilo's kilo.db
(`agent.kilo.usage`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from kilo_loop.agent.protocol import AgentBackend, AgentRequest


@dataclass(frozen=True)
class DbUsage:
    tokens: int
    cost: float
    messages: int
    db: Path

    def as_dict(self) -> dict[str, float | int]:
        return {"tokens": self.tokens, "cost": round(self.cost, 6), "messages": self.messages}


@dataclass(frozen=True)
class UsageUnavailable:
    reason: str


UsageReading = DbUsage | UsageUnavailable


@runtime_checkable
class UsageDbBackend(Protocol):
    def usage_from_db(self, session_id: str | None, title: str, since_ms: int) -> UsageReading | None: ...


def usage_from_db(backend: AgentBackend, request: AgentRequest, session_id: str | None,
                  since_ms: int) -> UsageReading | None:
    """The reading of the backend that ran `request`; None when it keeps no database the loop reads."""
    backend_for = getattr(backend, "backend_for", None)
    chosen = backend_for(request) if callable(backend_for) else backend
    for candidate in (chosen, getattr(chosen, "fallback", None)):
        if isinstance(candidate, UsageDbBackend):
            return candidate.usage_from_db(session_id, request.title, since_ms)
    return None


def mismatch(stream_tokens: int, stream_cost: float, usage: DbUsage) -> str | None:
    """A warning when the stream's figures and the database's disagree, else None."""
    if stream_tokens == usage.tokens and abs(stream_cost - usage.cost) < 1e-6:
        return None
    return (f"usage mismatch: the stream reported {stream_tokens} tokens / ${stream_cost:.6f}, "
            f"kilo's database {usage.tokens} tokens / ${usage.cost:.6f} ({usage.db})")
