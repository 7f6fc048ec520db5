"""`.kilocode-loop/ledger/loops.md`: where a review loop keeps its state (seed 004).

While a loop runs, its progress (round, budget, counts, current issues) is under `## Loop State`;
so is a gate's pending fix pass (`- fix: pending`, the gate's rows, the ones chosen and the change
request) until its recheck starts, so a resumed run continues that fix pass. The section is deleted once the loop exits, so no later session sees stale retry data. A loop that
did not converge leaves an entry under `## Loop History`. The text functions here are pure; only
`read_ledger`/`write_ledger` touch the disk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from kilo_loop.review.budget import ReviewLoop
from kilo_loop.review.findings import SEVERITIES, Finding, FindingKind
from kilo_loop.review.gate import finding_line
from kilo_loop.run.files import write_bytes_atomic

STATE = "## Loop State"
HISTORY = "## Loop History"
TITLE = "# Review loops\n"
LEDGER_RELATIVE = Path(".kilocode-loop") / "ledger" / "loops.md"
_FIELD = re.compile(r"^- (?P<key>[a-z]+): (?P<value>.*)$", re.MULTILINE)


@dataclass(frozen=True)
class LoopRecord:
    """What `## Loop State` says about the loop that was running."""

    run_id: str
    stage_id: str
    budget: int
    retries: int
    counts: tuple[int, ...]


def render_state(run_id: str, stage_id: str, stage_title: str, loop: ReviewLoop,
                 issues: Sequence[Finding]) -> str:
    counts = ", ".join(str(c) for c in loop.counts) or "—"
    lines = [STATE, f"- run: {run_id}", f"- stage: {stage_id}", f"- title: {stage_title}",
             f"- round: {loop.round}", f"- budget: {loop.budget}", f"- retries: {loop.retries}",
             f"- counts: {counts}", "- issues:"]
    lines += [f"  - {finding_line(f)}" for f in issues] or ["  - (none)"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class FixRecord:
    """A gate's fix pass that was sent and not yet rechecked."""

    run_id: str
    stage_id: str
    rows: tuple[Finding, ...]  # every row the gate showed
    chosen: tuple[str, ...]  # the row ids marked Mitigate now
    change_request: str = ""

    @property
    def chosen_rows(self) -> list[Finding]:
        wanted = set(self.chosen)
        return [row for row in self.rows if row.row_id in wanted]


def render_fix(run_id: str, stage_id: str, stage_title: str, rows: Sequence[Finding], chosen: Sequence[str],
               change_request: str) -> str:
    data = [row.as_dict() for row in rows]
    return "\n".join([STATE, f"- run: {run_id}", f"- stage: {stage_id}", f"- title: {stage_title}",
                      "- fix: pending", f"- change: {json.dumps(change_request)}", f"- chosen: {json.dumps(list(chosen))}",
                      f"- rows: {json.dumps(data)}"]) + "\n"


def _finding(data: Any) -> Finding | None:
    if not isinstance(data, dict) or not isinstance(data.get("role"), str) or not isinstance(data.get("title"), str):
        return None
    line, severity, kind = data.get("line"), data.get("severity"), data.get("kind")
    return Finding(role=data["role"], title=data["title"], severity=severity if severity in SEVERITIES else "high",
                   file=data.get("file") if isinstance(data.get("file"), str) else None,
                   line=line if isinstance(line, int) else None, detail=str(data.get("detail") or ""),
                   pre_existing=bool(data.get("preExisting")), kind=_kind(kind))


def _kind(value: Any) -> FindingKind:
    return next((k for k in get_args(FindingKind) if k == value), "issue")


def read_fix(text: str) -> FixRecord | None:
    """The pending fix pass under `## Loop State`, or None (none, or it cannot be read)."""
    fields = _state_fields(text)
    if fields is None or fields.get("fix") != "pending":
        return None
    try:
        rows = [_finding(item) for item in json.loads(fields["rows"])]
        chosen, change = json.loads(fields["chosen"]), json.loads(fields.get("change", '""'))
        if any(row is None for row in rows) or not isinstance(chosen, list) or not isinstance(change, str):
            return None
        return FixRecord(fields["run"], fields["stage"], tuple(r for r in rows if r is not None),
                         tuple(str(c) for c in chosen), change)
    except (KeyError, ValueError, TypeError):
        return None


def history_entry(when: str, run_id: str, stage_id: str, stage_title: str, exit: str,
                  counts: Sequence[int], retries: int, budget: int) -> str:
    per_round = ", ".join(f"round {n}: {c}" for n, c in enumerate(counts, 1)) or "no round finished"
    return (f"### {when} — run {run_id} — {stage_id}: {stage_title}\n- exit: {exit}\n"
            f"- counts per round: {per_round}\n- retries: {retries} of {budget}\n")


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) for each `## ` section; the text before the first one has heading ''."""
    parts: list[tuple[str, str]] = []
    heading, body = "", list[str]()
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            parts.append((heading, "".join(body)))
            heading, body = line.rstrip("\n"), []
        else:
            body.append(line)
    parts.append((heading, "".join(body)))
    return parts


def _join(parts: list[tuple[str, str]]) -> str:
    out = "".join((f"{h}\n" if h else "") + b for h, b in parts)
    return out if out.strip() else ""


def with_state(text: str, state: str | None) -> str:
    """The ledger with `## Loop State` replaced by `state` (a rendered section), or removed (None)."""
    parts = [(h, b) for h, b in _sections(text or TITLE) if h != STATE]
    if state is not None:
        heading, _, body = state.partition("\n")
        parts.insert(1, (heading, body + "\n"))
    return _join(parts)


def with_history(text: str, entry: str) -> str:
    """The ledger with `entry` appended under `## Loop History` (created when missing)."""
    parts = _sections(text or TITLE)
    for index, (heading, body) in enumerate(parts):
        if heading == HISTORY:
            parts[index] = (heading, body.rstrip("\n") + "\n\n" + entry)
            return _join(parts)
    return _join(parts).rstrip("\n") + f"\n\n{HISTORY}\n\n{entry}"


def _state_fields(text: str) -> dict[str, str] | None:
    body = next((b for h, b in _sections(text) if h == STATE), None)
    if body is None:
        return None
    return {m.group("key"): m.group("value").strip() for m in _FIELD.finditer(body)}


def read_state(text: str) -> LoopRecord | None:
    """The running loop's record, or None when there is none (or it cannot be read)."""
    fields = _state_fields(text)
    if fields is None:
        return None
    try:
        counts = tuple(int(c) for c in fields.get("counts", "").split(",") if c.strip() not in ("", "—"))
        return LoopRecord(run_id=fields["run"], stage_id=fields["stage"], budget=int(fields["budget"]),
                          retries=int(fields["retries"]), counts=counts)
    except (KeyError, ValueError):
        return None


ResumeAction = Literal["continue", "interrupted"]


def resume_action(record: LoopRecord | FixRecord, run_id: str, pending_stage_ids: Sequence[str]) -> ResumeAction:
    """A resumed run continues its own loop when the stage is still open; anything else (another
    run's loop, a stage done since) is recorded as interrupted."""
    if record.run_id == run_id and record.stage_id in pending_stage_ids:
        return "continue"
    return "interrupted"


def loop_from_record(record: LoopRecord) -> ReviewLoop:
    return ReviewLoop(stage_id=record.stage_id, budget=record.budget, counts=record.counts, retries=record.retries)


def read_ledger(project: Path) -> str:
    path = project / LEDGER_RELATIVE
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def write_ledger(project: Path, text: str) -> None:
    write_bytes_atomic(project / LEDGER_RELATIVE, text.encode("utf-8"), durable=False)
