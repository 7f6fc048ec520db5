"""What the next session is told about the guard's refusals in the last one."""

from __future__ import annotations

from collections.abc import Sequence

from kilo_loop.agent.protocol import GuardRejected


def guard_note(rule: str, reason: str) -> str:
    """What the next session is told after the guard aborted the previous one."""
    return (f"Your previous session was aborted by the loop's command guard ({rule}): {reason}. "
            "Reach the same result without that command; never commit, push, publish or delete outside "
            "temp directories.")


def rejections_note(rejected: Sequence[GuardRejected]) -> str:
    """What the next session is told after the loop refused calls before they ran (serve transport)."""
    lines = "".join(f"\n- `{r.subject}` ({r.rule}): {r.reason}" for r in rejected[-5:])
    return (f"The loop's command guard refused {len(rejected)} call(s) last iteration before they ran:{lines}\n"
            "Reach the same result without them; never commit, push, publish or delete outside temp directories.")
