"""The review loop of a run: after a stage passes verify, run the reviewer(s), count what blocks,
retry within the budget, show the one gate, send its one fix pass and recheck what it touched.

The loop calls `begin_iteration` before each implementer session and `review` once the stage
passed verify; `review` answers whether the stage may advance and what the implementer reads next.
The rules themselves are pure (review.count, review.budget, review.gate); this module does the I/O.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kilo_loop.durations import format_duration
from kilo_loop.git import GitError
from kilo_loop.goal.model import Goal, Stage
from kilo_loop.review import ledger
from kilo_loop.review.budget import ReviewLoop, Size, decide, resolve_budget, running_loop
from kilo_loop.review.count import blocking_findings, roles_behind
from kilo_loop.review.findings import Finding, ReviewReport
from kilo_loop.review.gate import (
    GateAnswer,
    GateMode,
    GateReplyError,
    chosen_rows,
    deferred_rows,
    finding_line,
    fix_pass_feedback,
    gate_needed,
    gate_rows,
    new_findings,
    parse_gate_reply,
    recheck_roles,
    skip_is_quiet,
)
from kilo_loop.review.gate_view import gate_label, gate_listing, reviewer_summaries
from kilo_loop.review.log import ReviewLog
from kilo_loop.review.loop_policy import ask_loop_policy, needs_question
from kilo_loop.review.prompt import ReviewPromptInput, build_review_prompt, implementer_feedback
from kilo_loop.review.tree import diff_since, tree_of_worktree
from kilo_loop.review.wave import RoleResult, WaveContext, run_wave
from kilo_loop.review_roles import RoleSpec
from kilo_loop.run.events import ReviewBaseline, ReviewHeld, now_iso
from kilo_loop.run.state import ReviewGateState, ReviewRoundSummary, ReviewStageState, RunState, VerifyResult
from kilo_loop.session.reviewer import ReviewVerdict

GATE_QUESTION = ("Review gate: which findings should be fixed now? Reply with their numbers (e.g. `1 3`), "
                 "`all`, or `none` to defer them all; add `; <change request>` to ask for a change.")
MAX_GATE_ASKS = 5


@dataclass(frozen=True)
class ReviewOptions:
    roles: tuple[RoleSpec, ...]
    gate: GateMode = "auto"
    retries: int | None = None  # --review-retries; None: by the stage's size
    large_budget: int | None = None  # the pre-flight answer for a large rework

    @property
    def role_names(self) -> list[str]:
        return [spec.role for spec in self.roles]


@dataclass
class _StageReview:
    """What the controller keeps of a stage between calls: this process's reviewers' reports (its
    prompts and gate rows are made from them) and a pending gate fix pass (which the ledger carries
    over a resume). The loop's budget, rounds and retries, and the stage's baseline, are the run's state."""

    carried: ReviewLoop | None = None  # a loop resumed from the ledger of a run recorded before the state had it
    reports: dict[str, ReviewReport] = field(default_factory=dict)
    next_roles: list[str] = field(default_factory=list)
    fix: GateAnswer | None = None
    fix_rows: list[Finding] = field(default_factory=list)
    fix_files: set[str] = field(default_factory=set)


@dataclass
class ReviewHost:
    """What the controller needs from the run around it."""

    goal: Goal
    project: Path
    run_id: str
    wave: WaveContext
    verify: Callable[[str], Awaitable[VerifyResult | None]]
    answer_channel_open: Callable[[], bool]
    halted: Callable[[], bool] = lambda: False  # Stop or a budget reached: no round may be judged
    answer_timeout: float | None = None  # --answer-timeout: how long the gate waits; None: until answered
    state: Callable[[], RunState | None] = lambda: None  # the run's state (the stages' review loops)


class ReviewController:
    def __init__(self, options: ReviewOptions, host: ReviewHost) -> None:
        self.options = options
        self.host = host
        self._stages: dict[str, _StageReview] = {}
        self._iteration = 0
        self._large_answer: int | None = None  # the loop policy asked in the run (review.loop_policy)

    @property
    def _log(self) -> ReviewLog:
        return self.host.wave.log

    # ------------------------------------------------------------ before
    async def begin_iteration(self, stage: Stage, iteration: int, verify_command: str | None) -> bool:
        """At a stage's first iteration: remember the tree (for the diff) and whether verify passes
        already (then it proves nothing about this stage's work). True when verify ran."""
        self._iteration = iteration
        if self._review_state(stage.id).base_tree is not None:
            return False
        if self._large_answer is None and needs_question(stage, self.options.retries, self.options.large_budget):
            host = self.host
            self._large_answer = await ask_loop_policy(host.wave.control, self._log, stage, len(self.options.roles),
                                                       host.project, host.answer_timeout, host.answer_channel_open) or 0
        tree = ""
        try:
            tree = await asyncio.to_thread(tree_of_worktree, self.host.project)
        except GitError as exc:
            self._log.warning(f"review: cannot record the tree before stage '{stage.title}': {exc}")
        passed = False
        if verify_command:
            verdict = await self.host.verify(verify_command)
            passed = bool(verdict and verdict.passed)
            if passed:
                self._log.warning(f"verify `{verify_command}` already passes before stage '{stage.title}' began: "
                               "the reviewer is told it proves nothing here")
        self._log.emit(ReviewBaseline(stage_id=stage.id, tree=tree, verify_passed=passed))
        return bool(verify_command)

    def _review_state(self, stage_id: str) -> ReviewStageState:
        run_state = self.host.state()
        review = None if run_state is None else run_state.review_stages.get(stage_id)
        return review or ReviewStageState()

    def fix_touched(self, stage_id: str, files: Sequence[str]) -> None:
        """Files an iteration wrote while a gate fix pass was pending for the stage."""
        state = self._stages.get(stage_id)
        if state is not None and state.fix is not None:
            state.fix_files.update(files)

    # ------------------------------------------------------------ review
    async def review(self, stage: Stage, iteration: int, verify: VerifyResult | None) -> ReviewVerdict:
        self._iteration = iteration
        state = self._stages.setdefault(stage.id, _StageReview())
        if state.fix is not None:
            return await self._recheck(stage, state, verify)
        loop = self._loop(stage, state)
        if not loop.counts:  # a loop begins: every reviewer looks
            state.next_roles = self.options.role_names
        results = await self._run_roles(stage, state, state.next_roles or self.options.role_names, verify,
                                        loop.round + 1)
        if self.host.halted():  # sessions killed mid-review prove nothing; the ledger keeps the last round
            summary = ReviewRoundSummary(round=loop.round + 1, step="interrupted", budget=loop.budget,
                                         roles=[r.usage for r in results])
            return ReviewVerdict(False, summary, stopped=True)
        blocking = blocking_findings(state.reports.values())
        loop, step = decide(loop, len(blocking))
        state.carried = None
        summary = self._summary(state, loop, results, step)
        self._write_state(stage, loop, blocking)
        self._log.event("review-round", f"review round {loop.round}: {len(blocking)} blocking → {step}",
                       "warn" if step != "clean" else "info", stage_id=stage.id, count=len(blocking), step=step,
                       budget=loop.budget)
        questions = self._questions(state)
        if step == "retry":
            state.next_roles = [r for r in roles_behind(blocking) if r in self.options.role_names] \
                or self.options.role_names
            return ReviewVerdict(False, summary, implementer_feedback(blocking), questions)
        return await self._after_loop(stage, state, loop, summary, verify, questions)

    def _loop(self, stage: Stage, state: _StageReview) -> ReviewLoop:
        """The stage's loop as the run's state has it: the budget is the stage's for the whole run."""
        run_state = self.host.state()
        review = None if run_state is None else run_state.review_stages.get(stage.id)
        if (review is None or not review.rounds) and state.carried is not None:
            return state.carried
        large = self.options.large_budget if self.options.large_budget is not None else self._large_answer
        budget = resolve_budget(_size(stage), stage.auto_fix, self.options.retries, large)
        return running_loop(stage.id, review, budget)

    async def _after_loop(self, stage: Stage, state: _StageReview, loop: ReviewLoop, summary: ReviewRoundSummary,
                          verify: VerifyResult | None, questions: list[str]) -> ReviewVerdict:
        assert loop.exit is not None
        others = [r for r in self.options.role_names if r not in state.next_roles]
        if loop.retries and others:
            # The last round's reviewers saw the code as it now stands; the others look once more.
            self._log.event("review-final", f"a retry ran: final pass by {', '.join(others)}", "info")
            finals = await self._run_roles(stage, state, others, verify, loop.round, final=True)
            summary.roles += [r.usage for r in finals]
            summary.findings = [f.as_dict() for f in gate_rows(state.reports.values())]
        self._end_loop(stage, loop)
        state.next_roles = []
        blocking = blocking_findings(state.reports.values())
        if loop.exit != "clean" and blocking:
            self._log.warning(f"review loop of '{stage.title}' exited {loop.exit} "
                           f"(counts {', '.join(map(str, loop.counts))})")
        clean = loop.exit == "clean" and not blocking
        return await self._gate(stage, state, summary, loop.exit, loop.counts, questions, clean)

    async def _recheck(self, stage: Stage, state: _StageReview, verify: VerifyResult | None) -> ReviewVerdict:
        answer, rows = state.fix, state.fix_rows
        assert answer is not None
        roles = recheck_roles(rows, answer.change_request, sorted(state.fix_files), self.options.role_names)
        state.fix, state.fix_rows, state.fix_files = None, [], set()
        self._clear_state()
        before = list(state.reports.values())
        summary = ReviewRoundSummary(step="recheck", verdict="pass", budget=0)
        if not roles:
            self._log.event("review-recheck", "the fix pass touched nothing a reviewer reported: no recheck", "info")
            return ReviewVerdict(True, summary)
        self._log.event("review-recheck", f"recheck scoped to the fix: {', '.join(roles)}", "info", roles=roles)
        results = await self._run_roles(stage, state, roles, verify, 1)
        fresh = new_findings(before, [r.report for r in results])
        summary.roles = [r.usage for r in results]
        summary.findings = [f.as_dict() for f in gate_rows(state.reports.values())]
        summary.count = len(fresh)
        if not fresh:
            self._log.event("review-recheck", "the recheck found nothing new: continuing", "info")
            if not gate_needed(self.options.gate, "recheck", True):
                return ReviewVerdict(True, summary, questions=self._questions(state))
        else:
            summary.verdict = "block"
        return await self._gate(stage, state, summary, "recheck", (len(fresh),), self._questions(state), not fresh)

    # -------------------------------------------------------------- gate
    async def _gate(self, stage: Stage, state: _StageReview, summary: ReviewRoundSummary, exit: str,
                    counts: Sequence[int], questions: list[str], clean: bool) -> ReviewVerdict:
        """The one gate, however the loop exited (`exit` is "recheck" after a fix pass's recheck)."""
        reports = list(state.reports.values())
        blocking = blocking_findings(reports)
        wanted = gate_needed(self.options.gate, "recheck" if exit == "recheck" else "exhausted", clean)
        if wanted and not self.host.answer_channel_open():
            if not skip_is_quiet(self.options.gate, clean):
                self._log.warning("the review gate has something to decide but no answer channel is open "
                                  "(no terminal, no dashboard); it is skipped")
            wanted = False
        answer: GateAnswer | Literal["timeout"] | None = "timeout"
        rows = gate_rows(reports)
        if wanted:
            answer = await self._ask_gate(stage, rows, exit, counts, reviewer_summaries(reports, summary.roles),
                                          role_costs(summary))
        if answer == "timeout":
            summary.gate = ("timeout" if wanted else "skipped") if self.options.gate != "off" else ""
            if clean:
                summary.verdict = "pass"
                return ReviewVerdict(True, summary, questions=questions)
            summary.verdict = "block"
            self._hold(stage, exit, blocking or gate_rows(reports))
            return ReviewVerdict(False, summary, implementer_feedback(blocking), questions)
        if answer is None:
            summary.gate = "asked"
            return ReviewVerdict(False, summary, stopped=True)
        deferred = deferred_rows(rows, answer)
        if deferred:
            self._log.event("review-deferred", "deferred: " + "; ".join(finding_line(f) for f in deferred), "info",
                           rows=[f.row_id for f in deferred])
        if not answer.asks_for_fix:
            summary.gate, summary.verdict = "resolved", "pass"
            return ReviewVerdict(True, summary, questions=questions)
        chosen = chosen_rows(rows, answer)
        state.fix, state.fix_rows, state.fix_files = answer, chosen, set()
        self._write_fix(stage, rows, answer)
        summary.gate, summary.verdict = "fix", "block"
        self._log.event("review-fix-pass", f"one fix pass: {len(chosen)} finding(s)"
                       + (" and a change request" if answer.change_request else ""), "heading")
        return ReviewVerdict(False, summary, fix_pass_feedback(chosen, answer.change_request), questions)

    def _hold(self, stage: Stage, exit: str, findings: Sequence[Finding]) -> None:
        """Nobody can answer the gate: another round would be paid for and decide nothing, so the stage
        is blocked for the rest of the run (resumes included) with its findings in the report."""
        listing = "; ".join(finding_line(f) for f in findings) or "no findings listed"
        self._log.emit(ReviewHeld(
            message=f"review: stage '{stage.title}' is held for the rest of the run (loop exit: {exit}; "
                    f"nobody can answer the gate: no terminal, no dashboard, or --review-gate off): {listing}",
            stage_id=stage.id, exit=exit, findings=[f.as_dict() for f in findings]))

    async def _ask_gate(self, stage: Stage, rows: list[Finding], exit: str, counts: Sequence[int],
                        reviewers: list[dict[str, Any]], costs: str) -> GateAnswer | Literal["timeout"] | None:
        """The operator's answer; None when the run was stopped; "timeout" after --answer-timeout."""
        control = self.host.wave.control
        gate = ReviewGateState(stage_id=stage.id, stage_title=stage.title, exit=exit, label=gate_label(exit, counts),
                               counts=list(counts), rows=[f.as_dict() for f in rows], reviewers=reviewers,
                               question=GATE_QUESTION)
        listing = gate_listing(stage.title, exit, counts, reviewers, rows)
        try:
            for _ in range(MAX_GATE_ASKS):
                control.begin_question_round()
                self._log.gate_opened(gate, listing, costs)
                try:
                    items = await control.next_answers(self.host.answer_timeout)
                except TimeoutError:
                    self._log.warning(f"review gate: no answer within {format_duration(self.host.answer_timeout or 0)}; "
                                      + ("continuing" if not rows else "every finding is deferred and the stage "
                                         "stays as the loop left it"))
                    return "timeout"
                if items is None:
                    return None
                reply = items[0].answer
                self._log.gate_answered(reply, items[0].source)
                try:
                    return parse_gate_reply(reply, rows)
                except GateReplyError as exc:
                    self._log.warning(f"review gate: {exc}; answer again")
            self._log.warning("review gate: no usable answer; every finding is deferred")
            return GateAnswer()
        finally:
            self._log.gate_closed()

    # ------------------------------------------------------------ rounds
    async def _run_roles(self, stage: Stage, state: _StageReview, roles: Sequence[str],
                         verify: VerifyResult | None, round_no: int, final: bool = False) -> list[RoleResult]:
        diff = ""
        baseline = self._review_state(stage.id)
        if baseline.base_tree:
            try:
                diff, _ = await asyncio.to_thread(diff_since, self.host.project, baseline.base_tree)
            except GitError as exc:
                self._log.warning(f"review: cannot compute the diff since the stage began: {exc}")
        specs = [spec for spec in self.options.roles if spec.role in roles]
        prompts = {}
        for spec in specs:
            earlier = state.reports[spec.role].findings if spec.role in state.reports else ()
            prompts[spec.role] = build_review_prompt(ReviewPromptInput(
                role=spec.role, goal_title=self.host.goal.title, stage=stage, diff=diff,
                verify_command=verify.command if verify else None, verify_output=verify.output_tail if verify else "",
                verify_passed_before=baseline.verify_before, round=round_no, earlier=earlier))
            suffix = "review-prompt.md" if len(self.options.roles) == 1 else f"review-{spec.role}-prompt.md"
            self._log.archive(self._iteration, suffix.replace("prompt", "final-prompt") if final else suffix,
                              prompts[spec.role])
        results = await run_wave(self.host.wave, specs, prompts, f"kilo-loop {self.host.run_id} #{self._iteration}",
                                 final_pass=final)
        for result in results:
            state.reports[result.report.role] = result.report
        return results

    def _summary(self, state: _StageReview, loop: ReviewLoop, results: list[RoleResult],
                 step: str) -> ReviewRoundSummary:
        return ReviewRoundSummary(
            round=loop.round, step=step, count=loop.counts[-1], budget=loop.budget,
            verdict="pass" if step == "clean" else "block", roles=[r.usage for r in results],
            findings=[f.as_dict() for f in gate_rows(state.reports.values())])

    def _questions(self, state: _StageReview) -> list[str]:
        return list(dict.fromkeys(q for report in state.reports.values() for q in report.questions))

    # ------------------------------------------------------------ ledger
    def _write_state(self, stage: Stage, loop: ReviewLoop, issues: Sequence[Finding]) -> None:
        try:
            text = ledger.read_ledger(self.host.project)
            section = None if loop.finished else ledger.render_state(self.host.run_id, stage.id, stage.title,
                                                                       loop, issues)
            ledger.write_ledger(self.host.project, ledger.with_state(text, section))
        except OSError as exc:
            self._log.warning(f"review: cannot write the loop ledger: {exc}")

    def _write_fix(self, stage: Stage, rows: Sequence[Finding], answer: GateAnswer) -> None:
        """The fix pass is pending until its recheck: a resumed run continues it."""
        section = ledger.render_fix(self.host.run_id, stage.id, stage.title, rows, answer.mitigate,
                                    answer.change_request)
        try:
            ledger.write_ledger(self.host.project, ledger.with_state(ledger.read_ledger(self.host.project), section))
        except OSError as exc:
            self._log.warning(f"review: cannot write the loop ledger: {exc}")

    def _clear_state(self) -> None:
        try:
            text = ledger.read_ledger(self.host.project)
            if ledger.STATE in text:
                ledger.write_ledger(self.host.project, ledger.with_state(text, None))
        except OSError as exc:
            self._log.warning(f"review: cannot write the loop ledger: {exc}")

    def _end_loop(self, stage: Stage, loop: ReviewLoop) -> None:
        try:
            text = ledger.with_state(ledger.read_ledger(self.host.project), None)
            if loop.exit != "clean":
                text = ledger.with_history(text, ledger.history_entry(
                    now_iso(), self.host.run_id, stage.id, stage.title, loop.exit or "?", loop.counts,
                    loop.retries, loop.budget))
            ledger.write_ledger(self.host.project, text)
        except OSError as exc:
            self._log.warning(f"review: cannot write the loop ledger: {exc}")

    def resume(self, pending_stage_ids: Sequence[str]) -> str | None:
        """A resumed run continues its own interrupted loop or pending fix pass (the fix pass's feedback
        is returned, for the next prompt); any other leftover is recorded as interrupted and removed."""
        text = ledger.read_ledger(self.host.project)
        fix = ledger.read_fix(text)
        if fix is not None:
            return self._resume_fix(fix, text, pending_stage_ids)
        record = ledger.read_state(text)
        if record is None:
            if ledger.STATE in text:
                ledger.write_ledger(self.host.project, ledger.with_state(text, None))
            return None
        if ledger.resume_action(record, self.host.run_id, pending_stage_ids) == "continue":
            state = self._stages.setdefault(record.stage_id, _StageReview())
            run_state = self.host.state()
            review = None if run_state is None else run_state.review_stages.get(record.stage_id)
            # The run's state has the loop; a run recorded before it did keeps the ledger's record.
            recorded = review is not None and review.rounds > 0
            loop = running_loop(record.stage_id, review, record.budget) if recorded else ledger.loop_from_record(record)
            state.carried = None if recorded else loop
            self._log.event("review-resume", f"resuming the review loop of {record.stage_id} at round "
                           f"{loop.round + 1} ({loop.retries} of {loop.budget} retries used)")
            return None
        self._record_interrupted(text, record.run_id, record.stage_id, record.counts, record.retries, record.budget)
        return None

    def _resume_fix(self, fix: ledger.FixRecord, text: str, pending_stage_ids: Sequence[str]) -> str | None:
        if ledger.resume_action(fix, self.host.run_id, pending_stage_ids) != "continue":
            self._record_interrupted(text, fix.run_id, fix.stage_id, (), 0, 0)
            return None
        state = self._stages.setdefault(fix.stage_id, _StageReview())
        chosen = fix.chosen_rows
        state.fix, state.fix_rows, state.fix_files = GateAnswer(fix.chosen, fix.change_request), chosen, set()
        by_role: dict[str, list[Finding]] = {}
        for row in fix.rows:
            if row.kind != "verdict":
                by_role.setdefault(row.role, []).append(row)
        state.reports = {role: ReviewReport(role, "block", tuple(rows)) for role, rows in by_role.items()}
        self._log.event("review-resume", f"resuming the review gate's fix pass of {fix.stage_id} "
                        f"({len(chosen)} finding(s){' and a change request' if fix.change_request else ''})")
        return fix_pass_feedback(chosen, fix.change_request)

    def _record_interrupted(self, text: str, run_id: str, stage_id: str, counts: Sequence[int], retries: int,
                            budget: int) -> None:
        entry = ledger.history_entry(now_iso(), run_id, stage_id, stage_id, "interrupted", counts, retries, budget)
        ledger.write_ledger(self.host.project, ledger.with_history(ledger.with_state(text, None), entry))
        self._log.warning(f"review loop of {stage_id} (run {run_id}) was interrupted; "
                          "recorded in the ledger's Loop History")


def role_costs(summary: ReviewRoundSummary) -> str:
    """`code 1.2k tokens $0.0100 · security …`: what each reviewer of a round cost."""
    return " · ".join(f"{r.role}{' (final)' if r.final_pass else ''} {r.tokens} tokens ${r.cost:.4f}"
                      for r in summary.roles)


def _size(stage: Stage) -> Size | None:
    return stage.size
