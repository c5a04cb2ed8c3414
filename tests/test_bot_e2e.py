"""The real bot (PTB Application) against the local Bot API stand-in, over HTTP.

The bot is configured exactly as in production except for TELEGRAM_API_BASE_URL. Tests
act as customers (inject messages, press buttons) and read what each chat shows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.models import ErrorType, Language
from agent_core.shop import OrderArgs, shop_tools
from agent_core.tools import Tool, ToolContext, ToolFailure
from bot.texts import decision_labels
from standin import StandIn
from tests.harness import DEMO, OTHER, STAFF, start_bot
from tests.harness import BotHarness as Bot


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[Bot]:
    running = await start_bot(standin, tmp_path / "bot.db")
    yield running
    await running.stop()


async def test_status_query_shows_plan_step_and_answer(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "where is my order A1001?")
    await bot.until_text(DEMO, "expected 2026-12-03")
    texts = bot.bot_texts(DEMO)
    assert texts[0].startswith("Here is my plan:")
    assert "1. Check the status of order A1001" in texts[0]
    assert texts[1].startswith("✅ Check the status of order A1001")
    assert texts[-1] == "Order A1001 is on its way, expected 2026-12-03."
    assert len(texts) == 3  # plan, one message per step, answer


async def test_delivered_order_shows_the_skipped_step_with_its_reason(bot: Bot) -> None:
    bot.standin.inject_message(
        DEMO, DEMO, "帮我查一下订单 A1002 的物流，如果还没送达，再看一下售后政策"
    )
    await bot.until_text(DEMO, "订单 A1002：已签收")
    texts = bot.bot_texts(DEMO)
    assert texts[0].startswith("我的计划：")
    skipped = [t for t in texts if t.startswith("⏭")]
    assert len(skipped) == 1 and "不需要再查延迟补偿" in skipped[0]


async def test_cancel_confirm_cancels_exactly_once(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    paused = await bot.buttons_message(DEMO)
    labels = decision_labels("Cancel order A1003", Language.EN)
    assert tuple(b.text for b in paused.buttons[0]) == labels
    assert "waiting for your confirmation" in (paused.text or "")
    assert bot.query("SELECT count(*) FROM shop_cancellations") == [(0,)]

    query_id = bot.standin.press_button(
        DEMO, paused.message_id, paused.buttons[0][0].callback_data or "", DEMO
    )
    await bot.until_text(DEMO, "Order A1003 has been cancelled.")
    answers = bot.standin.callback_answers(query_id)
    assert [a.text for a in answers] == ["Confirmed, working on it."]
    after = next(m for m in bot.standin.bot_messages(DEMO) if m.message_id == paused.message_id)
    assert after.buttons == [] or after.buttons == ()
    assert "confirmed and done" in (after.text or "")
    assert bot.query("SELECT count(*) FROM shop_cancellations") == [(1,)]
    assert bot.query("SELECT status FROM shop_orders WHERE id = 'A1003'") == [("cancelled",)]


async def test_cancel_button_changes_nothing(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "帮我取消订单 A1001")
    paused = await bot.buttons_message(DEMO)
    assert tuple(b.text for b in paused.buttons[0]) == decision_labels(
        "取消订单 A1001", Language.ZH
    )
    bot.standin.press_button(
        DEMO, paused.message_id, paused.buttons[0][1].callback_data or "", DEMO
    )
    await bot.until_text(DEMO, "订单没有任何改动")
    assert bot.query("SELECT count(*) FROM shop_cancellations") == [(0,)]
    assert bot.query("SELECT status FROM shop_orders WHERE id = 'A1001'") == [("shipping",)]


async def test_double_press_has_one_effect(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1005")
    paused = await bot.buttons_message(DEMO)
    data = paused.buttons[0][0].callback_data or ""
    first = bot.standin.press_button(DEMO, paused.message_id, data, DEMO)
    second = bot.standin.press_button(DEMO, paused.message_id, data, DEMO)
    await bot.until_text(DEMO, "Order A1005 has been cancelled.")
    await bot.standin.wait_for(
        lambda: (
            bool(bot.standin.callback_answers(first)) and bool(bot.standin.callback_answers(second))
        )
    )
    toasts = sorted((bot.standin.callback_answers(q)[0].text or "") for q in (first, second))
    assert toasts == ["Confirmed, working on it.", "This request was already handled."]
    assert bot.query("SELECT count(*) FROM shop_cancellations") == [(1,)]


async def test_someone_elses_press_is_refused_and_changes_nothing(bot: Bot) -> None:
    group = -1001
    bot.standin.inject_message(group, DEMO, "cancel order A1003")
    paused = await bot.buttons_message(group)
    data = paused.buttons[0][0].callback_data or ""
    stranger = bot.standin.press_button(group, paused.message_id, data, OTHER)
    await bot.standin.wait_for(lambda: bool(bot.standin.callback_answers(stranger)))
    assert bot.standin.callback_answers(stranger)[0].text == "This button isn't for you."
    assert bot.query("SELECT status FROM runs") == [("paused",)]
    still = next(m for m in bot.standin.bot_messages(group) if m.message_id == paused.message_id)
    assert still.buttons  # untouched

    bot.standin.press_button(group, paused.message_id, data, DEMO)
    await bot.until_text(group, "Order A1003 has been cancelled.")


async def test_forged_and_garbage_button_data_are_refused(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    paused = await bot.buttons_message(DEMO)
    run_id = bot.query("SELECT id FROM runs")[0][0]
    forged = bot.standin.press_button(
        DEMO, paused.message_id, f"sw:c:{run_id}:AAAAAAAAAAA", DEMO, forge=True
    )
    garbage = bot.standin.press_button(DEMO, paused.message_id, "💣" * 5, DEMO, forge=True)
    await bot.standin.wait_for(
        lambda: (
            bool(bot.standin.callback_answers(forged))
            and bool(bot.standin.callback_answers(garbage))
        )
    )
    assert bot.standin.callback_answers(forged)[0].text == "This button is no longer valid."
    assert bot.standin.callback_answers(garbage)[0].text == "This button is no longer valid."
    assert bot.query("SELECT status FROM runs") == [("paused",)]
    assert bot.query("SELECT count(*) FROM shop_cancellations") == [(0,)]


async def test_expired_pause_is_refused_and_said(standin: StandIn, tmp_path: Path) -> None:
    bot = await start_bot(standin, tmp_path / "x.db", STEPWISE_APPROVAL_TTL="0s")
    try:
        bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
        paused = await bot.buttons_message(DEMO)
        query_id = bot.standin.press_button(
            DEMO, paused.message_id, paused.buttons[0][0].callback_data or "", DEMO
        )
        await bot.until_text(DEMO, "The confirmation expired")
        assert bot.standin.callback_answers(query_id)[0].text == (
            "This confirmation expired; nothing was done."
        )
        assert bot.query("SELECT status FROM runs") == [("expired",)]
        assert bot.query("SELECT count(*) FROM shop_cancellations") == [(0,)]
    finally:
        await bot.stop()


async def test_buttons_keep_working_after_a_restart(standin: StandIn, tmp_path: Path) -> None:
    db = tmp_path / "restart.db"
    first = await start_bot(standin, db)
    first.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    paused = await first.buttons_message(DEMO)
    await first.stop()

    second = await start_bot(standin, db)
    try:
        second.standin.press_button(
            DEMO, paused.message_id, paused.buttons[0][0].callback_data or "", DEMO
        )
        await second.until_text(DEMO, "Order A1003 has been cancelled.")
        assert second.query("SELECT count(*) FROM shop_cancellations") == [(1,)]
    finally:
        await second.stop()


async def test_retries_are_shown_on_the_step_message(standin: StandIn, tmp_path: Path) -> None:
    calls: list[str] = []

    async def flaky_status(args: OrderArgs, ctx: ToolContext) -> dict[str, Any]:
        calls.append(ctx.idempotency_key)
        if len(calls) <= 2:
            raise ToolFailure(ErrorType.TIMEOUT, "order service timed out")
        return {"order_id": args.order_id, "status": "shipping", "eta": "2026-12-03"}

    db = tmp_path / "flaky.db"
    seeded = await start_bot(standin, db)  # seeds the shop, then swap in a flaky status tool
    shop_backend = seeded.runtime.shop
    tools = [
        Tool("get_order_status", "flaky", OrderArgs, flaky_status, max_retries=2),
        *[t for t in shop_tools(shop_backend) if t.name != "get_order_status"],
    ]
    await seeded.stop()
    bot = await start_bot(standin, db, tools=tools)
    try:
        bot.standin.inject_message(DEMO, DEMO, "where is order A1001")
        await bot.until_text(DEMO, "succeeded after 2 retries")
        step = next(
            m
            for m in bot.standin.bot_messages(DEMO)
            if "Check the status" in (m.text or "") and not (m.text or "").startswith("Here")
        )
        seen = [*step.history, step.text or ""]
        assert any("retrying (attempt 2/3)" in t for t in seen)
        assert any("retrying (attempt 3/3)" in t for t in seen)
        assert (step.text or "").startswith("✅") and "done after 2 retries" in (step.text or "")
        run_id = bot.query("SELECT id FROM runs")[0][0]
        assert calls == [f"{run_id}:s1"] * 3
    finally:
        await bot.stop()


async def test_twenty_chats_at_once_each_see_only_their_own(bot: Bot) -> None:
    users = [30000 + n for n in range(20)]
    for n, user in enumerate(users):
        text = "退货政策是什么" if n % 2 else "what is your refund policy?"
        bot.standin.inject_message(user, user, text)

    def all_answered() -> bool:
        return all(len(bot.standin.bot_messages(u)) >= 3 for u in users)

    await bot.standin.wait_for(all_answered, timeout=20)
    for n, user in enumerate(users):
        texts = bot.bot_texts(user)
        assert len(texts) == 3
        if n % 2:
            assert texts[0].startswith("我的计划") and "退货" in texts[-1]
        else:
            assert texts[0].startswith("Here is my plan") and "refund" in texts[-1]
    sends = bot.standin.calls("sendMessage")
    assert {r.chat_id for r in sends} == set(users)
    rows = bot.query("SELECT chat_id, user_id FROM runs")
    assert len(rows) == 20 and all(chat == user for chat, user in rows)
    assert bot.standin.served_429 == 0


async def test_messages_of_one_chat_are_answered_in_order(bot: Bot) -> None:
    questions = ["where is order A1001", "where is order A1002", "where is order A1003"]
    for text in questions:
        bot.standin.inject_message(DEMO, DEMO, text)
    await bot.standin.wait_for(lambda: len(bot.bot_texts(DEMO)) >= 9, timeout=15)
    answers = [t for t in bot.bot_texts(DEMO) if t.startswith("Order ")]
    assert [a.split()[1] for a in answers] == ["A1001", "A1002", "A1003"]


async def test_unknown_and_foreign_orders_are_explained(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "where is order Z9999")
    await bot.until_text(DEMO, "I couldn't find order Z9999.")
    bot.standin.inject_message(DEMO, DEMO, "where is order B2001")
    await bot.until_text(DEMO, "doesn't belong to this account")


async def test_non_text_and_oversized_messages_get_a_polite_reply(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, sticker=True)
    await bot.until_text(DEMO, "I can only read text messages")
    bot.standin.inject_message(DEMO, DEMO, photo=True, language_code="zh-hans")
    await bot.until_text(DEMO, "我只能看懂文字消息")
    bot.standin.inject_message(DEMO, DEMO, "a" * 5000)
    await bot.until_text(DEMO, "That message is too long")
    assert bot.query("SELECT count(*) FROM runs") == [(0,)]


async def test_help_in_the_users_language(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "/start", language_code="zh-hans")
    await bot.until_text(DEMO, "你可以这样问我")
    bot.standin.inject_message(OTHER, OTHER, "/help", language_code="en")
    await bot.until_text(OTHER, "Where is my order A1001?")


async def test_staff_commands_for_staff_only(bot: Bot) -> None:
    for n in range(10):  # ten customers: one chat's flood budget would take half a minute
        bot.standin.inject_message(30000 + n, 30000 + n, f"where is order A100{n % 5 + 1}")
    await bot.standin.wait_for(
        lambda: bot.query("SELECT count(*) FROM runs WHERE status != 'running'") == [(10,)],
        timeout=20,
    )
    bot.standin.inject_message(DEMO, DEMO, "/runs")
    await bot.until_text(DEMO, "not authorised")
    bot.standin.inject_message(DEMO, DEMO, "/stats")
    bot.standin.inject_message(DEMO, DEMO, "/run abc")
    await bot.standin.wait_for(lambda: sum("not authorised" in t for t in bot.bot_texts(DEMO)) == 3)

    bot.standin.inject_message(STAFF, STAFF, "/runs")
    page = await bot.until_text(STAFF, "Recent runs")
    assert [b.text for b in page.buttons[0]] == ["▶"]
    bot.standin.press_button(STAFF, page.message_id, page.buttons[0][0].callback_data or "", STAFF)
    await bot.until_text(STAFF, "from #9")

    run_id = bot.query("SELECT id FROM runs ORDER BY created_at LIMIT 1")[0][0]
    bot.standin.inject_message(STAFF, STAFF, f"/run {run_id}")
    timeline = await bot.until_text(STAFF, f"Run {run_id}")
    assert "step_started s1 attempt 1" in (timeline.text or "")
    bot.standin.inject_message(STAFF, STAFF, "/stats")
    stats = await bot.until_text(STAFF, "last 24 h")
    assert "runs: 10" in (stats.text or "")


async def test_a_blocked_customer_is_noted_and_nothing_breaks(bot: Bot) -> None:
    bot.standin.add_chat(OTHER, OTHER)
    bot.standin.block_chat(OTHER, notify=False)
    bot.standin.inject_message(OTHER, OTHER, "what is your refund policy?")
    await bot.standin.wait_for(
        lambda: bot.query("SELECT count(*) FROM events WHERE kind = 'customer_blocked'") == [(1,)],
        timeout=10,
    )
    await bot.standin.wait_for(
        lambda: bot.query("SELECT status FROM runs") == [("completed",)], timeout=10
    )
    bot.standin.inject_message(DEMO, DEMO, "where is order A1001")
    await bot.until_text(DEMO, "Order A1001 is on its way")
