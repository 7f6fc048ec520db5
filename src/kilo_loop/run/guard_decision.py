"""The guard's one decision type, from the rule that decides to the broker that answers the agent CLI,
the session that kills or goes on, the `guard` event and the report: allow or deny, which rule,
why, and the rule pack that denied. Every guard (the shell guard, the reviewers' read-only guard,
a plugged-in one) answers with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, Protocol


class GuardDecision(NamedTuple):
    decision: Literal["allow", "deny"]
    rule: str | None
    reason: str
    pack: str | None = None
    """The rule pack that denied (None for an allow, custom patterns and what cannot be known)."""

    @property
    def denied(self) -> bool:
        return self.decision == "deny"

    @property
    def rule_name(self) -> str:
        """The rule as the log, the event and the report name it ("guard" when a deny names none)."""
        return str(self.rule or "guard")

    def as_dict(self) -> dict[str, str | None]:
        return {"decision": self.decision, "rule": self.rule, "reason": self.reason}


class GuardLike(Protocol):
    """A guard: the session runner asks it about every tool call the agent made, the serve broker
    before each one runs (and where a tool may write outside the project: its temp roots)."""

    def check_tool_use(self, tool: str, tool_input: Mapping[str, Any], cwd: str | None = None) -> GuardDecision: ...

    @property
    def temp_roots(self) -> tuple[str, ...]: ...


def checked(decision: object) -> GuardDecision:
    """A guard answers with a GuardDecision; anything else is a miswired guard, and that denies."""
    if isinstance(decision, GuardDecision):
        return decision
    return GuardDecision("deny", "guard-miswired", f"the guard answered {type(decision).__name__}, not a decision")
