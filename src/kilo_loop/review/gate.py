"""The one review gate, the one fix pass it sends, and the recheck scoped to that fix (seed 004).

The gate lists every finding of every reviewer; the operator marks each row Mitigate now or
Defer and may add a free-text change request. Everything marked goes to the implementer as one
fix pass; then only the reviewers the fix calls for run again — those whose reports the chosen
rows came from and whose files the pass wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from kilo_loop.errors import KiloLoopError
from kilo_loop.review.budget import Exit
from kilo_loop.review.count import with_verdicts
from kilo_loop.review.findings import Finding, ReviewReport
from kilo_loop.review_roles import SEED_ROLE
from kilo_loop.run.findings import finding_line as finding_line

GateMode = Literal["always", "auto", "off"]
GATE_MODES: tuple[GateMode, ...] = ("always", "auto", "off")
_TEST_PATH = re.compile(r"(^|/)(tests?|spec|__tests__)(/|$)|(^|/)test_[^/]*$|_test\.[^/]+$|\.(test|spec)\.[^/]+$")


def gate_needed(mode: GateMode, exit: Exit | Literal["recheck"], clean: bool) -> bool:
    """However the review loop exits, the gate runs (seed 004): a clean pass too, where one keypress
    or one click continues. `off` is the explicit opt-out. A recheck that found nothing new goes on
    without stopping, except under `always`, which shows every gate."""
    if mode == "off":
        return False
    if exit == "recheck" and clean:
        return mode == "always"
    return True


def skip_is_quiet(mode: GateMode, clean: bool) -> bool:
    """With nobody to answer, a clean, quiet gate under `auto` is skipped without a warning: there
    was nothing to decide. Anything else that cannot be asked is worth a warning."""
    return clean and mode == "auto"


def gate_rows(reports: Iterable[ReviewReport]) -> list[Finding]:
    """Every finding of every reviewer, once per row id, in reviewer order."""
    return list({f.row_id: f for f in with_verdicts(reports)}.values())


@dataclass(frozen=True)
class GateAnswer:
    mitigate: tuple[str, ...] = ()  # row ids marked Mitigate now; every other row is deferred
    change_request: str = ""

    @property
    def asks_for_fix(self) -> bool:
        return bool(self.mitigate or self.change_request.strip())


def chosen_rows(rows: Sequence[Finding], answer: GateAnswer) -> list[Finding]:
    wanted = set(answer.mitigate)
    return [row for row in rows if row.row_id in wanted]


def deferred_rows(rows: Sequence[Finding], answer: GateAnswer) -> list[Finding]:
    wanted = set(answer.mitigate)
    return [row for row in rows if row.row_id not in wanted]


class GateReplyError(KiloLoopError, ValueError):
    """A typed gate reply that names no row or a row that does not exist."""


def parse_gate_reply(reply: str, rows: Sequence[Finding]) -> GateAnswer:
    """The terminal's typed menu: `1 3` or `1,3` (rows to mitigate), `all`, `none` or empty (defer
    all); text after `;` is the change request. `; <text>` alone asks only for that change."""
    picks, _, request = reply.partition(";")
    words = [w for w in re.split(r"[\s,]+", picks.strip().lower()) if w]
    if words in (["all"], ["a"]):
        return GateAnswer(tuple(r.row_id for r in rows), request.strip())
    if words in ([], ["none"], ["defer"], ["n"]):
        return GateAnswer((), request.strip())
    chosen: list[str] = []
    for word in words:
        if not word.isdigit() or not 1 <= int(word) <= len(rows):
            raise GateReplyError(f"{word!r} is not a row number from 1 to {len(rows)}")
        chosen.append(rows[int(word) - 1].row_id)
    return GateAnswer(tuple(dict.fromkeys(chosen)), request.strip())


def reply_from_marks(row_ids: Sequence[str], marks: dict[str, str], change_request: str) -> str:
    """The dashboard's `{row id: "mitigate"|"defer"}` as the typed reply the gate reads (`1 3 ; text`);
    an unknown id or mark is an error. Rows left unmarked are deferred."""
    known = set(row_ids)
    for row_id, mark in marks.items():
        if row_id not in known:
            raise GateReplyError(f"unknown finding {row_id!r}")
        if mark not in ("mitigate", "defer"):
            raise GateReplyError(f"mark {mark!r} for {row_id!r}: use mitigate or defer")
    picks = " ".join(str(n) for n, row_id in enumerate(row_ids, 1) if marks.get(row_id) == "mitigate")
    request = " ".join(change_request.split())
    return (picks or "none") + (f" ; {request}" if request else "")


def fix_pass_feedback(chosen: Sequence[Finding], change_request: str) -> str:
    """What the implementer reads for the one fix pass."""
    lines = ["The operator chose these review findings to fix now (one fix pass):"]
    lines += [f"- {finding_line(row)}" for row in chosen]
    if change_request.strip():
        lines += ["", f"Change requested by the operator: {change_request.strip()}"]
    return "\n".join(lines)




def looks_like_test(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def recheck_roles(chosen: Sequence[Finding], change_request: str, touched: Iterable[str],
                  active_roles: Sequence[str]) -> list[str]:
    """The reviewers the fix calls for: a role whose chosen row names a file the pass wrote (or names
    no file) — never by how large the issue looked. A free-text change is for the code reviewer
    (the single reviewer in seed mode), and for the test reviewer when the pass wrote tests.
    Nothing written, nothing to recheck."""
    written = {path.removeprefix("./") for path in touched}
    if not written:
        return []
    roles: dict[str, None] = {}
    for row in chosen:
        if row.role in active_roles and (row.file is None or row.file in written):
            roles[row.role] = None
    if change_request.strip():
        general = SEED_ROLE if SEED_ROLE in active_roles else "code"
        if general in active_roles:
            roles[general] = None
        if "test" in active_roles and any(looks_like_test(path) for path in written):
            roles["test"] = None
    return [role for role in active_roles if role in roles]


def new_findings(before: Iterable[ReviewReport], after: Iterable[ReviewReport]) -> list[Finding]:
    """Findings of the recheck that no report before it named (by issue, whatever the reviewer)."""
    seen = {f.key for f in with_verdicts(before)}
    return [f for f in with_verdicts(after) if f.key not in seen and f.kind != "verdict"]
