"""The cost estimate printed before the large-rework loop-policy question (seed 004: "It prints the
cost estimate, then asks one question with four fixed choices").

Each choice is bounded by the loop's own rules: a budget of N retries runs at most N + 1 review
rounds of every role, a final pass after a retry by the roles the last round did not run (at most
all but one), and N implementer sessions. The prices are the average cost of one reviewer session
and one implementer session of this run, else of the last run; with neither, only the session
counts are given.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kilo_loop.review.budget import LARGE_CHOICES
from kilo_loop.run.state import RunState


@dataclass(frozen=True)
class CostBasis:
    review_session: float | None = None  # average $ of one reviewer session
    implementer_session: float | None = None  # average $ of one implementer iteration
    source: str = ""  # "this run", "the last run (<id>)"


def cost_basis(candidates: Iterable[tuple[str, RunState]]) -> CostBasis:
    """The first candidate (this run, then the last run) with a reviewer session that cost something."""
    for source, state in candidates:
        reviews = [role.cost for item in state.iterations if item.review for role in item.review.roles]
        if not reviews:
            continue
        sessions = [item.cost for item in state.iterations if item.session_id or item.cost]
        return CostBasis(sum(reviews) / len(reviews), sum(sessions) / len(sessions) if sessions else None, source)
    return CostBasis()


def sessions_for(budget: int, roles: int) -> tuple[int, int]:
    """(at most this many reviewer sessions, this many implementer retries) for a budget."""
    final_pass = max(0, roles - 1) if budget else 0
    return (budget + 1) * roles + final_pass, budget


def estimate_lines(roles: int, basis: CostBasis) -> list[str]:
    """One line per choice, in the order the question lists them."""
    lines = []
    for label, budget in LARGE_CHOICES:
        reviews, retries = sessions_for(budget, roles)
        count = f"up to {reviews} reviewer" + (f" + {retries} implementer" if retries else "") + " sessions"
        price = ""
        if basis.review_session is not None:
            total = reviews * basis.review_session + retries * (basis.implementer_session or 0.0)
            price = f" ≈ ${total:.4f}" + ("" if basis.implementer_session is not None or not retries
                                          else " (implementer cost unknown)")
        lines.append(f"{label}: {count}{price}")
    return lines


def estimate_text(roles: int, basis: CostBasis) -> str:
    """The block printed before the four choices."""
    if basis.review_session is not None:
        implementer = (f", implementer session ${basis.implementer_session:.4f}"
                       if basis.implementer_session is not None else "")
        head = (f"Cost estimate ({roles} reviewer role{'s' if roles != 1 else ''}; average reviewer session "
                f"${basis.review_session:.4f}{implementer}, from {basis.source}):")
    else:
        head = (f"Cost estimate ({roles} reviewer role{'s' if roles != 1 else ''}; no review session has cost "
                "anything yet in this run or the last, so sessions only):")
    return "\n".join([head, *(f"  {line}" for line in estimate_lines(roles, basis))])
