"""The staff console on a phone (390 px), in a real browser, on the running demo.

A customer's order question and a handoff give the console a run with attempts and a
handed-off run. At 390 px the page never scrolls sideways; the runs list is one card per
run with its status, badges and duration inside the screen; a run's tables scroll inside
their own box. The handoff header in the demo's staff panel links to the run in the console.

Everything waits on what the page shows (Playwright's auto-waiting locators), never on time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.models import Language
from bot.texts import TEXTS
from stepwise.demo import Demo
from stepwise.settings import Settings
from tests.browser.support import missing_browser

pytestmark = pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))

PHONE = {"width": 390, "height": 844}
EN = Language.EN


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[Demo]:
    settings = Settings.model_validate(
        {"STEPWISE_DB": str(tmp_path / "demo.db"), "STEPWISE_SHOP_LATENCY_MS": "0"}
    )
    running = Demo(settings, chat_port=0, staff_port=0, poll_timeout_s=1)
    await running.start()
    yield running
    await running.stop()


async def no_sideways_scroll(page: Any) -> None:
    scroll_width, width = await page.evaluate(
        "[document.scrollingElement.scrollWidth, window.innerWidth]"
    )
    assert scroll_width <= width, f"the page is {scroll_width} px wide in a {width} px window"


async def within_width(locator: Any, what: str) -> None:
    """Every element `locator` matches starts and ends inside the window's width."""
    width = await locator.page.evaluate("window.innerWidth")
    count = await locator.count()
    assert count, f"no {what} on the page"
    for index in range(count):
        box = await locator.nth(index).bounding_box()
        assert box is not None, f"{what} #{index} has no box"
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (
            f"{what} #{index} is outside the {width} px window: {box}"
        )


async def test_the_console_fits_a_phone_and_the_handoff_header_links_to_the_run(
    browser: Any, demo: Demo
) -> None:
    context = await browser.new_context(viewport=PHONE)
    page = await context.new_page()
    page.set_default_timeout(15_000)
    try:
        await page.goto(demo.chat_url)
        await page.fill("#text", "where is order A1001")
        await page.press("#text", "Enter")
        await page.locator("#messages .bubble", has_text="Order A1001 is on its way").wait_for()
        await page.fill("#text", "I want to talk to a real person")
        await page.press("#text", "Enter")
        await page.locator("#messages .bubble", has_text=TEXTS["handoff_opened"][EN]).wait_for()

        # The staff panel's handoff header: the run is a link into the console.
        await page.locator("#tab-staff").click()
        await page.locator("#topics button", has_text="10001").click()
        header = page.locator("#staff-messages .msg", has_text="Handoff ·")
        await header.wait_for()
        link = header.locator("a[href*='/runs/']")
        href = await link.get_attribute("href")
        assert href is not None and href.startswith(demo.console_url + "runs/")
        handed_run = href.rsplit("/", 1)[1]

        await page.goto(demo.console_url + "runs")
        await page.fill("#token", demo.staff_token)
        await page.click("form.login button[type=submit]")
        await page.wait_for_url("**/runs")
        cards = page.locator("table.runs tbody tr")
        assert await cards.count() == 2
        await no_sideways_scroll(page)
        for part in ("td.c-status .badge--completed", "td.c-duration", "td.c-request"):
            await within_width(page.locator(f"table.runs {part}"), part)
        assert await page.locator("table.runs thead").is_hidden()  # cards, not columns
        handed = page.locator("table.runs tr", has=page.locator(f"a[href='/runs/{handed_run}']"))
        assert await handed.locator(".badge--handed_off").inner_text() == "handed off"
        other = page.locator("table.runs tr", has_text="where is order A1001")
        assert await other.locator(".badge--handed_off").count() == 0

        await page.locator("table.runs a", has_text="where is order A1001").click()
        await page.locator("table.attempts").first.wait_for()
        await no_sideways_scroll(page)
        await within_width(page.locator(".scroll:has(table.attempts)"), "the attempts box")
        await page.locator("details.events summary").click()
        await within_width(page.locator(".scroll:has(table)"), "a table's box")
        await no_sideways_scroll(page)

        await page.locator(".topbar a", has_text="Overview").click()
        await page.locator("figure.chart").first.wait_for()
        await no_sideways_scroll(page)
        await within_width(page.locator("figure.chart"), "a chart")
    finally:
        await context.close()
