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
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_dashboard_browser import page  # noqa: F401 — shared fixture (browser: conftest)
from tests.integration.loop_harness import FakeKilo, init_repo
from tests.integration.test_review_loop import implement, review, wave
from tests.web.support import dashboard_link

pytestmark = pytest.mark.browser
LEAK = {"severity": "medium", "file": "feature.txt", "line": 1, "title": "token printed", "detail": "mask it"}
NIT = {"severity": "low", "file": "other.txt", "line": 2, "title": "naming"}


@pytest.fixture
def gated_run(tmp_path: Path) -> Iterator[tuple[str, Path, FakeKilo, subprocess.Popen[bytes]]]:
    project = init_repo(tmp_path / "repo")
    (project / "plan.md").write_text("# Gate\n\n- [ ] Add the feature :: verify: test -f feature.txt\n")
    fake = FakeKilo(tmp_path / "fake")
    scenario = [implement(), *wave(security=review("pass", LEAK), code=review("pass", NIT)),
                [{"sleep": 2}, *implement("masked\n")], *wave(2)]
    env = {**fake.env(scenario), "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "run.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "kilo_loop", "-C", str(project), "--no-confirm", "--goal", "plan.md",
             "--review-wave", "-p", "0", "-n", "3", "--keep-open"],
            cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT)
    link = None
    deadline = time.monotonic() + 60
    while link is None and time.monotonic() < deadline and process.poll() is None:
        link = dashboard_link(log.read_text(errors="replace"))
        time.sleep(0.1)
    assert link is not None, log.read_text(errors="replace")
    yield f"{link[0]}/?token={link[1]}", project, fake, process
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def test_mark_rows_submit_and_the_fix_pass_starts(
    gated_run: tuple[str, Path, FakeKilo, subprocess.Popen[bytes]], page: Page  # noqa: F811
) -> None:
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
