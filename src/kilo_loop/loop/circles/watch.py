"""What the orchestrator calls once per iteration: the detectors run on what the iteration left (its
verify, the files it changed, the work tree) and give back the observation event and, when the loop
is going in circles, the circle. Nothing here emits or decides the ladder's rung."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kilo_loop.gitstatus import Snapshot
from kilo_loop.loop.circles import oscillation, thrash
from kilo_loop.loop.circles.fingerprint import CLEAN, ContentIds, tree_print
from kilo_loop.loop.circles.ladder import Circle, what_repeated
from kilo_loop.loop.circles.signature import failure_signature
from kilo_loop.run.circles import CircleState, observed
from kilo_loop.run.events import CirclesObserved
from kilo_loop.run.state import VerifyResult


@dataclass(frozen=True)
class Iteration:
    """What one iteration left, as the detectors read it."""

    number: int
    stage_id: str
    verify: VerifyResult | None
    files_changed: list[str]
    before: Snapshot
    after: Snapshot
    head: str | None
    cost: float


@dataclass(frozen=True)
class Observation:
    event: CirclesObserved
    circle: Circle | None


class CircleWatch:
    def __init__(self, project: Path, max_same_failure: int) -> None:
        self._ids = ContentIds(project)
        self._max_same_failure = max_same_failure

    def observe(self, circles: CircleState, it: Iteration) -> Observation:
        known = circles if circles.stage_id == it.stage_id else CircleState(stage_id=it.stage_id)
        signature, text = "", ""
        if it.verify is not None and not it.verify.passed:
            sig = failure_signature(it.verify.output_tail, it.verify.exit_code, it.verify.timed_out)
            signature, text = sig.digest, sig.text
        passed = it.verify is not None and it.verify.passed
        streak = thrash.next_streak(known.signature, known.streak, signature or None, passed, bool(it.files_changed))
        if streak.signature != signature:  # verify did not run: the last failure stands
            text = known.signature_text
        after = tree_print(it.head, it.after, self._ids)
        start = tree_print(it.head, it.before, self._ids) if not known.trees else None
        contents = {path: [after.contents.get(path, CLEAN)] for path in it.files_changed}
        for path in contents:
            if path not in known.files:  # its first change this stage: what it held before, too
                contents[path].insert(0, start.contents.get(path, CLEAN) if start else
                                      self._before(it.before, path))
        trees = dict(known.trees) if start is None else {start.tree: it.number - 1}
        last = max(trees, key=trees.__getitem__) if trees else ""
        # a return needs the tree to have moved: files reported changed over an unchanged tree (a dry run's
        # simulated agent) never "come back"
        changed = bool(it.files_changed) and after.tree != last
        returned = oscillation.tree_return(trees, after.tree, changed)
        flips = oscillation.file_flips(known.files, {p: ids[-1] for p, ids in contents.items()})
        swing = oscillation.describe(returned, flips)
        event = CirclesObserved(
            message="", stage_id=it.stage_id, signature=streak.signature, signature_text=text, streak=streak.streak,
            files_changed=it.files_changed, cost=it.cost, tree=after.tree, start_tree=start.tree if start else "",
            contents=contents, oscillation=swing, progress=streak.progress, iteration=it.number)
        return Observation(event, self._circle(known, event))

    def _before(self, before: Snapshot, path: str) -> str:
        entry = before.get(path)
        return CLEAN if entry is None else self._ids.of(path, entry[1], entry[2])

    def _circle(self, known: CircleState, event: CirclesObserved) -> Circle | None:
        if thrash.is_thrash(event.streak, self._max_same_failure) and event.files_changed:
            after = observed(known, event.iteration or 0, stage_id=event.stage_id, signature=event.signature,
                             signature_text=event.signature_text, streak=event.streak,
                             files_changed=list(event.files_changed), cost=event.cost, tree="", start_tree="",
                             contents={}, oscillation="", progress=False)
            return Circle("thrash", what_repeated(after, "thrash", ""))
        if event.oscillation:
            return Circle("oscillation", event.oscillation)
        return None
