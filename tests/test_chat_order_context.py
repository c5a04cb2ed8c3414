""" "it" / "that order" / 它 / 这个订单 after a message that named several orders: an action
asks which of them, with each as an option, never the first alone. Planner, agent (a real
store and shop) and the bot over HTTP with the Bot API stand-in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_core.agent import Agent
from agent_core.execution.executor import Executor
from agent_core.execution.tools import ToolRegistry
from agent_core.models import RunStatus
from agent_core.understanding.planner import PlanRequest, RuleBasedPlanner
from standin import StandIn
from standin.records import ShownMessage
from storage.runs.sqlite import SqliteRunStore
from storage.shop.sqlite import SqliteShop
from storage.shop.tools import shop_tools
from tests.harness import DEMO, start_bot, until
from tests.harness import BotHarness as Bot

ACTIONS_ON_IT = ["cancel it", "取消它", "帮我取消这个订单", "return it", "cancel that order"]
BOTH = [["A1003", "A1007"], ["A1007", "A1003"]]


def options(text: str, chat_orders: list[str]) -> list[str]:
    request = PlanRequest(text=text, last_order_id=chat_orders[0], chat_order_ids=chat_orders)
    interp = RuleBasedPlanner().draft(request).interpretation
    assert interp is not None and interp.clarify is not None
    return [o.label for o in interp.clarify.options]


@pytest.mark.parametrize("chat_orders", BOTH)
@pytest.mark.parametrize("text", ACTIONS_ON_IT)
def test_an_action_on_it_offers_every_order_the_last_message_named(
    text: str, chat_orders: list[str]
) -> None:
    assert options(text, chat_orders) == chat_orders


@pytest.mark.parametrize("text", ACTIONS_ON_IT)
def test_an_action_on_it_with_one_order_in_view_offers_that_order(text: str) -> None:
    assert options(text, ["A1003"]) == ["A1003"]


def test_a_read_of_it_still_reads_the_first_order_only() -> None:
    request = PlanRequest(
        text="where is it", last_order_id="A1007", chat_order_ids=["A1007", "A1003"]
    )
    draft = RuleBasedPlanner().draft(request)
    assert [(s.tool, s.args) for s in draft.steps] == [("get_order_status", {"order_id": "A1007"})]


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    db = tmp_path / "agent.db"
    store = await SqliteRunStore.open(db)
    shop = await SqliteShop.open(db)
    yield Agent(RuleBasedPlanner(), Executor(ToolRegistry(shop_tools(shop)), journal=store), store)
    await shop.close()
    await store.close()


@pytest.mark.parametrize("chat_orders", BOTH)
async def test_the_agent_asks_which_of_the_chats_orders_to_cancel(
    agent: Agent, chat_orders: list[str]
) -> None:
    first, second = chat_orders
    await agent.ask(f"where are {first} and {second}?", user_id=DEMO, chat_id=DEMO)
    asked = await agent.ask("cancel it", user_id=DEMO, chat_id=DEMO)
    assert asked.status is RunStatus.NEEDS_CLARIFICATION and not asked.steps
    assert asked.clarify is not None
    assert [o.label for o in asked.clarify.options] == chat_orders


async def test_the_agent_offers_only_the_chats_orders_that_can_still_be_cancelled(
    agent: Agent,
) -> None:
    # A1004 is cancelled already: A1003 is the one order in view that fits, so it is
    # planned on it (and pauses for the Confirm), as with one order.
    await agent.ask("where are A1004 and A1003?", user_id=DEMO, chat_id=DEMO)
    run = await agent.ask("cancel it", user_id=DEMO, chat_id=DEMO)
    assert run.status is RunStatus.PAUSED
    assert [(s.tool, s.args) for s in run.steps if s.tool == "cancel_order"] == [
        ("cancel_order", {"order_id": "A1003"})
    ]


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[Bot]:
    running = await start_bot(standin, tmp_path / "bot.db")
    yield running
    await running.stop()


async def test_cancel_it_after_two_orders_shows_two_buttons_and_a_press_confirms_one(
    bot: Bot,
) -> None:
    bot.standin.inject_message(DEMO, DEMO, "where are A1003 and A1007?")
    await bot.until_text(DEMO, "A1007")
    await until(lambda: bot.query("SELECT count(*) FROM runs WHERE status = 'completed'") == [(1,)])
    bot.standin.inject_message(DEMO, DEMO, "cancel it")
    question = await bot.buttons_message(DEMO)
    assert [b.text for row in question.buttons for b in row] == ["A1003", "A1007"]
    assert bot.query("SELECT count(*) FROM steps WHERE tool = 'cancel_order'") == [(0,)]

    second = question.buttons[1][0]
    bot.standin.press_button(DEMO, question.message_id, second.callback_data or "", DEMO)

    def prompt() -> ShownMessage | None:
        shown = bot.standin.bot_messages(DEMO)
        return next((m for m in shown if m.buttons and m.message_id > question.message_id), None)

    # The pick's run pauses at the Confirm of a cancel of A1007, on a message of its own.
    await bot.standin.wait_for(lambda: prompt() is not None)
    confirm = prompt()
    assert confirm is not None
    assert "A1007" in (confirm.text or "") and "A1003" not in (confirm.text or "")
    assert bot.query("SELECT args FROM steps WHERE tool = 'cancel_order'") == [
        ('{"order_id": "A1007"}',)
    ]
    assert bot.query("SELECT count(*) FROM shop_cancellations") == [(0,)]
