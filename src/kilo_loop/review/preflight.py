"""The review loop at pre-flight: a row for the scenario box, and the loop-policy question a
large rework gets (its cost estimate, then Manual · Auto — 1 · 2 · 3 retries); small and medium
stages show their preset, which the Start question takes a new budget for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kilo_loop.goal.model import Goal, Stage
from kilo_loop.review.budget import LARGE_CHOICES, PRESETS, parse_large_answer
from kilo_loop.review.estimate import estimate_text
from kilo_loop.review.loop_policy import basis_for
from kilo_loop.settings import Settings

MAX_ASKS = 3


def _budget_text(stage: Stage, settings: Settings) -> str:
    if stage.auto_fix is not None:
        return f"{stage.auto_fix} (Auto-fix)"
    if settings.review_retries is not None:
        return f"{settings.review_retries} (--review-retries)"
    if stage.size == "large":
        answer = settings.review_large_retries
        return "asks (large)" if answer is None else f"{answer} (large)"
    return f"{PRESETS[stage.size or 'medium']} (preset — reply to change)"


def review_row(settings: Settings, goal: Goal) -> tuple[str, str] | None:
    if not settings.review_on:
        return None
    if isinstance(settings.review, dict):
        roles = ", ".join(str(r if isinstance(r, str) else r.get("role")) for r in settings.review.get("roles", []))
    else:
        roles = "code, test, security" if settings.review_wave else "one reviewer"
    budgets = "; ".join(f"{s.id} {_budget_text(s, settings)}" for s in goal.pending_stages()[:6])
    return "Review", f"{roles} · gate {settings.review_gate} · retries: {budgets or '—'}"


def needs_large_question(settings: Settings, goal: Goal) -> bool:
    if not settings.review_on or settings.review_retries is not None or settings.review_large_retries is not None:
        return False
    return any(s.size == "large" and s.auto_fix is None for s in goal.pending_stages())


def role_count(settings: Settings) -> int:
    if isinstance(settings.review, dict):
        return len(settings.review.get("roles", [])) or 3
    return 3 if settings.review_wave else 1


def large_estimate(settings: Settings, project: Path) -> str:
    """The estimate before the question: the roles, and the last run's average session costs."""
    return estimate_text(role_count(settings), basis_for(project, None))


def ask_large_budget(read_line: Callable[[str], str], say: Callable[[str], None], estimate: str = "") -> int:
    """The estimate, then the typed menu; an empty reply keeps manual (0). Unreadable replies are asked again."""
    if estimate:
        say(estimate)
    say("A large rework: how many automatic review fix retries before the gate? "
        + " · ".join(label for label, _ in LARGE_CHOICES))
    for _ in range(MAX_ASKS):
        try:
            reply = read_line("Loop policy: reply manual, auto 1, auto 2 or auto 3 (empty keeps manual): ")
        except (EOFError, KeyboardInterrupt):
            return 0
        answer = parse_large_answer(reply)
        if answer is not None:
            return answer
        say(f"{reply.strip()!r} is not one of the choices")
    return 0
