"""What the loop knows about going in circles, as state: the current stage's same-failure streak,
the work trees and file contents it has seen, where the response ladder stands, and the note the
next prompt carries. The detectors (`loop/circles/`) decide; their events carry the decision and
the reducer stores it here, so a replay of events.jsonl knows the same."""

from __future__ import annotations

from pydantic import Field

from kilo_loop.run.wire import WireModel

TREES_KEPT = 64  # work trees remembered per stage
FILES_KEPT = 200  # files whose recent contents are remembered per stage
VERSIONS_KEPT = 6  # contents remembered per file
LIST_KEPT = 50  # iterations and files a streak names

# The response ladder: each rung is an event, in the report and on the dashboard.
STEP_FRESH = "fresh-session"
STEP_ASK = "ask-operator"
STEP_STOP = "stop"
LADDER = (STEP_FRESH, STEP_ASK, STEP_STOP)


class CircleMark(WireModel):
    """One iteration's part in going in circles (in its report, summed by the stage receipts)."""

    same_failure_streak: int = 0
    signature: str = ""
    oscillation: str = ""  # what returned: "tree of iteration 3", "a.py flipped"
    ended_early: str = ""  # why the session was ended early (a doom loop)
    saved_tokens: int = 0
    saved_cost: float = 0.0


class CircleState(WireModel):
    """The detectors' memory for the stage being worked on (reset when the stage changes)."""

    stage_id: str | None = None
    signature: str = ""  # the last verify failure's signature ("" none yet)
    signature_text: str = ""  # its normalised head, for a person to read
    streak: int = 0  # that signature this many times in a row, files changing each time
    streak_iterations: list[int] = Field(default_factory=list)
    streak_files: list[str] = Field(default_factory=list)
    streak_cost: float = 0.0
    trees: dict[str, int] = Field(default_factory=dict)  # work-tree fingerprint -> the iteration it was seen after
    files: dict[str, list[str]] = Field(default_factory=dict)  # path -> its recent content ids, oldest first
    ladder: int = 0  # rungs taken for the current circle (0: none)
    diagnosis: str = ""  # the last circle's diagnosis (report.md's "Going in circles")
    steps: list[str] = Field(default_factory=list)  # the ladder's rungs taken this run, newest last
    note: str = ""  # what the next prompt says about it
    note_iteration: int = 0  # the iteration the note was written in (the next one's prompt carries it)
    oscillations: int = 0  # returns seen this run
    sessions_ended_early: int = 0
    saved_tokens: int = 0
    saved_cost: float = 0.0


# ------------------------------------------------------------------ folds (the reducer's, pure)
def _noted(circles: CircleState, note: str, iteration: int) -> dict[str, object]:
    """The note for the next prompt; two notes of one iteration are both kept."""
    if not note:
        return {}
    if circles.note and circles.note_iteration == iteration and note not in circles.note:
        note = f"{circles.note}\n\n{note}"
    return {"note": note, "note_iteration": iteration}


def _bounded(items: dict[str, object], limit: int) -> None:
    while len(items) > limit:
        del items[next(iter(items))]


def observed(circles: CircleState, iteration: int, *, stage_id: str, signature: str, signature_text: str,
             streak: int, files_changed: list[str], cost: float, tree: str, start_tree: str,
             contents: dict[str, list[str]], oscillation: str, progress: bool) -> CircleState:
    """The state after an iteration's observation (the detectors decided `streak` and `oscillation`)."""
    if stage_id != circles.stage_id:  # a new stage: its own memory; the run's counts and note stay
        circles = CircleState(stage_id=stage_id, oscillations=circles.oscillations,
                              sessions_ended_early=circles.sessions_ended_early, saved_tokens=circles.saved_tokens,
                              saved_cost=circles.saved_cost, note=circles.note, note_iteration=circles.note_iteration,
                              diagnosis=circles.diagnosis, steps=circles.steps)
    changes: dict[str, object] = {"signature": signature, "signature_text": signature_text, "streak": streak}
    if streak <= 1:
        changes.update(streak_iterations=[iteration] if streak else [], streak_files=files_changed[:LIST_KEPT] if
                       streak else [], streak_cost=round(cost, 6) if streak else 0.0)
    else:
        files = dict.fromkeys([*circles.streak_files, *files_changed])
        changes.update(streak_iterations=[*circles.streak_iterations, iteration][-LIST_KEPT:],
                       streak_files=list(files)[:LIST_KEPT], streak_cost=round(circles.streak_cost + cost, 6))
    if progress:
        changes["ladder"] = 0
    trees: dict[str, object] = dict(circles.trees)
    if start_tree:
        trees.setdefault(start_tree, iteration - 1)
    if tree:
        trees.setdefault(tree, iteration)
    if len(trees) != len(circles.trees):
        _bounded(trees, TREES_KEPT)
        changes["trees"] = trees
    if contents:
        versions: dict[str, object] = dict(circles.files)
        for path, content in contents.items():
            versions.pop(path, None)  # most recently changed last: the oldest are dropped first
            versions[path] = [*circles.files.get(path, []), *content][-VERSIONS_KEPT:]
        _bounded(versions, FILES_KEPT)
        changes["files"] = versions
    if oscillation:
        changes["oscillations"] = circles.oscillations + 1
    return circles.model_copy(update=changes)


def found(circles: CircleState, iteration: int, *, kind: str, step: str, diagnosis: str, note: str) -> CircleState:
    rung = LADDER.index(step) + 1 if step in LADDER else circles.ladder
    steps = [*circles.steps, f"iteration {iteration}: {kind} -> {step}"][-LIST_KEPT:]
    return circles.model_copy(update={"ladder": rung, "diagnosis": diagnosis or circles.diagnosis, "steps": steps,
                                      **_noted(circles, note, iteration)})


def ended_early(circles: CircleState, iteration: int, *, saved_tokens: int, saved_cost: float,
                note: str) -> CircleState:
    return circles.model_copy(update={
        "sessions_ended_early": circles.sessions_ended_early + 1, "saved_tokens": circles.saved_tokens + saved_tokens,
        "saved_cost": round(circles.saved_cost + saved_cost, 6), **_noted(circles, note, iteration)})


def note_read(circles: CircleState, iteration: int) -> CircleState:
    """An iteration after the note's was reported: its prompt carried the note."""
    if circles.note and circles.note_iteration < iteration:
        return circles.model_copy(update={"note": "", "note_iteration": 0})
    return circles
