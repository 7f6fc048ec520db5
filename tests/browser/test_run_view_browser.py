"""The run view in headless Chromium at desktop and phone sizes: where the run is (stages done
X / Y), how long (elapsed, ETA), how much (cumulative cost against --max-cost), and buttons that
stay readable on hover. Screenshots go to test-artifacts/ for a person to look at."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import ARTIFACTS, ServerFactory, long_plan
from tests.web.support import ServerProcess

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
BUDGET = 0.05

CONTRAST = """(el) => {
  const parse = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const style = getComputedStyle(el);
  const a = lum(parse(style.color)), b = lum(parse(style.backgroundColor));
  return { ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), color: style.color, background: style.backgroundColor };
}"""


@pytest.fixture
def budget_server(serve: ServerFactory) -> tuple[ServerProcess, Path]:
    """The launcher for a project whose config.json sets a cost budget."""
    return serve(0.25, f'{{"maxCost": {BUDGET}}}')


def open_page(browser: Browser, viewport: str, link: str) -> tuple[Page, list[str]]:
    phone = viewport == "phone"
    context = browser.new_context(
        viewport=VIEWPORTS[viewport], device_scale_factor=2 if phone else 1, is_mobile=phone, has_touch=phone
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(link)
    return page, errors


def seconds(text: str) -> int:
    """`1m 05s` / `42s` / `~3s` → seconds."""
    found = re.fullmatch(r"~?(?:(\d+)m )?(\d+)s", text.strip())
    assert found, f"not a duration: {text!r}"
    return int(found.group(1) or 0) * 60 + int(found.group(2))


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_headline_clock_and_budget_chart(budget_server: tuple[ServerProcess, Path], browser: Browser,
                                         viewport: str) -> None:
    process, project = budget_server
    plan = long_plan(project, stages=12)
    started = httpx.post(process.url + "/api/start", headers=process.auth,
                         json={"file": plan, "dryRun": True, "hitl": "off", "iterations": 12})
    assert started.status_code == 201
    page, errors = open_page(browser, viewport, process.link)
    assert "token" not in page.url  # the page moved it into a cookie

    # the headline counts stages, and the bar follows it (not the agent's own percent)
    expect(page.locator("#stages-done")).to_have_text(re.compile(r"^[1-9]\d* / 12$"), timeout=30_000)
    first = int(page.locator("#stages-done").inner_text().split(" / ")[0])
    expect(page.locator("#stages-done")).not_to_have_text(f"{first} / 12", timeout=30_000)
    done = int(page.locator("#stages-done").inner_text().split(" / ")[0])
    width = page.evaluate("parseFloat(document.getElementById('run-progress').style.width)")
    assert abs(width - round(done / 12 * 100)) <= 1 + 100 / 12  # one stage may finish between the reads
    expect(page.locator("#agent-percent")).to_contain_text("agent reports")

    # elapsed ticks; the ETA is an estimate from the average and it moves
    elapsed = seconds(page.locator("#run-elapsed").inner_text())
    page.wait_for_function(
        f"() => {{ const t = document.getElementById('run-elapsed').textContent; return t !== '—' && "
        f"window.kiloLoop.fmtDuration !== undefined && t !== {page.locator('#run-elapsed').inner_text()!r}; }}",
        timeout=10_000)
    assert seconds(page.locator("#run-elapsed").inner_text()) > elapsed
    expect(page.locator("#run-eta")).to_have_text(re.compile(r"^~"), timeout=20_000)
    eta = page.locator("#run-eta").inner_text()
    expect(page.locator("#run-eta")).not_to_have_text(eta, timeout=20_000)
    expect(page.locator("#run-average")).to_have_text(re.compile(r"^\d+s$"))
    expect(page.locator("#now-stage")).to_have_text(re.compile(r"^Stage \d+ of 12: Stage number \d+$"))
    expect(page.locator("#stages-later")).to_be_attached()
    # "Now" never shows a tool line twice: the tool list has it, "doing" keeps what the agent said
    doing, tools = page.evaluate("() => [document.getElementById('now-doing').textContent, "
                                 "[...document.querySelectorAll('#now-tools li')].map((li) => li.textContent)]")
    assert doing not in tools, (doing, tools)
    # a pending question stops the estimate: the ETA says who the run waits for
    waiting = page.evaluate("() => window.kiloLoop.etaText({status: 'waiting-answer'}, {final: false, eta: 60000})")
    assert waiting == "waiting for you"
    ARTIFACTS.mkdir(exist_ok=True)  # the top of the page, as the README shows it (scripts/refresh-screenshot.sh)
    page.screenshot(path=str(ARTIFACTS / f"run-top-{viewport}.png"), full_page=False)

    # the chart: cumulative cost, rising, under a dashed budget line it names
    expect(page.locator(".chart__budget")).to_have_count(1)
    expect(page.locator(".chart__label--budget")).to_have_text("budget $0.0500")
    page.wait_for_function("document.querySelectorAll('.chart__dot:not(.chart__dot--running)').length >= 2")
    ys = page.eval_on_selector_all(".chart__dot:not(.chart__dot--running)", "els => els.map(e => +e.getAttribute('cy'))")
    assert ys == sorted(ys, reverse=True) and ys[0] > ys[-1], ys  # SVG y grows downwards: the total only rises
    budget_y = float(page.get_attribute(".chart__budget", "y1") or "nan")
    assert budget_y < ys[-1]  # the run is still under its budget

    # labels stay readable: the chart is drawn at its own size, not scaled down
    geometry = page.evaluate("""() => {
      const svg = document.querySelector('.chart__svg');
      const label = document.querySelector('.chart__label');
      return { drawn: svg.getBoundingClientRect().width, own: svg.viewBox.baseVal.width,
               font: parseFloat(getComputedStyle(label).fontSize), page: document.documentElement.scrollWidth };
    }""")
    assert abs(geometry["drawn"] - geometry["own"]) <= 2 and geometry["font"] >= 12, geometry
    assert geometry["page"] <= VIEWPORTS[viewport]["width"], geometry

    # hover details on an iteration of the chart
    page.locator(".chart__hit").first.hover()
    tip = page.locator("#chart-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("#1")
    expect(tip).to_contain_text("of $0.0500")

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"run-live-{viewport}.png"), full_page=False)
    page.locator("#chart").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"run-chart-{viewport}.png"), full_page=False)

    if viewport == "phone":  # on a phone the live log comes before the history
        log_top = page.locator(".log-card").bounding_box()
        cards_top = page.locator(".iterations-card").bounding_box()
        assert log_top and cards_top and log_top["y"] < cards_top["y"]
    controls = page.locator("#controls")
    page.mouse.wheel(0, 1500)
    page.wait_for_timeout(300)
    box = controls.bounding_box()
    assert box is not None and 0 <= box["y"] < 200, box  # sticky: still on screen after scrolling
    page.context.close()
    assert errors == [], errors


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_answer_and_option_buttons_are_readable_on_hover(budget_server: tuple[ServerProcess, Path],
                                                         browser: Browser, viewport: str) -> None:
    process, _ = budget_server
    httpx.post(process.url + "/api/start", headers=process.auth,
               json={"file": "plans/demo.md", "dryRun": True, "iterations": 5})
    page, errors = open_page(browser, viewport, process.link)
    expect(page.locator("#question-modal")).to_be_visible(timeout=30_000)
    option = page.locator("#questions .option").first
    option.hover()
    page.wait_for_timeout(200)
    assert page.evaluate(CONTRAST, option.element_handle())["ratio"] >= 4.5
    page.click("#question-later")
    answer = page.locator("#ctl-answer")
    expect(answer).to_be_visible()
    before = page.evaluate(CONTRAST, answer.element_handle())
    answer.hover()
    page.wait_for_timeout(200)
    hovered = page.evaluate(CONTRAST, answer.element_handle())
    assert hovered["ratio"] >= 4.5, hovered
    assert hovered["background"] != "rgb(238, 241, 245)"  # not the generic light hover under white text
    assert before["ratio"] >= 4.5
    page.screenshot(path=str(ARTIFACTS / f"answer-hover-{viewport}.png"), full_page=False)
    page.context.close()
    assert errors == [], errors


def test_saved_runs_list_receipts_and_log_filter(budget_server: tuple[ServerProcess, Path], browser: Browser) -> None:
    process, _ = budget_server
    started = httpx.post(process.url + "/api/start", headers=process.auth,
                         json={"file": "plans/demo.md", "dryRun": True, "hitl": "off", "iterations": 2})
    run_id = started.json()["runId"]
    page, errors = open_page(browser, "desktop", process.link)
    expect(page.locator("#status-pill")).to_have_text("iterations used", timeout=30_000)
    expect(page.locator("#topbar")).to_have_class(re.compile("topbar--iterations-used"))
    expect(page.locator("#topbar")).to_have_css("background-color", "rgb(255, 246, 220)")  # amber, not red

    # a receipt per stage: the first two stages took one iteration each
    rows = page.locator("#receipts-body tr")
    expect(rows).to_have_count(4)
    expect(rows.nth(0)).to_contain_text("First stage")
    expect(rows.nth(0).locator("td").nth(2)).to_have_text("1")
    expect(rows.nth(1).locator("td").nth(7)).to_have_text("—")  # dry runs skip verify commands

    # the log: tools only, then a search
    page.click("#log-filter [data-filter='tools']")
    visible = page.eval_on_selector_all("#log > :not([hidden]):not([data-section])", "els => els.map(e => e.className)")
    assert visible and all("log__tool" in name for name in visible), visible
    page.fill("#log-search", "edit src/stage-2")
    visible = page.eval_on_selector_all("#log > :not([hidden]):not([data-section])", "els => els.map(e => e.textContent)")
    assert visible == ["▸ Edit src/stage-2.py"], visible
    page.fill("#log-search", "no such line anywhere")
    expect(page.locator("#log-empty")).to_be_visible()

    page.click("#nav-runs")
    row = page.locator(f".runs-table__row[data-run='{run_id}']")
    expect(row).to_contain_text("2 / 4")
    expect(row).to_contain_text("iterations used")
    expect(row.locator("td").nth(5)).to_have_text(re.compile(r"^\d+s$"))
    expect(row).to_contain_text("$0.0110")
    page.screenshot(path=str(ARTIFACTS / "saved-runs.png"), full_page=False)
    page.context.close()
    assert errors == [], errors


def test_the_run_view_arithmetic(budget_server: tuple[ServerProcess, Path], browser: Browser) -> None:
    """ETA, the cumulative series and the amber status, on made-up runs (the page's own functions)."""
    process, _ = budget_server
    page, errors = open_page(browser, "desktop", process.link)
    expect(page.locator("#view-launcher")).to_be_visible()
    result = page.evaluate("""() => {
      const k = window.kiloLoop;
      const t0 = Date.parse('2026-01-01T00:00:00Z');
      const at = (s) => new Date(t0 + s * 1000).toISOString();
      const stages = [{id: 'a', status: 'done'}, {id: 'b', status: 'in_progress'}, {id: 'c', status: 'pending'},
                      {id: 'd', status: 'pending'}];
      const run = {status: 'running', startedAt: at(0), iteration: 3, maxIterations: 10, stages, completedStages: ['a']};
      const items = [
        {iteration: 1, outcome: 'failed', durationMs: 60000, cost: 0.01, tokens: 100, startedAt: at(0)},
        {iteration: 2, outcome: 'ok', durationMs: 120000, cost: 0.02, tokens: 200, startedAt: at(60)},
        {iteration: 3, outcome: 'running', durationMs: 0, cost: 0.005, tokens: 50, startedAt: at(180)},
      ];
      const clock = k.runClock(run, items, t0 + 200 * 1000);
      const capped = k.runClock({...run, maxIterations: 4}, items, t0 + 200 * 1000);
      const series = k.cumulativeSeries(items, 'cost', 0.035, 0);
      const windowed = k.cumulativeSeries(items.slice(1), 'cost', 0.035, 1);
      return {
        clock, capped,
        cumulative: series.points.map((p) => +p.cumulative.toFixed(4)),
        running: +series.running.cumulative.toFixed(4),
        windowed: windowed.points.map((p) => +p.cumulative.toFixed(4)),
        used: k.displayStatus({status: 'done-with-errors', stopReason: '4 iteration(s) used, 2 stage(s) not done', stages}),
        blocked: k.displayStatus({status: 'done-with-errors', stopReason: '4 iteration(s) used, 1 stage(s) not done',
                                  stages: [{status: 'blocked'}]}),
        durations: [k.fmtDuration(42000), k.fmtDuration(185000), k.fmtDuration(3720000)],
      };
    }""")
    clock = result["clock"]
    assert clock["elapsed"] == 200_000 and clock["average"] == 90_000 and clock["runningFor"] == 20_000
    # 2 finished iterations for 1 stage done: 2 per stage, 3 stages left = 6 iterations of 90 s, minus the 20 s run
    assert clock["eta"] == 6 * 90_000 - 20_000
    assert result["capped"]["eta"] == 2 * 90_000 - 20_000  # only 2 iterations of the budget are left
    assert result["cumulative"] == [0.01, 0.03] and result["running"] == 0.035  # the running one is not a zero
    assert result["windowed"] == [0.03]  # iterations before the loaded window count in the total
    assert result["used"] == "iterations-used" and result["blocked"] == "done-with-errors"
    assert result["durations"] == ["42s", "3m 05s", "1h 02m"]
    page.context.close()
    assert errors == [], errors
