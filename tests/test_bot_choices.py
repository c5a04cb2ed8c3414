"""Choices instead of a wall of text (issue 21), over HTTP with the Bot API stand-in.

"what can you do?" ends the run with one short question and up to four option buttons of
things the bot can do; pressing one goes on as if the customer had written it. Texts are
taken from the code that makes them (the planner's options, bot.texts), never retyped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_core.models import Language
from agent_core.understanding.planner import PlanRequest, RuleBasedPlanner
from bot.texts import say
from standin import StandIn
from tests.harness import DEMO, start_bot, until
from tests.harness import BotHarness as Bot


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[Bot]:
    running = await start_bot(standin, tmp_path / "bot.db")
    yield running
    await running.stop()


async def test_choice_buttons_appear_and_a_press_continues(bot: Bot) -> None:
    text = "what can you do?"
    offered = RuleBasedPlanner().draft(PlanRequest(text=text)).interpretation
    assert offered is not None and offered.choices and offered.clarify is not None
    labels = [o.label for o in offered.clarify.options]
    assert 2 <= len(labels) <= 4

    bot.standin.inject_message(DEMO, DEMO, text)
    question = await bot.buttons_message(DEMO)
    assert question.text == offered.clarify.question
    assert [b.text for row in question.buttons for b in row] == labels
    assert bot.query("SELECT status FROM runs") == [("needs_clarification",)]

    person = labels.index(next(o.label for o in offered.clarify.options if "person" in o.text))
    row = question.buttons[person]
    bot.standin.press_button(DEMO, question.message_id, row[0].callback_data or "", DEMO)
    # The press is the request "talk to a person": the handoff is recorded (no staff group
    # in this bot, so no promise of a reply).
    await bot.until_text(DEMO, say("handoff_unstaffed", Language.EN))
    statuses = [s for (s,) in bot.query("SELECT status FROM runs ORDER BY created_at")]
    assert statuses[0] == "needs_clarification" and len(statuses) == 2
    assert bot.query("SELECT count(*) FROM shop_cancellations") == [(0,)]


async def test_choice_data_replayed_in_another_chat_or_message_changes_nothing(bot: Bot) -> None:
    """A group's option, forged onto the asker's private question or onto another message
    in the group, is refused there: no run starts and the group's question stays open, so
    the real press still continues it."""
    group, text = -1001, "what can you do?"
    bot.standin.inject_message(group, DEMO, text)
    asked = await bot.buttons_message(group)
    bot.standin.inject_message(DEMO, DEMO, text)
    private = await bot.buttons_message(DEMO)
    data = asked.buttons[0][0].callback_data or ""
    (group_run,) = bot.query("SELECT id FROM runs WHERE chat_id = ?", group)

    pressed = [
        bot.standin.press_button(DEMO, private.message_id, data, DEMO, forge=True),
        bot.standin.press_button(group, asked.message_id - 1, data, DEMO, forge=True),
    ]
    for query_id in pressed:
        await bot.standin.wait_for(lambda q=query_id: bool(bot.standin.callback_answers(q)))
        assert bot.standin.callback_answers(query_id)[0].text == say("toast_invalid", Language.EN)
    assert bot.query("SELECT count(*) FROM runs") == [(2,)]
    assert bot.query(
        "SELECT count(*) FROM runs WHERE clarify_nonce IS NOT NULL AND id = ?", group_run[0]
    ) == [(1,)]
    still = next(m for m in bot.standin.bot_messages(DEMO) if m.message_id == private.message_id)
    assert still.buttons  # the private question is untouched too

    real = bot.standin.press_button(group, asked.message_id, data, DEMO)
    await bot.standin.wait_for(lambda: bool(bot.standin.callback_answers(real)))
    assert bot.standin.callback_answers(real)[0].text == say("toast_chosen", Language.EN)
    await until(lambda: bot.query("SELECT count(*) FROM runs WHERE chat_id = ?", group)[0][0] == 2)
    assert bot.query("SELECT count(*) FROM runs WHERE chat_id = ?", DEMO) == [(1,)]


async def test_track_an_order_from_the_menu_asks_which_order(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "where is A1001")
    await bot.until_text(DEMO, "Order A1001 is on its way")
    bot.standin.inject_message(DEMO, DEMO, "hello")
    menu = await bot.buttons_message(DEMO)
    track = next(b for row in menu.buttons for b in row if b.text == "Track an order")
    before = len(bot.standin.bot_messages(DEMO))
    bot.standin.press_button(DEMO, menu.message_id, track.callback_data or "", DEMO)
    # The menu picked a topic, not A1001: the bot asks which order instead of reading it.
    asked = await bot.until_text(DEMO, "your order number")
    assert asked.message_id > menu.message_id
    said = [m.text or "" for m in bot.standin.bot_messages(DEMO)[before:]]
    assert not any("A1001 is on its way" in text for text in said), said
    reads = "SELECT count(*) FROM steps WHERE tool = 'get_order_status'"
    assert bot.query(reads) == [(1,)]  # only the first question's
