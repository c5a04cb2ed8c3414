"""`stepwise demo` in a real browser: cancel an order in the chat, then find it as staff.

The bot is the real one (PTB over HTTP against the stand-in); the chat page's Confirm is
the real inline button, which becomes a callback query the bot receives by long polling.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stepwise.demo import Demo
from stepwise.settings import Settings
from tests.browser.support import missing_browser

pytestmark = pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))

STAFF_TOKEN = "demo-browser-staff-token-0123456789"


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[Demo]:
    settings = Settings.model_validate(
        {"STEPWISE_DB": str(tmp_path / "demo.db"), "STEPWISE_SHOP_LATENCY_MS": "1000"}
    )
    running = Demo(settings, chat_port=0, staff_port=0, staff_token=STAFF_TOKEN, poll_timeout_s=1)
    await running.start()
    yield running
    await running.stop()


def bubble(page: Any, text: str) -> Any:
    return page.locator(".msg .bubble", has_text=text)


async def test_customer_cancels_an_order_and_staff_see_the_confirmation(
    page: Any, demo: Demo
) -> None:
    await page.set_viewport_size({"width": 860, "height": 700})
    await page.goto(demo.chat_url)
    await page.locator(".suggestions button").first.wait_for()
    await page.fill("#text", "cancel order A1003")
    await page.press("#text", "Enter")

    await bubble(page, "Here is my plan:").wait_for()
    plan = await bubble(page, "Here is my plan:").inner_text()
    assert "1. Check the status of order A1003" in plan and "2. Cancel order A1003" in plan
    yes, no = "Yes, cancel A1003", "No, keep it"  # agent_core.answers.compose.decision_labels
    confirm = page.locator(".keyboard button", has_text=yes)
    await confirm.wait_for()
    assert await page.locator(".keyboard button", has_text=no).count() == 1
    # The slow first step was shown working, then edited in place to done.
    checked = page.locator(".msg.theirs", has_text="Check the status of order A1003 — done")
    assert "edited" in await checked.inner_text()
    paused = await bubble(page, "waiting for your confirmation").inner_text()
    assert 'Please press "Yes, cancel A1003" or "No, keep it" below.' in paused

    await confirm.click()
    await page.locator(".toast", has_text="Confirmed, working on it.").wait_for()
    await bubble(page, "Order A1003 has been cancelled.").wait_for()
    assert await page.locator(".keyboard button").count() == 0  # the buttons are gone
    done = bubble(page, "Cancel order A1003 — confirmed and done")
    assert "edited" in await done.inner_text()
    assert await bubble(page, "waiting for your confirmation").count() == 0

    await page.set_viewport_size({"width": 1280, "height": 860})
    await page.goto(demo.console_url)
    await page.fill("#token", STAFF_TOKEN)
    await page.click("form.login button[type=submit]")
    await page.wait_for_url("**/runs")
    row = page.locator("table.runs tr", has_text="cancel order A1003")
    assert "completed" in await row.inner_text()
    await row.locator("td.request a").click()
    decision = page.locator(".decision")
    await decision.wait_for()
    assert (await decision.locator("dt").inner_text()) == "Confirmed"
    assert (await decision.locator("dd").inner_text()).startswith("by user 10001 at ")
    assert "Order A1003 has been cancelled." in await page.locator(".answer").inner_text()
