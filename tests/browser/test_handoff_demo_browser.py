"""Human handoff in the running demo, in a real browser (issue 14): the customer asks for a
person in the chat, the staff panel shows their topic with the header, the staff member's
reply reaches the customer, Close ends it and the agent answers again.

Everything is the product: the real bot (PTB over HTTP) behind the demo's stand-in, the
chat page's composer and the staff panel's composer and buttons.
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


def customer_bubble(page: Any, text: str) -> Any:
    return page.locator("#messages .msg .bubble", has_text=text)


async def test_hand_off_reply_as_staff_and_close_in_the_browser(page: Any, demo: Demo) -> None:
    await page.goto(demo.chat_url)
    await page.locator("#staff").wait_for()
    await page.fill("#text", "I want to talk to a real person")
    await page.press("#text", "Enter")
    await customer_bubble(page, TEXTS["handoff_opened"][EN]).wait_for()

    topic = page.locator("#topics button", has_text="10001")
    await topic.wait_for()
    await topic.click()
    header = page.locator(
        "#staff-messages .msg", has_text="Handoff · the customer asked for a person"
    )
    await header.wait_for()
    assert "I want to talk to a real person" in await header.inner_text()

    await page.fill("#text", "my parcel arrived broken")
    await page.press("#text", "Enter")
    await page.locator("#staff-messages .msg", has_text="my parcel arrived broken").wait_for()

    await page.fill("#staff-text", "Sorry to hear that, sending a new one today.")
    await page.press("#staff-text", "Enter")
    await customer_bubble(page, "sending a new one today").wait_for()

    await page.locator("#staff-messages .keyboard button", has_text="Close").click()
    await customer_bubble(page, TEXTS["handoff_closed"][EN]).wait_for()
    await page.locator("#topics button.closed", has_text="10001").wait_for()

    await page.fill("#text", "where is order A1001")
    await page.press("#text", "Enter")
    await customer_bubble(page, "Here is my plan:").wait_for()  # the agent answers again
