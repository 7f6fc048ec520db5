"""The loop's tamper check: when verify passed, the stage's diff is read for test tampering
(tamper/). What a finding becomes: the rows of the iteration's report, the event, what the next
prompt tells the agent. A detector that fails is a warning; the run goes on."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from kilo_loop.run.findings import Finding, finding_line
from kilo_loop.tamper import RULES, TamperFinding, detect
from kilo_loop.tamper.workspace import stage_base, stage_diff


@dataclass(frozen=True)
class TamperCheck:
    findings: list[TamperFinding]
    error: str | None = None  # the detector failed: why (the stage is judged without it)


async def check_stage(project: Path, checkpoints: Path, first_iteration: int, verify: str | None,
                      untracked: frozenset[str] | None = None) -> TamperCheck:
    """The findings in the stage's diff since its first iteration's checkpoint; never raises.
    `untracked`: the untracked files as the loop last read them (relative to the repository's top
    level), which saves listing them again; None lists them."""
    try:
        base = stage_base(checkpoints, first_iteration)
        diff = await asyncio.to_thread(stage_diff, project, base, untracked)
        return TamperCheck(detect(diff, verify))
    except Exception as exc:  # noqa: BLE001 - no detector may crash a run
        return TamperCheck([], f"{type(exc).__name__}: {exc}")


def tamper_rows(findings: list[TamperFinding]) -> list[Finding]:
    return [Finding(role="tamper", title=f"Test tampering: {RULES[f.rule]}", severity="critical", file=f.file,
                    line=f.line, kind="issue", detail=f"{f.rule}: {f.reason}")
            for f in findings]


def tamper_review_lines(blocked_before: list[str], warned: list[TamperFinding]) -> list[str]:
    """What the stage's review is told: the iterations the check blocked (so the reviewers see the test
    was restored) and what it found now under --tamper warn (the stage passes unless they block it)."""
    return [*blocked_before, *(f"found now (--tamper warn, not blocked): {f.text()}" for f in warned)]


def tamper_feedback(findings: list[TamperFinding]) -> str:
    """What the next prompt says: restore the tests, fix the code."""
    lines = ["Verify passed, but the stage is not done: your changes weaken the tests instead of fixing the "
             "code. Restore the test (put back the deleted file, remove the skip / only / xfail / ignore "
             "marker, bring back the assertions, undo the change to the test options), then fix the code so "
             "the test passes as it was:"]
    lines += [f"- {finding_line(row)}" for row in tamper_rows(findings)]
    return "\n".join(lines)
