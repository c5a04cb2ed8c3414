"""The demo chat page's "bot is typing…", over real HTTP: python-telegram-bot calls the
stand-in's sendChatAction, and the page's state API shows it as Telegram would (until the
bot's next message or about 5 s), never because the customer wrote last."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from telegram import Bot
from telegram.constants import ChatAction

from standin import StandIn
from standin.records import ACTION_SHOWN_S
from standin.webchat import WebChat
from tests.harness import PATIENCE

CUSTOMER = 4242


class Clock:
    """The stand-in's clock: real time, plus what a test moved it on by."""

    def __init__(self) -> None:
        self.ahead = 0.0
        self._start = time.time() - time.monotonic()

    def __call__(self) -> float:
        return self._start + time.monotonic() + self.ahead


@pytest.fixture
async def page() -> AsyncIterator[tuple[StandIn, Clock, Bot, WebChat]]:
    clock = Clock()
    async with StandIn(clock=clock, patience=PATIENCE) as standin:
        standin.add_chat(CUSTOMER, CUSTOMER, first_name="Ada")
        chat = WebChat(standin, user_id=CUSTOMER)
        await chat.start()
        try:
            async with Bot(
                "123456789:AAStandInTokenForLocalTests_0123456789",
                base_url=standin.base_url,
                base_file_url=standin.base_file_url,
            ) as bot:
                yield standin, clock, bot, chat
        finally:
            await chat.stop()


async def state(chat: WebChat, query: str = "") -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(chat.url + "api/state" + query) as response,
    ):
        body: dict[str, Any] = await response.json()
        return body


async def test_typing_shows_only_while_the_bot_says_it_is_typing(
    page: tuple[StandIn, Clock, Bot, WebChat],
) -> None:
    standin, clock, bot, chat = page
    standin.inject_message(CUSTOMER, CUSTOMER, "is anyone there?", first_name="Ada")
    # The customer wrote last and the bot said nothing (a handoff waiting for staff).
    assert (await state(chat))["typing"] is False

    assert await bot.send_chat_action(CUSTOMER, ChatAction.TYPING)
    assert (await state(chat))["typing"] is True
    await bot.send_message(CUSTOMER, "Here is your answer.")
    assert (await state(chat))["typing"] is False  # the bot's message ends it

    assert await bot.send_chat_action(CUSTOMER, ChatAction.TYPING)
    assert (await state(chat))["typing"] is True
    clock.ahead += ACTION_SHOWN_S + 0.1
    assert (await state(chat))["typing"] is False  # Telegram's few seconds are over

    assert await bot.send_chat_action(CUSTOMER, ChatAction.UPLOAD_PHOTO)
    assert (await state(chat))["typing"] is False  # another action is not typing


async def test_a_waiting_page_is_told_when_typing_runs_out(
    page: tuple[StandIn, Clock, Bot, WebChat],
) -> None:
    standin, clock, bot, chat = page
    assert await bot.send_chat_action(CUSTOMER, ChatAction.TYPING)
    shown = await state(chat)
    assert shown["typing"] is True
    clock.ahead += ACTION_SHOWN_S - 0.3  # 0.3 s of "typing…" left
    started = time.monotonic()
    # A long poll for a change: nothing else happens, yet it answers once typing ends.
    later = await state(chat, f"?since={shown['version']}&wait=20")
    assert later["typing"] is False
    assert time.monotonic() - started < 10
