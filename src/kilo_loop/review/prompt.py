"""The reviewer prompts (the seed's single reviewer and the wave's code/test/security roles), and
the section that carries blocking findings into the implementer's next prompt."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kilo_loop.goal.model import Stage
from kilo_loop.review.findings import Finding
from kilo_loop.review.gate import finding_line
from kilo_loop.review_roles import SEED_ROLE

MAX_DIFF_CHARS = 60_000
MAX_VERIFY_CHARS = 6_000
REVIEW_DIR = ".kilocode-loop"

ROLE_FOCUS = {
    SEED_ROLE: "Judge whether the stage is really done: correctness, tests that prove it, regressions, "
               "and work the agent claimed but did not do.",
    "code": "Review the code change: correctness, edge cases, error handling, readability, regressions. "
            "Mark a defect this change did not introduce as pre-existing.",
    "test": "Verify the tests: does each acceptance criterion have a test that would fail without the change? "
            "List every criterion without such a test under acceptanceGaps. Tests edited only to pass, "
            "skipped or weakened are high findings. A coverage figure goes in a finding of kind \"coverage\".",
    "security": "Review for security: injection, secrets in code or logs, unsafe file or shell use, "
                "authentication and permission mistakes, unsafe defaults.",
}

SCHEMA = """{"verdict": "pass" | "block",
 "summary": "one or two sentences: what you checked and what you found (also when you found nothing)",
 "findings": [{"severity": "critical|high|medium|low", "file": "path", "line": 12,
               "title": "one line", "detail": "why and how to fix", "preExisting": false,
               "kind": "issue|coverage"}],
 ACCEPTANCE"questions": ["a decision only the operator can make"]}"""


def review_file(role: str) -> str:
    """Where a reviewer writes its verdict, relative to the project."""
    name = "review.json" if role == SEED_ROLE else f"review-{role}.json"
    return f"{REVIEW_DIR}/{name}"


@dataclass(frozen=True)
class ReviewPromptInput:
    role: str
    goal_title: str
    stage: Stage
    diff: str
    verify_command: str | None = None
    verify_output: str = ""
    verify_passed_before: bool = False
    round: int = 1
    earlier: Sequence[Finding] = ()


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f"\n…(truncated, {len(text) - limit} more characters)"


def _stage_section(data: ReviewPromptInput) -> str:
    stage = data.stage
    lines = [f"## Stage under review\n{stage.id} — {stage.title}"]
    if stage.details:
        lines.append(_clip(stage.details, 3000))
    lines.append(f"Acceptance criteria: {stage.acceptance}" if stage.acceptance else
                 "Acceptance criteria: none written; judge against the stage title and details.")
    return "\n".join(lines)


def _verify_section(data: ReviewPromptInput) -> str:
    if not data.verify_command:
        return "## Verify\nNo verify command is set for this stage: nothing but your review checks the work."
    lines = [f"## Verify\nThe loop ran `{data.verify_command}` and it exited 0."]
    if data.verify_passed_before:
        lines.append("Verify proves nothing here: it already passed before this stage's work began, "
                     "so check the change itself against the acceptance criteria.")
    if data.verify_output.strip():
        lines.append("Output (tail):\n```\n" + _clip(data.verify_output, MAX_VERIFY_CHARS) + "\n```")
    return "\n".join(lines)


def _diff_section(diff: str) -> str:
    if not diff.strip():
        return "## Diff since the stage began\n(empty: no tracked file changed — check whether the work exists)"
    return "## Diff since the stage began\n```diff\n" + _clip(diff, MAX_DIFF_CHARS) + "\n```"


def _earlier_section(data: ReviewPromptInput) -> str | None:
    if not data.earlier:
        return None
    lines = [f"## Your earlier findings (round {data.round - 1}); say which still hold"]
    lines += [f"- {finding_line(f)}" for f in data.earlier]
    return "\n".join(lines)


def build_review_prompt(data: ReviewPromptInput) -> str:
    role = data.role
    title = "Reviewer" if role == SEED_ROLE else f"{role.capitalize()} reviewer"
    acceptance = '"acceptanceGaps": ["criterion without a test"],\n ' if role == "test" else ""
    sections = [
        f"# {title} — goal: {data.goal_title}",
        (f"You are the {title.lower()} for a stage another agent just finished. You only read: do not edit, "
         f"create or delete any file except `{review_file(role)}`, and run no command that changes the tree."),
        ROLE_FOCUS.get(role, ROLE_FOCUS["code"]),
        _stage_section(data),
        _verify_section(data),
        _diff_section(data.diff),
        _earlier_section(data),
        (f"## Your verdict (required)\nWrite `{review_file(role)}` as JSON:\n"
         + SCHEMA.replace("ACCEPTANCE", acceptance) + "\n"
         "Use block when any critical or high finding stands; severity critical/high only for defects that "
         "must be fixed before the stage counts as done. Questions go to the operator."),
    ]
    return "\n\n".join(s for s in sections if s) + "\n"


def implementer_feedback(findings: Sequence[Finding]) -> str:
    """The blocking findings the implementer must fix in its next iteration of the same stage."""
    lines = ["The review blocked this stage; fix these findings (the stage is done only when the review passes):"]
    lines += [f"- {finding_line(f)}" for f in findings]
    return "\n".join(lines)
