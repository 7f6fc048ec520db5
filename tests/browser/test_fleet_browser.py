"""The many-runs view in headless Chromium: parallel plans listed live, a question answered
from the inbox, a plan stopped from its detail view — at desktop and phone widths."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.fleet.support import dashboard_url, goal, init_repo, stage, start_parallel, write_goal

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 390, "height": 844}],
                         ids=["desktop", "phone"])
def test_parallel_plans_in_one_view(tmp_path: Path, browser: Browser, viewport: dict[str, int]) -> None:
    project = init_repo(tmp_path / "repo")
    asks = write_goal(project / "plans" / "asks.json", goal(
        "Ask before choosing", stage("s1", {"write": {"q.txt": "1\n"}, "ask": "Which database?", "sleep": 0.5}),
        stage("s2", {"append": {"q.txt": "2\n"}})))
    slow = write_goal(project / "plans" / "slow.json", goal(
        "Slow refactor", *[stage(f"s{n}", {"append": {"slow.txt": f"{n}\n"}, "sleep": 1.5}) for n in range(1, 7)]))
    proc = start_parallel(project, tmp_path, [asks, slow], "--parallel", "2", "-n", "8", "-p", "0")
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(dashboard_url(proc))
        expect(page).not_to_have_url(re.compile("token="))  # moved into a cookie, out of the address bar
        expect(page.locator("#runs tbody tr")).to_have_count(2, timeout=20_000)
        # one look with the run dashboard: its stylesheet, top bar, cards and status pills
        look = page.evaluate("""() => [getComputedStyle(document.body).backgroundColor,
          getComputedStyle(document.querySelector('.topbar__brand')).color,
          getComputedStyle(document.querySelector('.card:not(.banner)')).backgroundColor]""")
        assert look == ["rgb(244, 246, 249)", "rgb(31, 111, 235)", "rgb(255, 255, 255)"], look
        expect(page.locator("#runs .pill[data-status]").first).to_be_visible()
        expect(page.locator("#inbox .question")).to_contain_text("Which database?", timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        name = "desktop" if viewport["width"] > 600 else "phone"
        page.screenshot(path=str(ARTIFACTS / f"fleet-{name}.png"), full_page=True)
        page.fill("#inbox input[type=text]", "PostgreSQL")
        page.click("#inbox button[type=submit]")
        expect(page.locator("#inbox")).to_contain_text("No run is waiting", timeout=20_000)
        page.click("#runs tbody tr:has-text('Slow refactor')")
        expect(page.locator("#log li").first).to_be_visible(timeout=20_000)
        page.click(".controls button[data-action=stop]")
        proc.wait(90)
    finally:
        context.close()
        if proc.poll() is None:
            proc.kill()
    assert errors == [], errors
    assert (project / "q.txt").read_text() == "1\n2\n"
    assert not (project / "slow.txt").exists() or (project / "slow.txt").read_text().count("\n") < 6
