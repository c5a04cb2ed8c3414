"""The real bot (PTB Application) against the local Bot API stand-in, over HTTP.

The bot is configured exactly as in production except for TELEGRAM_API_BASE_URL. Tests
act as customers (inject messages, press buttons) and read what each chat shows. They
assert on structured facts (runs, steps, tool calls, the shop's ledger) and on texts made
by the code that makes them (`agent_core.answers.compose`, `bot.texts`), never on retyped copy:
the exact wording is the golden tests' job (tests/golden).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.answers.compose import decision_labels, plan_text, step_progress
from agent_core.execution.tools import Tool, ToolContext, ToolFailure
from agent_core.models import ErrorType, Language, Run, RunStatus, StepStatus
from bot.texts import say
from standin import ShownMessage, StandIn
from storage.shop.tools import OrderArgs, shop_tools
from tests.harness import DEMO, OTHER, STAFF, start_bot
from tests.harness import BotHarness as Bot

EN, ZH = Language.EN, Language.ZH
UNFINISHED = ("running", "paused")


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[Bot]:
    running = await start_bot(standin, tmp_path / "bot.db")
    yield running
    await running.stop()


async def load(bot: Bot, run_id: str) -> Run:
    run = await bot.runtime.store.load_run(run_id)
    assert run is not None
    return run


async def answered(bot: Bot, chat_id: int, count: int = 1, within: float = 15) -> list[Run]:
    """Once `count` runs of the chat have finished and each one's answer is shown in the
    chat: the runs, oldest first."""

    def done() -> bool:
        rows = bot.query(
            "SELECT answer FROM runs WHERE chat_id = ? AND status NOT IN (?, ?)",
            chat_id,
            *UNFINISHED,
        )
        shown = bot.bot_texts(chat_id)
        return len(rows) >= count and all(answer in shown for (answer,) in rows)

    await bot.standin.wait_for(done, timeout=within)
    ids = bot.query("SELECT id FROM runs WHERE chat_id = ? ORDER BY created_at", chat_id)
    return [await load(bot, run_id) for (run_id,) in ids]


async def paused(bot: Bot, chat_id: int) -> tuple[ShownMessage, Run]:
    """The chat's Confirm prompt, once shown, and its (paused) run."""
    prompt = await bot.buttons_message(chat_id)
    (run_id,) = bot.query("SELECT id FROM runs WHERE chat_id = ? AND status = 'paused'", chat_id)[0]
    return prompt, await load(bot, run_id)


def prompt_text(run: Run) -> str:
    """What the paused step's message shows: its line, then the answer so far."""
    assert run.pause is not None
    return step_progress(run.step(run.pause.step_id), run) + "\n\n" + (run.answer or "")


async def toast(bot: Bot, query_id: str) -> str | None:
    await bot.standin.wait_for(lambda: bool(bot.standin.callback_answers(query_id)))
    return bot.standin.callback_answers(query_id)[0].text


def cancellations(bot: Bot) -> int:
    return int(bot.query("SELECT count(*) FROM shop_cancellations")[0][0])


async def test_status_query_shows_plan_step_and_answer(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "where is my order A1001?")
    (run,) = await answered(bot, DEMO)
    assert run.status is RunStatus.COMPLETED and run.language is EN
    (step,) = run.steps
    assert (step.tool, step.args, step.status) == (
        "get_order_status",
        {"order_id": "A1001"},
        StepStatus.DONE,
    )
    assert step.observation["status"] == "shipping" and step.observation["eta"] == "2026-12-03"
    # plan, one message per step, answer
    assert bot.bot_texts(DEMO) == [plan_text(run), step_progress(step, run), run.answer]


async def test_delivered_order_shows_the_skipped_step_with_its_reason(bot: Bot) -> None:
    bot.standin.inject_message(
        DEMO, DEMO, "帮我查一下订单 A1002 的物流，如果还没送达，再看一下售后政策"
    )
    (run,) = await answered(bot, DEMO)
    assert run.language is ZH
    assert [s.status for s in run.steps] == [StepStatus.DONE, StepStatus.SKIPPED]
    assert run.steps[0].observation["status"] == "delivered"
    skipped = run.steps[1]
    assert skipped.tool == "search_policy" and skipped.skip_reason
    texts = bot.bot_texts(DEMO)
    assert texts[0] == plan_text(run)
    assert [t for t in texts if t == step_progress(skipped, run)] == [step_progress(skipped, run)]
    assert skipped.skip_reason in step_progress(skipped, run)
    assert texts[-1] == run.answer


async def test_cancel_confirm_cancels_exactly_once(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    prompt, run = await paused(bot, DEMO)
    assert run.pause is not None and run.step(run.pause.step_id).tool == "cancel_order"
    labels = decision_labels(run)
    assert labels is not None and tuple(b.text for b in prompt.buttons[0]) == labels
    # Issue 23 #1: the prompt's sentence names exactly the buttons under it.
    assert f'Please press "{labels[0]}" or "{labels[1]}" below.' in prompt.text
    assert prompt.text == prompt_text(run)
    assert cancellations(bot) == 0

    query_id = bot.standin.press_button(
        DEMO, prompt.message_id, prompt.buttons[0][0].callback_data or "", DEMO
    )
    (done,) = await answered(bot, DEMO)
    assert await toast(bot, query_id) == say("toast_confirmed", EN)
    after = next(m for m in bot.standin.bot_messages(DEMO) if m.message_id == prompt.message_id)
    assert after.buttons == ()
    cancel = done.step(run.pause.step_id)
    assert cancel.status is StepStatus.DONE and cancel.approval is not None
    assert cancel.approval.approved and cancel.approval.by_user_id == DEMO
    assert after.text == step_progress(cancel, done)  # the same message, edited
    assert cancellations(bot) == 1
    assert bot.query("SELECT status FROM shop_orders WHERE id = 'A1003'") == [("cancelled",)]


async def test_cancel_button_changes_nothing(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "帮我取消订单 A1001")
    prompt, run = await paused(bot, DEMO)
    assert run.pause is not None
    labels = decision_labels(run)
    assert labels is not None and tuple(b.text for b in prompt.buttons[0]) == labels
    assert f"请点击下方的“{labels[0]}”或“{labels[1]}”。" in prompt.text
    query_id = bot.standin.press_button(
        DEMO, prompt.message_id, prompt.buttons[0][1].callback_data or "", DEMO
    )
    (done,) = await answered(bot, DEMO)
    assert await toast(bot, query_id) == say("toast_cancelled", ZH)
    declined = done.step(run.pause.step_id)
    assert declined.approval is not None and not declined.approval.approved
    assert declined.status is StepStatus.CANCELLED
    assert cancellations(bot) == 0
    assert bot.query("SELECT status FROM shop_orders WHERE id = 'A1001'") == [("shipping",)]


async def test_double_press_has_one_effect(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1005")
    prompt, _ = await paused(bot, DEMO)
    data = prompt.buttons[0][0].callback_data or ""
    first = bot.standin.press_button(DEMO, prompt.message_id, data, DEMO)
    second = bot.standin.press_button(DEMO, prompt.message_id, data, DEMO)
    await answered(bot, DEMO)
    toasts = sorted([await toast(bot, first) or "", await toast(bot, second) or ""])
    assert toasts == sorted([say("toast_confirmed", EN), say("toast_handled", EN)])
    assert cancellations(bot) == 1


async def test_someone_elses_press_is_refused_and_changes_nothing(bot: Bot) -> None:
    group = -1001
    bot.standin.inject_message(group, DEMO, "cancel order A1003")
    prompt, _ = await paused(bot, group)
    data = prompt.buttons[0][0].callback_data or ""
    stranger = bot.standin.press_button(group, prompt.message_id, data, OTHER)
    assert await toast(bot, stranger) == say("toast_not_yours", EN)
    assert bot.query("SELECT status FROM runs") == [("paused",)]
    still = next(m for m in bot.standin.bot_messages(group) if m.message_id == prompt.message_id)
    assert still.buttons  # untouched

    bot.standin.press_button(group, prompt.message_id, data, DEMO)
    (done,) = await answered(bot, group)
    assert done.status is RunStatus.COMPLETED and cancellations(bot) == 1


async def test_forged_and_garbage_button_data_are_refused(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    prompt, run = await paused(bot, DEMO)
    forged = bot.standin.press_button(
        DEMO, prompt.message_id, f"sw:c:{run.id}:AAAAAAAAAAA", DEMO, forge=True
    )
    garbage = bot.standin.press_button(DEMO, prompt.message_id, "💣" * 5, DEMO, forge=True)
    assert await toast(bot, forged) == say("toast_invalid", EN)
    assert await toast(bot, garbage) == say("toast_invalid", EN)
    assert bot.query("SELECT status FROM runs") == [("paused",)]
    assert cancellations(bot) == 0


async def test_expired_pause_is_refused_and_said(standin: StandIn, tmp_path: Path) -> None:
    bot = await start_bot(standin, tmp_path / "x.db", STEPWISE_APPROVAL_TTL="0s")
    try:
        bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
        prompt, _ = await paused(bot, DEMO)
        query_id = bot.standin.press_button(
            DEMO, prompt.message_id, prompt.buttons[0][0].callback_data or "", DEMO
        )
        (done,) = await answered(bot, DEMO)
        assert done.status is RunStatus.EXPIRED
        assert await toast(bot, query_id) == say("toast_expired", EN)
        assert bot.query("SELECT status FROM runs") == [("expired",)]
        assert cancellations(bot) == 0
    finally:
        await bot.stop()


async def test_buttons_keep_working_after_a_restart(standin: StandIn, tmp_path: Path) -> None:
    db = tmp_path / "restart.db"
    first = await start_bot(standin, db)
    first.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    prompt, _ = await paused(first, DEMO)
    await first.stop()

    second = await start_bot(standin, db)
    try:
        second.standin.press_button(
            DEMO, prompt.message_id, prompt.buttons[0][0].callback_data or "", DEMO
        )
        (done,) = await answered(second, DEMO)
        assert done.status is RunStatus.COMPLETED
        assert cancellations(second) == 1
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
        (run,) = await answered(bot, DEMO)
        (step,) = run.steps
        assert step.status is StepStatus.DONE and step.retry_count == 2
        message = next(
            m for m in bot.standin.bot_messages(DEMO) if m.text == step_progress(step, run)
        )
        seen = [*message.history, message.text or ""]
        for retry in (1, 2):  # "retrying (attempt 2/3)", then 3/3, on the same message
            retrying = step.model_copy(update={"status": StepStatus.PENDING, "retry_count": retry})
            assert step_progress(retrying, run) in seen
        assert calls == [f"{run.id}:s1"] * 3
    finally:
        await bot.stop()


async def test_twenty_chats_at_once_each_see_only_their_own(bot: Bot) -> None:
    users = [30000 + n for n in range(20)]
    for n, user in enumerate(users):
        text = "退货政策是什么" if n % 2 else "what is your refund policy?"
        bot.standin.inject_message(user, user, text)

    for n, user in enumerate(users):
        (run,) = await answered(bot, user, within=20)
        assert run.language is (ZH if n % 2 else EN)
        assert [s.tool for s in run.steps] == ["search_policy"]
        assert bot.bot_texts(user) == [
            plan_text(run),
            step_progress(run.steps[0], run),
            run.answer,
        ]
    sends = bot.standin.calls("sendMessage")
    assert {r.chat_id for r in sends} == set(users)
    rows = bot.query("SELECT chat_id, user_id FROM runs")
    assert len(rows) == 20 and all(chat == user for chat, user in rows)
    assert bot.standin.served_429 == 0


async def test_messages_of_one_chat_are_answered_in_order(bot: Bot) -> None:
    questions = ["where is order A1001", "where is order A1002", "where is order A1003"]
    for text in questions:
        bot.standin.inject_message(DEMO, DEMO, text)
    runs = await answered(bot, DEMO, count=3)
    assert [r.request_text for r in runs] == questions
    texts = bot.bot_texts(DEMO)
    assert [texts.index(r.answer or "") for r in runs] == sorted(
        texts.index(r.answer or "") for r in runs
    )


async def test_unknown_and_foreign_orders_are_explained(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "where is order Z9999")
    (unknown,) = await answered(bot, DEMO)
    bot.standin.inject_message(DEMO, DEMO, "where is order B2001")
    _, foreign = await answered(bot, DEMO, count=2)
    assert unknown.steps[0].error is not None and foreign.steps[0].error is not None
    assert unknown.steps[0].error.type is ErrorType.NOT_FOUND
    assert foreign.steps[0].error.type is ErrorType.PERMISSION_DENIED
    assert foreign.steps[0].observation is None  # nothing about B2001 was shown
    assert unknown.status is foreign.status is RunStatus.FAILED
    # Issue 11 item 13: to the customer, another customer's order reads exactly like an
    # unknown one; only staff see the typed error above.
    assert unknown.answer is not None and foreign.answer is not None
    assert foreign.answer == unknown.answer.replace("Z9999", "B2001")


async def test_non_text_and_oversized_messages_get_a_polite_reply(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, sticker=True)
    await bot.until_text(DEMO, say("text_only", EN))
    bot.standin.inject_message(DEMO, DEMO, photo=True, language_code="zh-hans")
    await bot.until_text(DEMO, say("text_only", ZH))
    bot.standin.inject_message(DEMO, DEMO, "a" * 5000)
    await bot.until_text(DEMO, say("too_long", EN))
    assert bot.query("SELECT count(*) FROM runs") == [(0,)]


async def test_help_in_the_users_language(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "/start", language_code="zh-hans")
    await bot.until_text(DEMO, say("help", ZH))
    bot.standin.inject_message(OTHER, OTHER, "/help", language_code="en")
    await bot.until_text(OTHER, say("help", EN))


async def test_staff_commands_for_staff_only(bot: Bot) -> None:
    for n in range(10):  # ten customers: one chat's flood budget would take half a minute
        bot.standin.inject_message(30000 + n, 30000 + n, f"where is order A100{n % 5 + 1}")
    await bot.standin.wait_for(
        lambda: bot.query("SELECT count(*) FROM runs WHERE status != 'running'") == [(10,)],
        timeout=20,
    )
    refusal = say("not_authorised", EN)
    bot.standin.inject_message(DEMO, DEMO, "/runs")
    await bot.until_text(DEMO, refusal)
    bot.standin.inject_message(DEMO, DEMO, "/stats")
    bot.standin.inject_message(DEMO, DEMO, "/run abc")
    await bot.standin.wait_for(lambda: bot.bot_texts(DEMO) == [refusal] * 3)

    newest_first = [r for (r,) in bot.query("SELECT id FROM runs ORDER BY created_at DESC")]
    bot.standin.inject_message(STAFF, STAFF, "/runs")
    page = await bot.until_text(STAFF, newest_first[0])
    assert all(run_id in (page.text or "") for run_id in newest_first[:8])
    assert not any(run_id in (page.text or "") for run_id in newest_first[8:])
    assert [b.text for b in page.buttons[0]] == ["▶"]
    bot.standin.press_button(STAFF, page.message_id, page.buttons[0][0].callback_data or "", STAFF)
    second = await bot.until_text(STAFF, newest_first[-1])
    assert second.message_id == page.message_id  # the page, edited in place
    assert all(run_id in (second.text or "") for run_id in newest_first[8:])

    run_id = newest_first[-1]
    bot.standin.inject_message(STAFF, STAFF, f"/run {run_id}")
    timeline = await bot.until_text(STAFF, f"Run {run_id}")
    kinds = [kind for (kind,) in bot.query("SELECT kind FROM events WHERE run_id = ?", run_id)]
    assert all(kind in (timeline.text or "") for kind in kinds)
    bot.standin.inject_message(STAFF, STAFF, "/stats")
    await bot.standin.wait_for(lambda: len(bot.bot_texts(STAFF)) == 3)
    stats = bot.bot_texts(STAFF)[-1]
    assert "10" in stats and "permission_denied" in stats  # 10 runs; the foreign orders


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
    (run,) = await answered(bot, DEMO)
    assert run.status is RunStatus.COMPLETED
