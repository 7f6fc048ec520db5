"""Test tampering caught without a model: a stage's diff that deletes, skips, focuses, empties or
asserts less in a test, or edits what the verify command reads. `detect` is the one entry point;
`workspace` reads a stage's diff from git (the only I/O here)."""

from kilo_loop.tamper.detect import detect
from kilo_loop.tamper.finding import RULES, RuleId, TamperFinding

__all__ = ["RULES", "RuleId", "TamperFinding", "detect"]
