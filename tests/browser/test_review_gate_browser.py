"""The review gate panel in headless Chromium: a real direct run (fake agent CLI, review wave)
stops at the gate; the operator marks a row Mitigate now, adds a change request, submits, and
the fix pass starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_dashboard_browser import page  # noqa: F401 — shared fixture (browser: conftest)
from tests.integration.loop_harness import FakeKilo, init_repo
from tests.integration.test_review_loop import implement, review, wave
from tests.web.support import dashboard_link

pytestmark = pytest.mark.browser
LEAK = {"severity": "medium", "file": "feature.txt", "line": 1, "title": "token printed", "detail": "mask it"}
NIT = {"severity": "low", "file": "other.txt", "line": 2, "title": "naming"}


Started = tuple[str, Path, FakeKilo, subprocess.Popen[bytes]]


def _start(tmp_path: Path, plan: str, scenario: list[Any], *args: str,
           prepare: Callable[[Path], None] = lambda _project: None) -> Started:
    """A direct run with the dashboard, the fake agent CLI playing `scenario`; its tokened link."""
    project = init_repo(tmp_path / "repo")
    (project / "plan.md").write_text(plan)
    prepare(project)
    fake = FakeKilo(tmp_path / "fake")
    env = {**fake.env(scenario), "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "run.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--goal", "plan.md",
             "-p", "0", "-n", "3", "--keep-open", *args],
            cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT)
    link = None
    deadline = time.monotonic() + 60
    while link is None and time.monotonic() < deadline and process.poll() is None:
        link = dashboard_link(log.read_text(errors="replace"))
        time.sleep(0.1)
    if link is None:
        _stop(process)
    assert link is not None, log.read_text(errors="replace")
    return f"{link[0]}/?token={link[1]}", project, fake, process


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@pytest.fixture
def gated_run(tmp_path: Path) -> Iterator[Started]:
    scenario = [implement(), *wave(security=review("pass", LEAK), code=review("pass", NIT)),
                [{"sleep": 2}, *implement("masked\n")], *wave(2)]
    started = _start(tmp_path, "# Gate\n\n- [ ] Add the feature :: verify: test -f feature.txt\n", scenario,
                     "--review-wave")
    yield started
    _stop(started[3])


def test_mark_rows_submit_and_the_fix_pass_starts(gated_run: Started, page: Page) -> None:  # noqa: F811
    url, project, fake, _ = gated_run
    page.goto(url)
    modal = page.locator("#review-gate-modal")
    expect(modal).to_be_visible(timeout=60_000)
    rows = page.locator("#review-gate-rows fieldset")
    expect(rows).to_have_count(2)
    expect(page.locator("#review-gate-rows")).to_contain_text("token printed — feature.txt:1")
    expect(page.locator("#question-modal")).not_to_be_visible()
    security = page.locator("fieldset", has_text="token printed")
    security.get_by_label("Mitigate now").check()
    page.fill("#review-gate-change", "also log less")
    if os.environ.get("KILO_LOOP_ARTIFACTS"):
        page.screenshot(path=os.environ["KILO_LOOP_ARTIFACTS"] + "/review-gate.png")
    page.click("#review-gate-submit")
    expect(modal).not_to_be_visible()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(fake.log.read_text().splitlines()) < 5:
        time.sleep(0.2)
    calls = [json.loads(line) for line in fake.log.read_text().splitlines()]
    assert len(calls) >= 5 and calls[4]["review"] is None  # the fifth session is the implementer's fix pass
    fix_prompt = next(project.glob(".kilocode-loop/runs/*/iterations/02-prompt.md")).read_text()
    assert "token printed" in fix_prompt and "also log less" in fix_prompt and "naming" not in fix_prompt
    # Each reviewer's round, with its tokens and cost, in the run view.
    card = page.locator("#review-card")
    expect(card).to_be_visible(timeout=30_000)
    expect(card.locator("tr[data-iteration='1']")).to_have_count(3)
    expect(card).to_contain_text("security")
    expect(card).to_contain_text("$0.0050")


def test_a_clean_pass_shows_every_reviewers_summary_and_one_click_continues(tmp_path: Path,
                                                                              page: Page) -> None:  # noqa: F811
    def with_a_test(project: Path) -> None:
        (project / "tests").mkdir()
        (project / "tests" / "test_old.py").write_text("def test_old():\n    assert True\n")
        subprocess.run(["git", "add", "."], cwd=project, check=True)
        subprocess.run(["git", "commit", "-qm", "a test"], cwd=project, check=True)

    # The implementer also deletes a test: --tamper warn lets the stage pass, and the gate says so.
    cheat = [*implement()[:2], {"delete": "tests/test_old.py"}, *implement()[2:]]
    url, project, _fake, process = _start(
        tmp_path, "# Clean\n\n- [ ] Add the feature :: verify: test -f feature.txt\n",
        [cheat, *wave(code=review("pass", NIT))], "--review-wave", "--tamper", "warn", prepare=with_a_test)
    try:
        page.goto(url)
        modal = page.locator("#review-gate-modal")
        expect(modal).to_be_visible(timeout=60_000)
        expect(page.locator("#review-gate-summary")).to_contain_text("Loop exit: clean")
        reviewers = page.locator("#review-gate-reviewers li")
        expect(reviewers).to_have_count(3)
        expect(page.locator("li[data-role='test']")).to_contain_text("test reviewer: pass — no findings")
        expect(page.locator("li[data-role='security']")).to_contain_text("no findings · 500 tokens $0.0050")
        expect(page.locator("li[data-role='code']")).to_contain_text("1 finding(s) (1 low), 0 blocking")
        expect(page.locator("#review-gate-tamper")).to_contain_text("tests/test_old.py [deleted-test-file]")
        if os.environ.get("KILO_LOOP_ARTIFACTS"):
            page.screenshot(path=os.environ["KILO_LOOP_ARTIFACTS"] + "/review-gate-clean.png")
        page.locator("fieldset", has_text="naming").get_by_label("Defer").check()
        page.click("#review-gate-submit")
        expect(modal).not_to_be_visible()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "[x] Add the feature" not in (project / "plan.md").read_text():
            time.sleep(0.2)
        assert "[x] Add the feature" in (project / "plan.md").read_text()
    finally:
        _stop(process)


def test_the_large_question_and_its_estimate_are_answered_in_the_dashboard(tmp_path: Path,
                                                                            page: Page) -> None:  # noqa: F811
    plan = "# Big\n\n- [ ] Rework it :: size: large :: verify: test -f feature.txt\n"
    url, project, _fake, process = _start(tmp_path, plan, [implement(), review("pass")], "--review",
                                          prepare=_earlier_run)
    try:
        page.goto(url)
        question = page.locator("#question-modal")
        expect(question).to_be_visible(timeout=60_000)
        legend = question.locator("legend")
        expect(legend).to_contain_text("Loop policy for the large rework 'Rework it'")
        expect(legend).to_contain_text("average reviewer session $0.0200, implementer session $0.1000, "
                                       "from the last run (20260101-000000-0001)")
        expect(legend).to_contain_text("Auto — 2 retries: up to 3 reviewer + 2 implementer sessions ≈ $0.2600")
        if os.environ.get("KILO_LOOP_ARTIFACTS"):
            page.screenshot(path=os.environ["KILO_LOOP_ARTIFACTS"] + "/review-large-question.png")
        question.get_by_role("button", name="Auto — 2 retries").click()
        page.click("#question-submit")
        expect(question).not_to_be_visible()
        gate = page.locator("#review-gate-modal")  # the clean pass's gate: one click
        expect(gate).to_be_visible(timeout=60_000)
        expect(page.locator("#review-gate-submit")).to_have_text("Continue")
        page.click("#review-gate-submit")
        expect(gate).not_to_be_visible()
        reports = ".kilocode-loop/runs/*/iterations/01-report.json"  # the earlier run has no iterations/
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(project.glob(reports)):
            time.sleep(0.2)  # written once the iteration ends, just after the gate
        report = next(project.glob(reports), None)
        assert report is not None and json.loads(report.read_text())["review"]["budget"] == 2
    finally:
        _stop(process)


def _earlier_run(project: Path) -> None:
    """A saved run whose reviewer sessions cost $0.01 and $0.03 and whose implementer cost $0.10."""
    run = project / ".kilocode-loop" / "runs" / "20260101-000000-0001"
    run.mkdir(parents=True)
    state = {"runId": run.name, "project": str(project), "goalTitle": "Earlier", "status": "done",
             "iterations": [{"iteration": 1, "sessionId": "ses_1", "cost": 0.1,
                             "review": {"roles": [{"role": "reviewer", "cost": 0.01},
                                                  {"role": "reviewer", "cost": 0.03}]}}]}
    (run / "state.json").write_text(json.dumps(state))
