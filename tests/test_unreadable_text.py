"""A message with a lone surrogate (half an emoji from a buggy client), over real HTTP with
the Bot API stand-in: it has no UTF-8 form, so no database can keep it. The customer is
told, in their language, to type it again (never "busy, try again", which could never
work), nothing is started, and nothing is logged as an error."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_core.models import Language
from bot.texts import say
from standin import StandIn
from tests.harness import DEMO, start_bot
from tests.harness import BotHarness as Bot


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[Bot]:
    running = await start_bot(standin, tmp_path / "bot.db")
    yield running
    await running.stop()


@pytest.mark.parametrize(
    ("text", "language"),
    [("where is order A1001 \ud83d?", Language.EN), ("取消订单 A1003 \udc00", Language.ZH)],
)
async def test_a_lone_surrogate_is_answered_politely_without_an_error(
    bot: Bot, text: str, language: Language, caplog: pytest.LogCaptureFixture
) -> None:
    bot.standin.inject_message(DEMO, DEMO, text)
    await bot.until_text(DEMO, say("unreadable", language))
    bot.standin.inject_message(DEMO, DEMO, "/help")  # handled after it, in the chat's order
    await bot.until_text(DEMO, say("help", Language.EN))
    assert bot.bot_texts(DEMO) == [say("unreadable", language), say("help", Language.EN)]
    assert bot.query("SELECT count(*) FROM runs") == [(0,)]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_an_edit_into_a_lone_surrogate_is_answered_politely_without_an_error(
    bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    sent = bot.standin.inject_message(DEMO, DEMO, "/help")
    await bot.until_text(DEMO, say("help", Language.EN))
    bot.standin.inject_edited_message(DEMO, DEMO, sent["message_id"], "where is A1001 \ud83d")
    await bot.until_text(DEMO, say("unreadable", Language.EN))
    assert bot.query("SELECT count(*) FROM runs") == [(0,)]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
