"""A finding: one thing a judge of the work (a reviewer, the protect check) says is wrong with it, as
the state's review rows and gate rows carry it on the wire, and as a prompt line shows it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["critical", "high", "medium", "low"]
FindingKind = Literal["issue", "acceptance-gap", "coverage", "malformed", "protected", "verdict"]


@dataclass(frozen=True)
class Finding:
    role: str
    title: str
    severity: Severity = "high"
    file: str | None = None
    line: int | None = None
    detail: str = ""
    pre_existing: bool = False
    kind: FindingKind = "issue"

    @property
    def location(self) -> str:
        if self.file and self.line:
            return f"{self.file}:{self.line}"
        return self.file or ""

    @property
    def key(self) -> str:
        """Two reviewers naming the same place (or, without a line, the same title in the same file)
        report one issue."""
        if self.file and self.line:
            return f"{self.file}:{self.line}"
        words = " ".join(re.findall(r"[a-z0-9]+", self.title.lower()))
        return f"{self.file or ''}|{words}"

    @property
    def row_id(self) -> str:
        """Stable id of this row in the gate (the same finding keeps its id across rounds)."""
        return f"{self.role}:{self.key}"

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.row_id, "role": self.role, "title": self.title, "severity": self.severity,
                "file": self.file, "line": self.line, "detail": self.detail, "preExisting": self.pre_existing,
                "kind": self.kind}


def finding_line(finding: Finding) -> str:
    where = f" at {finding.location}" if finding.location else ""
    pre = " (pre-existing)" if finding.pre_existing else ""
    kind = " [acceptance gap]" if finding.kind == "acceptance-gap" else ""
    detail = f" — {finding.detail}" if finding.detail else ""
    return f"[{finding.role}/{finding.severity}]{kind}{pre} {finding.title}{where}{detail}"
