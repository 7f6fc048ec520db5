"""Protected files the implementer changed: the findings the iteration's report shows and what the
next prompt tells the agent. The loop's own check, with or without a review (the globs are the
goal's: `goal/protect.py`)."""

from __future__ import annotations

from collections.abc import Iterable

from kilo_loop.run.findings import Finding, finding_line


def protected_findings(paths: Iterable[str]) -> list[Finding]:
    """One blocking finding per protected file the implementer changed."""
    return [Finding(role="protect", title=f"Protected file changed: {path}", severity="critical", file=path,
                    kind="protected",
                    detail="This path is protected for the stage; it is restored from the checkpoint only on "
                           "the operator's word. Reach the goal without editing it.")
            for path in paths]


def protected_feedback(paths: list[str]) -> tuple[list[Finding], str]:
    """The findings for protected files the implementer changed, and what its next prompt says."""
    findings = protected_findings(paths)
    lines = [("You changed protected files; the stage cannot pass while they differ from the checkpoint. "
             "Put them back as they were (the operator may restore them with `kilo-loop revert`) and reach "
             "the goal without editing them:")]
    lines += [f"- {finding_line(f)}" for f in findings]
    return findings, "\n".join(lines)
