"""Thrash: the same verify failure K times in a row while files keep changing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Streak:
    signature: str
    streak: int
    progress: bool  # verify passed, or failed in a new way


def next_streak(previous_signature: str, previous_streak: int, signature: str | None, passed: bool,
                files_changed: bool) -> Streak:
    """The streak after an iteration. `signature` is None when verify did not run (the streak stands);
    an iteration that changed no file is the stale counter's business, and does not add to it."""
    if passed:
        return Streak("", 0, True)
    if signature is None:
        return Streak(previous_signature, previous_streak, False)
    if signature != previous_signature:
        return Streak(signature, 1, bool(previous_signature))
    return Streak(signature, previous_streak + (1 if files_changed else 0), False)


def is_thrash(streak: int, max_same_failure: int) -> bool:
    return max_same_failure > 0 and streak >= max_same_failure
