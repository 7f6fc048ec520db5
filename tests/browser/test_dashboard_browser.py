"""The dashboard in headless Chromium against a real launcher process and real dry runs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import ARTIFACTS, long_plan
from tests.web.support import ServerProcess

pytestmark = pytest.mark.browser

ANSWER = "Refactor into smaller modules, but keep the public API"


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == [], errors


def run_dir(project: Path) -> Path:
    runs = [d for d in (project / ".kilocode-loop" / "runs").iterdir() if d.is_dir()]
    assert len(runs) == 1
    return runs[0]


def test_launcher_to_finished_run(server: tuple[ServerProcess, Path], page: Page) -> None:
    process, project = server
    page.goto(process.link)
    expect(page.locator("#plan-select option")).to_have_count(2)
    page.select_option("#plan-select", "plans/demo.md")
    expect(page.locator("#plan-summary")).to_contain_text("0/4 stages done")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "launcher.png"), full_page=True)

    page.fill("#start-iterations", "5")
    page.check("#start-dry-run")
    page.fill("#start-prompt-extra", "Prefer small, reviewable changes")
    page.click("#start-run")

    # live: the run header, a heading per tool action, iteration cards as they finish
    expect(page.locator("#run-goal")).to_have_text("Demo plan")
    expect(page.locator("#run-badges")).to_contain_text("custom instruction")
    expect(page.locator("#topbar")).to_have_class(re.compile(r"topbar--(running|starting)"))
    expect(page.locator(".log__tool", has_text="▸ Read README.md").first).to_be_visible()
    expect(page.locator('.iteration[data-iter="1"]')).to_contain_text("Simulated work on First stage")

    # the question in iteration 2: an option becomes an editable answer
    modal = page.locator("#question-modal")
    expect(modal).to_be_visible(timeout=20_000)
    expect(page.locator("#topbar")).to_have_class(re.compile("topbar--waiting-answer"))
    page.click("#questions .option >> nth=1")
    expect(page.locator("#questions textarea")).to_have_value("Refactor into smaller modules")
    page.fill("#questions textarea", ANSWER)
    page.click("#question-submit")
    expect(modal).to_be_hidden()

    # shared context from the next iteration, then pause and resume
    page.check("#ctl-shared")
    page.click("#ctl-pause")
    expect(page.locator("#ctl-pause")).to_have_text("Resume")
    expect(page.locator("#topbar")).to_have_class(re.compile("topbar--paused"), timeout=20_000)
    paused = httpx.get(process.url + "/api/state", headers=process.auth).json()
    assert paused["status"] == "paused" and paused["sharedContext"] is True
    page.click("#ctl-pause")
    expect(page.locator("#status-pill")).to_have_attribute("data-status", "done", timeout=30_000)
    expect(page.locator("#topbar")).to_have_class(re.compile("topbar--done"))
    expect(page.locator(".iteration")).to_have_count(5)
    expect(page.locator("#ctl-new-run")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "run-view.png"), full_page=True)

    run = run_dir(project)
    assert ANSWER in (run / "iterations" / "03-prompt.md").read_text()
    assert "Prefer small, reviewable changes" in (run / "iterations" / "01-prompt.md").read_text()
    assert '"sharedContext": true' in (run / "state.json").read_text()

    with page.expect_download() as download_info:
        page.click("#ctl-report")
    report = Path(download_info.value.path()).read_text()
    assert report.startswith(f"# Run {run.name} — Demo plan") and "**done**" in report

    page.click("#ctl-new-run")
    expect(page.locator("#view-launcher")).to_be_visible()
    expect(page.locator("#plan-summary")).to_contain_text(f"last run {run.name}: done, 5 it")


def test_revert_needs_confirmation_and_restores_files(server: tuple[ServerProcess, Path], page: Page) -> None:
    process, project = server
    started = httpx.post(
        process.url + "/api/start",
        headers=process.auth,
        json={"file": "plans/demo.md", "dryRun": True, "hitl": "off", "iterations": 2},
    )
    assert started.status_code == 201
    page.goto(process.link)
    expect(page.locator("#status-pill")).to_have_attribute("data-status", "iterations-used", timeout=30_000)
    app = project / "src" / "app.py"
    app.write_text("print('broken by the agent')\n")
    (project / "src" / "scratch.py").write_text("tmp = True\n")

    revert = page.locator('.iteration[data-iter="1"] [data-revert="1"]')
    revert.click()
    expect(page.locator("#confirm-modal")).to_be_visible()
    expect(page.locator("#confirm-text")).to_contain_text("cannot be undone")
    page.click("#confirm-no")
    assert app.read_text() == "print('broken by the agent')\n"

    revert.click()
    page.click("#confirm-yes")
    expect(page.locator("#notice")).to_contain_text("Reverted to before #1")
    assert app.read_text() == "print('v1')\n"
    assert not (project / "src" / "scratch.py").exists()

    page.locator('.iteration[data-iter="2"] button', has_text="Diff").click()
    expect(page.locator("#text-modal")).to_be_visible()
    expect(page.locator("#text-title")).to_contain_text("before iteration 2")
    page.click("#text-modal button")

    page.click("#nav-runs")
    expect(page.locator(".runs-table__row")).to_have_count(1)
    page.click(".runs-table__row")
    expect(page.locator("#view-run")).to_be_visible()
    expect(page.locator(".iteration")).to_have_count(2)


def test_top_bar_is_a_css_status_light(server: tuple[ServerProcess, Path], browser: Browser) -> None:
    process, project = server
    long_plan(project)  # still running while two pages load, whatever the machine's load
    httpx.post(process.url + "/api/start", headers=process.auth,
               json={"file": "plans/long.md", "dryRun": True, "iterations": 40, "hitl": "off"})
    for motion, expected in (("no-preference", "topbar-sweep"), ("reduce", "none")):
        context = browser.new_context(reduced_motion=motion)  # type: ignore[arg-type]
        page = context.new_page()
        page.goto(process.link)
        expect(page.locator("#topbar")).to_have_class(re.compile("topbar--running"))
        animation = page.evaluate(
            "getComputedStyle(document.getElementById('topbar'), '::after').animationName")
        assert animation == expected
        context.close()
    states = {"running": "running", "idle": "idle", None: "idle", "paused": "paused"}
    context = browser.new_context()
    page = context.new_page()
    page.goto(process.link)
    for status, expected_class in states.items():
        assert page.evaluate("([s]) => window.kiloLoop.topbarState(s, false)", [status]) == expected_class
    assert page.evaluate("() => window.kiloLoop.topbarState('running', true)") == "stale"
    assert page.evaluate("() => window.kiloLoop.topbarState('done', true)") == "done"
    context.close()


def test_phone_sized_screen(server: tuple[ServerProcess, Path], browser: Browser) -> None:
    process, _ = server
    started = httpx.post(
        process.url + "/api/start",
        headers=process.auth,
        json={"file": "plans/demo.md", "dryRun": True, "hitl": "off", "iterations": 2},
    )
    assert started.is_success, started.text
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    phone = context.new_page()
    phone.goto(process.link)
    # A deadline, not a pause: two dry-run iterations finish in seconds, but a loaded 2-core machine
    # once took longer than 30 s to get there.
    expect(phone.locator("#status-pill")).to_have_attribute("data-status", "iterations-used", timeout=120_000)
    expect(phone.locator(".iteration")).to_have_count(2)
    width = phone.evaluate("document.documentElement.scrollWidth")
    wide = phone.evaluate("""() => [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > 391 && el.offsetParent !== null)
      .slice(0, 5).map((el) => `${el.tagName}#${el.id}.${el.className} ${Math.round(el.getBoundingClientRect().right)}`)""")
    assert width <= 390, f"the page scrolls sideways on a phone ({width}px): {wide}"
    # every control a live run can show, shown at once: the row wraps instead of scrolling sideways
    controls = phone.evaluate("() => { const c = document.querySelector('.controls'); "
                              "c.querySelectorAll('[hidden]').forEach((e) => { e.hidden = false; }); "
                              "c.hidden = false; return [c.scrollWidth, c.clientWidth]; }")
    assert controls[0] <= controls[1], f"the control row scrolls sideways instead of wrapping: {controls}"
    phone.screenshot(path=str(ARTIFACTS / "run-view-phone.png"), full_page=False)
    phone.click("#nav-launcher")
    expect(phone.locator("#view-launcher")).to_be_visible()
    expect(phone.locator("#topbar")).to_have_class("topbar topbar--idle")
    phone.wait_for_timeout(400)  # let the top bar's colour transition settle before the picture
    phone.screenshot(path=str(ARTIFACTS / "launcher-phone.png"), full_page=False)
    context.close()


def test_a_note_from_the_box_under_now_shows_its_life(server: tuple[ServerProcess, Path], page: Page) -> None:
    process, project = server
    start = httpx.post(process.url + "/api/start", headers=process.auth,
                       json={"file": "plans/demo.md", "dryRun": True, "iterations": 4})
    assert start.status_code == 201, start.text
    page.goto(process.link)
    modal = page.locator("#question-modal")
    expect(modal).to_be_visible(timeout=20_000)
    page.click("#question-later")  # answer later: the note box under Now is reachable
    page.fill("#note-text", "  ")
    page.click("#note-send")
    expect(page.locator("#notice")).to_contain_text("write the note first")
    page.fill("#note-text", "Keep the helpers in utils/")
    page.click("#note-send")
    expect(page.locator("#note-list")).to_contain_text("n1 Keep the helpers in utils/ — queued")
    expect(page.locator("#note-text")).to_have_value("")
    page.fill("#note-text", "A second thought")
    page.click("#note-send")
    page.click("#note-list li:nth-child(2) button")  # withdraw it while it waits
    expect(page.locator("#note-list .note--withdrawn")).to_contain_text("A second thought")
    answer = httpx.post(process.url + "/api/answer", headers=process.auth,
                        json={"answers": [{"question": "x", "answer": "1"}]})
    assert answer.status_code == 200, answer.text
    expect(page.locator("#note-list .note--acknowledged")).to_contain_text("utils/", timeout=30_000)
    expect(page.locator("#note-text")).to_be_disabled(timeout=30_000)  # the run is over: no more notes
    assert "Keep the helpers in utils/" in (run_dir(project) / "report.md").read_text()
