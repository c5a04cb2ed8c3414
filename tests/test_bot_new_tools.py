"""The new tools through the real bot over HTTP (the stand-in): a refund, a return and an
address change are confirmed, done once however often Confirm is pressed, and explained
when refused; a parcel is tracked.

The plans come from a small phrase planner in place of the runtime's rule planner: the
rule planner's words for these tools are issue 13's; what is tested here is everything
after the plan (pause, prompt, claim, ledger, answer).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_core.catalog.builtin import CATALOG, GET_ORDER_STATUS
from agent_core.models import StepTag
from agent_core.understanding.planner import PlanDraft, PlanRequest, RuleBasedPlanner, StepDraft
from standin import StandIn
from tests.harness import DEMO, OTHER, BotHarness, press, prompt_for, start_bot, until

COMMANDS = re.compile(
    r"(?P<tool>refund|return|address|track) (?P<order>[A-Z]\d{4})(?: (?P<rest>.+))?"
)
TOOLS = {
    "refund": "request_refund",
    "return": "request_return",
    "address": "change_address",
    "track": "track_parcel",
}


class CommandPlanner(RuleBasedPlanner):
    """`refund A1002 59`, `return A1002`, `address A1007 <text>`, `track A1005`: the order's
    status, then the tool; anything else as the rule planner plans it."""

    async def plan(self, request: PlanRequest) -> PlanDraft:
        found = COMMANDS.fullmatch(request.text.strip())
        if found is None:
            return super().draft(request)
        spec = CATALOG[TOOLS[found["tool"]]]
        args: dict[str, str] = {"order_id": found["order"]}
        if found["tool"] == "refund":
            args["amount"] = found["rest"] or ""
        if found["tool"] == "address":
            args["address"] = found["rest"] or ""
        language = super().draft(request).language
        status = StepDraft(
            goal=GET_ORDER_STATUS.goal_for(language, order_id=found["order"]),
            tool=GET_ORDER_STATUS.name,
            args={"order_id": found["order"]},
            tag=StepTag.ORDER_STATUS,
        )
        step = StepDraft(
            goal=spec.goal_for(language, **args), tool=spec.name, args=args, tag=StepTag.ACTION
        )
        return PlanDraft(language=language, steps=[status, step])


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[BotHarness]:
    running = await start_bot(standin, tmp_path / "bot.db", show_after_s=5.0)
    running.runtime.agent.planner = CommandPlanner()
    yield running
    await running.stop()


async def _confirm(bot: BotHarness, text: str, *, user: int = DEMO) -> str:
    bot.standin.inject_message(user, user, text)
    (run_id,) = await until(
        lambda: bot.query("SELECT id FROM runs WHERE request_text = ? AND status = 'paused'", text)
    )
    prompt = await until(lambda: prompt_for(bot.standin, user, run_id[0]))
    press(bot.standin, user, prompt, approve=True, user=user)
    press(bot.standin, user, prompt, approve=True, user=user)  # a double press
    await until(
        lambda: bot.query(
            "SELECT 1 FROM runs WHERE id = ? AND status NOT IN ('paused', 'running')", run_id[0]
        )
    )
    return str(run_id[0])


async def test_a_refund_is_confirmed_and_made_once(bot: BotHarness) -> None:
    bot.standin.inject_message(DEMO, DEMO, "refund A1002 59")
    prompt = await bot.until_text(DEMO, "Request a refund of 59.00 for order A1002?")
    assert bot.query("SELECT count(*) FROM shop_refunds") == [(0,)]
    (run_id,) = bot.query("SELECT id FROM runs")
    first = press(bot.standin, DEMO, prompt, approve=True, user=DEMO)
    second = press(bot.standin, DEMO, prompt, approve=True, user=DEMO)
    await bot.until_text(DEMO, "A refund of 59.00 for order A1002 has been requested")
    assert bot.query("SELECT id, amount_cents FROM shop_refunds") == [("F-A1002-1", 5900)]
    assert bot.query("SELECT idempotency_key FROM shop_ledger") == [(f"{run_id[0]}:s2",)]
    await until(lambda: all(bot.standin.callback_answers(q) for q in (first, second)))
    toasts = sorted((bot.standin.callback_answers(q)[0].text or "") for q in (first, second))
    assert toasts == ["Confirmed, working on it.", "This request was already handled."]

    # A second refund would be more than was paid: refused, explained, nothing made.
    await _confirm(bot, "refund A1002 1")
    await bot.until_text(DEMO, "A refund of 1.00 is more than order A1002 can get back")
    assert bot.query("SELECT count(*) FROM shop_refunds") == [(1,)]


async def test_a_return_and_an_address_change(bot: BotHarness) -> None:
    await _confirm(bot, "return A1002")
    await bot.until_text(
        DEMO, "A return for order A1002 has been requested (return number R-A1002-1)."
    )
    await _confirm(bot, "return A1006")
    await bot.until_text(DEMO, "Order A1006 is past its return window")
    await _confirm(bot, "address A1007 7 Harbour Road, Ningbo")
    await bot.until_text(DEMO, "Order A1007 will now be delivered to: 7 Harbour Road, Ningbo.")
    assert bot.query("SELECT address FROM shop_orders WHERE id = 'A1007'") == [
        ("7 Harbour Road, Ningbo",)
    ]
    assert bot.query("SELECT tool, count(*) FROM shop_ledger GROUP BY tool ORDER BY tool") == [
        ("change_address", 1),
        ("request_return", 1),
    ]


async def test_skipped_refused_and_not_yours_ask_nothing(bot: BotHarness) -> None:
    bot.standin.inject_message(DEMO, DEMO, "address A1001 7 Harbour Road, Ningbo")
    await bot.until_text(DEMO, "Order A1001 has already shipped, so its delivery address")
    bot.standin.inject_message(DEMO, DEMO, "refund A1002 59.001")
    await bot.until_text(DEMO, "the amount must be a number above 0 with at most two decimals")
    bot.standin.inject_message(OTHER, OTHER, "return A1002")
    await bot.until_text(OTHER, "I couldn't find order A1002 on this account.")
    assert not any(m.buttons for m in bot.standin.bot_messages(DEMO))
    assert not any(m.buttons for m in bot.standin.bot_messages(OTHER))
    assert bot.query("SELECT count(*) FROM shop_ledger") == [(0,)]


async def test_track_a_parcel(bot: BotHarness) -> None:
    bot.standin.inject_message(DEMO, DEMO, "track A1005")
    message = await bot.until_text(DEMO, "Latest on the parcel of order A1005")
    assert "• 2026-11-30 07:55, Suzhou: Arrived at the local delivery station" in (
        message.text or ""
    )
    assert "Order A1005 is on its way" in (message.text or "")  # the status step's line
