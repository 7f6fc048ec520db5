"""The response ladder for going in circles, and what each rung says: (1) a fresh session whose prompt
says what repeated and asks the agent to step back, (2) a question to the operator, (3) the stop, with
a diagnosis (the signature, the iterations, the files touched, the cost spent on it)."""

from __future__ import annotations

from dataclasses import dataclass

from kilo_loop.run.circles import LADDER, STEP_ASK, STEP_FRESH, STEP_STOP, CircleState

STOP_ANSWERS = frozenset({"stop", "s", "quit", "abort", "no", "n"})


@dataclass(frozen=True)
class Circle:
    kind: str  # thrash | oscillation
    what: str  # one line: what repeated


def next_step(rung: int, can_ask: bool) -> str:
    """The rung after `rung` taken ones; with nobody to ask, the question is skipped for the stop."""
    step = LADDER[min(rung, len(LADDER) - 1)]
    return STEP_STOP if step == STEP_ASK and not can_ask else step


def what_repeated(circles: CircleState, kind: str, oscillation: str) -> str:
    if kind == "thrash":
        return (f"verify failed the same way {circles.streak} times in a row while files kept changing "
                f"(iterations {_numbers(circles.streak_iterations)})")
    return oscillation


def diagnosis(circles: CircleState, circle: Circle, spent: float) -> str:
    """For report.md and the stop's reason: what, where, and what it cost."""
    lines = [f"- Kind: {circle.kind}", f"- What: {circle.what}"]
    if circles.signature_text:
        lines.append(f"- Failure signature `{circles.signature}`:")
        lines += [f"    {line}" for line in circles.signature_text.splitlines()[:8]]
    if circles.streak_iterations:
        lines.append(f"- Iterations: {_numbers(circles.streak_iterations)}")
    if circles.streak_files:
        lines.append(f"- Files touched: {', '.join(circles.streak_files[:20])}"
                     + (f" and {len(circles.streak_files) - 20} more" if len(circles.streak_files) > 20 else ""))
    lines.append(f"- Cost spent on it: ${spent:.4f}")
    return "\n".join(lines)


def step_back_note(circle: Circle, circles: CircleState) -> str:
    failure = ""
    if circles.signature_text:
        failure = "\nThe failure that keeps coming back:\n```\n" + circles.signature_text[:1500] + "\n```"
    return (f"The loop saw you going in circles: {circle.what}.{failure}\n"
            "Step back. Do not repeat the last approach: re-read the failure and the code it names, find the "
            "cause rather than the symptom, and try a different approach. If the stage cannot be done as "
            "written, report it blocked and say why.")


def question(circle: Circle) -> str:
    return (f"The agent is going in circles ({circle.kind}): {circle.what}. A fresh session did not help. "
            "Type instructions for the agent to go on with, or 'stop' to end the run.")


def wants_stop(answer: str) -> bool:
    return answer.strip().lower() in STOP_ANSWERS


def _numbers(items: list[int]) -> str:
    return ", ".join(str(i) for i in items[-20:])


__all__ = ["STEP_ASK", "STEP_FRESH", "STEP_STOP", "Circle", "diagnosis", "next_step", "question", "step_back_note",
           "wants_stop", "what_repeated"]
