"""The demo's chat page on a phone, a tablet and a desktop (issue 23 item 10).

From 360 px to 1920 px the page never scrolls sideways and clips nothing that matters:
the chat's title, its newest bubble with the inline buttons, and the composer are inside
the viewport. Narrower than 900 px it is one column, the staff group behind a tab; wider,
the two panels side by side. On a phone, the customer asks for a refund that needs the
team's approval, and the demo's staff member approves it from the "Staff group" tab.

Everything waits on what the page shows (Playwright's auto-waiting locators), never on time.
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

PHONE = {"width": 390, "height": 844}
# (width, height): the smallest phone we support, a phone, a tablet upright, a small laptop,
# a desktop, a large desktop.
SIZES = [(360, 640), (390, 844), (768, 1024), (1024, 768), (1440, 900), (1920, 1080)]
NARROW_BELOW = 900  # the CSS's breakpoint: one panel at a time below it


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
    widths = await page.evaluate(
        "[document.scrollingElement.scrollWidth, window.innerWidth,"
        " document.scrollingElement.scrollHeight, window.innerHeight]"
    )
    scroll_width, width, scroll_height, height = widths
    assert scroll_width <= width, f"the page is {scroll_width} px wide in a {width} px window"
    # Nor up and down: the lists scroll inside the page, so the composer stays in view.
    assert scroll_height <= height, f"the page is {scroll_height} px tall in {height} px"


async def inside_viewport(locator: Any, what: str) -> None:
    """Every element `locator` matches is visible and wholly inside the viewport."""
    page = locator.page
    width, height = await page.evaluate("[window.innerWidth, window.innerHeight]")
    count = await locator.count()
    assert count, f"no {what} on the page"
    for index in range(count):
        element = locator.nth(index)
        assert await element.is_visible(), f"{what} #{index} is hidden"
        box = await element.bounding_box()
        assert box is not None, f"{what} #{index} has no box"
        right, bottom = box["x"] + box["width"], box["y"] + box["height"]
        assert box["x"] >= 0 and box["y"] >= 0, f"{what} #{index} starts outside: {box}"
        assert right <= width + 0.5 and bottom <= height + 0.5, (
            f"{what} #{index} ends outside the {width}x{height} viewport: {box}"
        )


async def not_cut_short(locator: Any, what: str) -> None:
    """The element's text fits it (no ellipsis, no hidden overflow)."""
    fits = await locator.evaluate("(el) => el.scrollWidth <= el.clientWidth")
    assert fits, f"{what} is cut short: {await locator.inner_text()!r}"


async def chat_fits(page: Any) -> None:
    """The customer's chat as the issue asks: title, newest bubble, buttons, composer."""
    await no_sideways_scroll(page)
    await inside_viewport(page.locator("#chat .chat-head .name"), "the chat's title")
    await not_cut_short(page.locator("#chat .chat-head .name"), "the chat's title")
    await inside_viewport(page.locator("#messages .msg").last, "the newest bubble")
    await inside_viewport(page.locator("#messages .keyboard button"), "an inline button")
    await inside_viewport(page.locator("#text"), "the message input")
    await inside_viewport(page.locator("#send"), "the Send button")


async def test_the_chat_page_fits_from_a_phone_to_a_desktop(page: Any, demo: Demo) -> None:
    await page.set_viewport_size(PHONE)
    await page.goto(demo.chat_url)
    await page.fill("#text", "cancel order A1003")
    await page.press("#text", "Enter")
    await page.locator("#messages .keyboard button").first.wait_for()

    for width, height in SIZES:
        await page.set_viewport_size({"width": width, "height": height})
        await page.goto(demo.chat_url)  # as someone opening the page on that screen
        await page.locator("#messages .keyboard button").first.wait_for()
        await page.locator("#staff-composer").wait_for(state="attached")
        await chat_fits(page)
        staff, tabs = page.locator("#staff"), page.locator("#tabs")
        if width < NARROW_BELOW:  # one panel at a time, the staff group behind its tab
            assert await tabs.is_visible(), f"no tabs at {width} px"
            assert not await staff.is_visible()
            await inside_viewport(page.locator("#tabs [role=tab]"), "a tab")
            await page.get_by_role("tab", name="Staff group").click()
            await staff.wait_for()
            assert not await page.locator("#chat").is_visible()
            assert await page.get_by_role("tab", name="Staff group").get_attribute(
                "aria-selected"
            ) == ("true")
            await page.get_by_role("tab", name="Chat").click()
            await page.locator("#chat").wait_for()
        else:  # side by side
            assert not await tabs.is_visible(), f"tabs shown at {width} px"
            assert await staff.is_visible()
        # The staff group fits too, when it shows (its own tab on a phone).
        if not await staff.is_visible():
            await page.get_by_role("tab", name="Staff group").click()
        await no_sideways_scroll(page)
        await inside_viewport(page.locator("#staff .chat-head .name"), "the staff group's title")
        await inside_viewport(page.locator("#topics button").first, "the first topic")
        await inside_viewport(page.locator("#staff-text"), "the staff input")
        await inside_viewport(page.locator("#staff-send"), "the staff Send button")


async def request_team_approval(page: Any, demo: Demo) -> str:
    """On a phone, ask for a refund above the demo's limit; returns the data-id of the
    customer's step message that waits for the team (with nothing to press)."""
    await page.set_viewport_size(PHONE)
    await page.goto(demo.chat_url)
    await page.locator("#tabs").wait_for()
    assert not await page.locator("#staff").is_visible()  # the chat first, alone
    await page.fill("#text", "refund 59 for order A1002")
    await page.press("#text", "Enter")

    # The bot asks the team in the staff group (the panel behind its tab) only once it has
    # told the customer: then the customer's newest message is the waiting step.
    approve = page.locator("#staff-messages .keyboard button", has_text="Approve")
    await approve.wait_for(state="attached")
    await page.locator("#badge-staff").wait_for()  # the Staff group tab shows news
    waiting = page.locator("#messages .msg.theirs").last
    assert await waiting.locator(".keyboard button").count() == 0  # the customer waits
    await chat_fits_without_buttons(page)
    return str(await waiting.get_attribute("data-id"))


async def chat_fits_without_buttons(page: Any) -> None:
    await no_sideways_scroll(page)
    await inside_viewport(page.locator("#chat .chat-head .name"), "the chat's title")
    await inside_viewport(page.locator("#messages .msg").last, "the newest bubble")
    await inside_viewport(page.locator("#text"), "the message input")


async def approve_from_the_staff_tab(page: Any) -> None:
    await page.get_by_role("tab", name="Staff group").click()
    await page.locator("#staff").wait_for()
    assert not await page.locator("#chat").is_visible()
    assert not await page.locator("#badge-staff").is_visible()  # seen now
    # The customer's topic is the one shown: the newest.
    assert "10001" in await page.locator("#topics button.selected").inner_text()
    approve = page.locator("#staff-messages .keyboard button", has_text="Approve")
    await no_sideways_scroll(page)
    await inside_viewport(approve, "the Approve button")
    await inside_viewport(page.locator("#staff-text"), "the staff input")
    await approve.click()
    await approve.wait_for(state="detached")  # decided: the prompt loses its buttons
    await page.locator("#badge-chat").wait_for()  # meanwhile the customer's chat changed


async def test_on_a_phone_a_refund_waits_for_the_team_and_goes_on_after_approve(
    page: Any, demo: Demo
) -> None:
    waiting_id = await request_team_approval(page, demo)
    await approve_from_the_staff_tab(page)

    await page.get_by_role("tab", name="Chat").click()
    await page.locator("#chat").wait_for()
    assert not await page.locator("#badge-chat").is_visible()
    # After the waiting step the run goes on: the bot's messages follow it, and the
    # newest is in view without scrolling.
    after = page.locator(f'#messages [data-id="{waiting_id}"] ~ .msg.theirs')
    await after.first.wait_for()
    await page.locator("#typing").wait_for(state="hidden")
    await chat_fits_without_buttons(page)
    assert await page.locator("#messages .keyboard button").count() == 0


async def test_the_waiting_step_message_is_edited_in_place_after_approve(
    page: Any, demo: Demo
) -> None:
    waiting_id = await request_team_approval(page, demo)
    waiting = page.locator(f'#messages [data-id="{waiting_id}"]')
    before = await waiting.inner_text()
    await approve_from_the_staff_tab(page)
    await page.get_by_role("tab", name="Chat").click()
    await page.locator(f'#messages [data-id="{waiting_id}"] ~ .msg.theirs').first.wait_for()
    await waiting.locator(".meta", has_text="edited").wait_for()
    assert await waiting.inner_text() != before  # it now says how the team decided
