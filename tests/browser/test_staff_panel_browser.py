"""The demo page's staff panel in a real browser: the staff group's topics, as staff see them.

A topic the bot opens through the Bot API appears in the panel with the bot's messages;
what the staff member types there, and the buttons they press, reach the bot as real
`message` and `callback_query` updates in that topic. No product code runs: the bot side
is played by python-telegram-bot calls against the stand-in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup

from standin import DEFAULT_TOKEN, StandIn
from standin.webchat import StaffDesk, WebChat, prepare_staff_group
from tests.browser.support import missing_browser

pytestmark = pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))

CUSTOMER = 10001
DESK = StaffDesk(chat_id=-1001000000042, user_id=10002, first_name="Sam")


@pytest.fixture
async def chat(standin: StandIn) -> AsyncIterator[WebChat]:
    prepare_staff_group(standin, DESK)
    page = WebChat(standin, user_id=CUSTOMER, staff=DESK)
    await page.start()
    yield page
    await page.stop()


@pytest.fixture
async def bot(standin: StandIn) -> AsyncIterator[Bot]:
    async with Bot(
        DEFAULT_TOKEN, base_url=standin.base_url, base_file_url=standin.base_file_url
    ) as client:
        yield client


def updates_in(standin: StandIn, kind: str, thread: int) -> list[dict[str, Any]]:
    """Queued updates of `kind` about the topic `thread` (for callback queries: pressed
    on a message in it)."""
    found = []
    for update in standin.pending_updates():
        payload = update.get(kind)
        if payload is None:
            continue
        message = payload.get("message", payload)
        if message.get("message_thread_id") == thread:
            found.append(payload)
    return found


async def test_staff_see_a_topic_reply_in_it_and_press_its_buttons(
    page: Any, chat: WebChat, bot: Bot, standin: StandIn
) -> None:
    topic = await bot.create_forum_topic(DESK.chat_id, "Ana (10001)")
    thread = topic.message_thread_id
    buttons = InlineKeyboardMarkup([[InlineKeyboardButton("Close", callback_data="close:1")]])
    await bot.send_message(
        DESK.chat_id, "Ana asks for a person.", message_thread_id=thread, reply_markup=buttons
    )
    await bot.send_message(DESK.chat_id, "The bot started.")  # in General

    await page.goto(chat.url)
    staff = page.locator("#staff")
    await staff.wait_for()
    await page.locator("#topics button", has_text="Ana (10001)").wait_for()
    assert await page.locator("#topics button").all_inner_texts() == ["General", "Ana (10001)"]
    selected = page.locator("#topics button.selected")
    assert await selected.inner_text() == "Ana (10001)"  # the newest topic is shown
    header = page.locator("#staff-messages .msg", has_text="Ana asks for a person.")
    await header.wait_for()
    assert "Stepwise Test Bot" in await header.inner_text()  # the sender is named
    assert await page.locator("#staff-messages .service").inner_text() == (
        "Stepwise Test Bot created the topic"
    )
    assert await page.locator("#staff-messages", has_text="The bot started.").count() == 0

    await page.fill("#staff-text", "Hi Ana, Sam here. Looking into it.")
    await page.press("#staff-text", "Enter")
    await page.locator("#staff-messages .msg.mine", has_text="Sam here").wait_for()
    await standin.wait_for(lambda: bool(updates_in(standin, "message", thread)[1:]))
    written = updates_in(standin, "message", thread)[-1]
    assert written["text"] == "Hi Ana, Sam here. Looking into it."
    assert written["from"]["id"] == DESK.user_id and written["is_topic_message"] is True

    await page.locator("#staff-messages .keyboard button", has_text="Close").click()
    await standin.wait_for(lambda: bool(updates_in(standin, "callback_query", thread)))
    (pressed,) = updates_in(standin, "callback_query", thread)
    assert (pressed["data"], pressed["from"]["id"]) == ("close:1", DESK.user_id)

    await page.locator("#topics button", has_text="General").click()
    await page.locator("#staff-messages .msg", has_text="The bot started.").wait_for()
    assert await page.locator("#topic-title").inner_text() == "General"

    await bot.close_forum_topic(DESK.chat_id, thread)  # staff see the topic closed
    await page.locator("#topics button.closed", has_text="Ana (10001)").wait_for()


async def test_without_a_staff_desk_the_page_is_the_customer_chat_alone(
    page: Any, standin: StandIn
) -> None:
    alone = WebChat(standin, user_id=CUSTOMER)
    await alone.start()
    try:
        await page.goto(alone.url)
        await page.locator("#composer").wait_for()
        assert not await page.locator("#staff").is_visible()
        response = await page.request.post(
            alone.url + "api/staff/send", data={"topic": 0, "text": "hi"}
        )
        assert response.status == 404
    finally:
        await alone.stop()
