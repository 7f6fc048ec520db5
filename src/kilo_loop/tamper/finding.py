"""A tamper finding: one way a stage's diff weakens the tests, with where and which rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

RuleId = Literal["deleted-test-file", "removed-test", "skip-marker", "focus-marker", "fewer-assertions", "emptied-test",
                 "verify-input"]

RULES: dict[RuleId, str] = {
    "deleted-test-file": "a test file was deleted",
    "removed-test": "tests were taken out of a test file (and not moved to another one of the diff)",
    "skip-marker": "a test was marked to be skipped, ignored, disabled or expected to fail",
    "focus-marker": "a test was focused (.only, fit): the file's other tests stop running",
    "fewer-assertions": "a test file asserts less than before",
    "emptied-test": "a test's body was emptied",
    "verify-input": "a file the verify command reads was changed (test options, the verify script, CI)",
}


@dataclass(frozen=True)
class TamperFinding:
    file: str
    line: int | None
    rule: RuleId
    reason: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "rule": self.rule, "reason": self.reason}

    def text(self) -> str:
        return f"{self.location} [{self.rule}] {self.reason}"
