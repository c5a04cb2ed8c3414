"""Every example at the top of issue 13, through the CLI (real processes) and the bot
(the production application against the Bot API stand-in, over HTTP)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from agent_core.models import Language
from bot.texts import say
from standin import StandIn
from tests.harness import DEMO, OTHER, query, start_bot
from tests.harness import BotHarness as Bot
from tests.test_cli import ask_json, env_for, stepwise


def tools_of(out: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(s["tool"], s["args"].get("order_id")) for s in out["steps"]]


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_acts_only_on_the_order_of_the_cancel_clause(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    code, out = ask_json(db, "where is A1003? also cancel A1001")
    assert code == 0 and out["status"] == "paused"
    assert tools_of(out) == [
        ("get_order_status", "A1003"),
        ("get_order_status", "A1001"),
        ("cancel_order", "A1001"),
    ]
    assert stepwise(db, "confirm", out["run_id"], "--user", "10001").returncode == 0
    statuses = dict(query(db, "SELECT id, status FROM shop_orders"))
    assert statuses["A1001"] == "cancelled" and statuses["A1003"] == "pending"


@pytest.mark.parametrize(
    "text",
    [
        "please don't cancel A1001, I only want to know where it is",
        "不要取消 A1005，只想查一下物流",
        "I was told cancellation is free. where is A1001",
    ],
)
def test_cli_never_cancels_a_negated_or_policy_cancel(tmp_path: Path, text: str) -> None:
    code, out = ask_json(tmp_path / "s.db", text)
    assert code == 0 and out["status"] == "completed"
    assert "cancel_order" not in [tool for tool, _ in tools_of(out)]


@pytest.mark.parametrize(
    ("text", "orders"),
    [
        ("A1001 和 A1005 到哪了", ["A1001", "A1005"]),
        ("can you check orders A1002 and A1005", ["A1002", "A1005"]),
    ],
)
def test_cli_reads_every_named_order(tmp_path: Path, text: str, orders: list[str]) -> None:
    _, out = ask_json(tmp_path / "s.db", text)
    assert tools_of(out) == [("get_order_status", o) for o in orders]
    assert all(s["status"] == "done" for s in out["steps"])


def test_cli_never_swaps_in_an_earlier_order(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    ask_json(db, "where is A1005")
    _, out = ask_json(db, "where is order #A-1001")
    assert tools_of(out) == [("get_order_status", "A1001")]
    ask_json(db, "where is Z9999")
    _, out = ask_json(db, "my package never arrived, can i get my money back")
    assert tools_of(out) == [("search_policy", None)]
    assert out["status"] == "completed" and "Z9999" not in out["answer"]


def test_cli_names_what_it_cannot_do_and_flags_the_run(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    code, out = ask_json(
        db, "Can I pay for order A1005 with bitcoin and change the delivery address to Berlin?"
    )
    assert code == 0
    assert out["unsupported"] == ["changing how an order is paid"]
    assert "I can't help with changing how an order is paid here." in out["answer"]
    assert "talk to a person" in out["answer"]
    assert tools_of(out) == [("get_order_status", "A1005"), ("change_address", "A1005")]
    listed = stepwise(db, "runs", "--unsupported", "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [out["run_id"]]
    assert json.loads(listed.stdout)[0]["unsupported"] is True
    plain = stepwise(db, "runs").stdout
    assert "completed*" in plain  # never shown as a clean success
    cases = [json.loads(line) for line in stepwise(db, "export", "--cases").stdout.splitlines()]
    assert cases[0]["text"].startswith("Can I pay") and cases[0]["expect"]["kind"] == "unsupported"


def test_cli_records_a_request_for_a_person(tmp_path: Path) -> None:
    code, out = ask_json(tmp_path / "s.db", "I want to talk to a real person")
    assert code == 0 and out["status"] == "completed" and out["steps"] == []
    assert out["handoff"] == {"reason": "I want to talk to a real person"}
    assert "Someone from our team will follow up" in out["answer"]


def test_cli_asks_back_when_the_target_is_unclear(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    code, out = ask_json(db, "I ordered A1001 and A1005, cancel it")
    assert code == 0 and out["status"] == "needs_clarification" and out["steps"] == []
    assert out["clarify"] == {
        "question": "Which order should I cancel?",
        "options": [
            {"label": "A1001", "text": "cancel order A1001"},
            {"label": "A1005", "text": "cancel order A1005"},
        ],
    }
    assert out["unsupported"] == [] and out["handoff"] is None
    shown = json.loads(stepwise(db, "show", out["run_id"], "--json").stdout)
    assert "nonce" not in shown["interpretation"]["clarify"]
    assert query(db, "SELECT count(*) FROM shop_cancellations") == [(0,)]


def test_terminal_chat_offers_the_options_as_a_numbered_choice(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "stepwise", "chat"],
        env=env_for(db),
        encoding="utf-8",
        timeout=30,
    )
    chat.expect_exact("you> ")
    chat.sendline("I ordered A1001 and A1005, cancel it")
    chat.expect_exact("bot> Which order should I cancel?")
    chat.expect_exact("1. A1001")
    chat.expect_exact("2. A1005")
    chat.expect_exact("Choose 1-2")
    chat.sendline("2")
    chat.expect_exact("⏸ Cancel order A1005 — waiting for your confirmation")
    chat.expect_exact("Confirm? [y/N] ")
    chat.sendline("y")
    chat.expect_exact("Order A1005 has been cancelled.")
    chat.expect_exact("you> ")
    chat.sendeof()
    chat.expect(pexpect.EOF)
    chat.close()
    assert dict(query(db, "SELECT id, status FROM shop_orders"))["A1001"] == "shipping"


# -- the bot ---------------------------------------------------------------------------------


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[Bot]:
    running = await start_bot(standin, tmp_path / "bot.db")
    yield running
    await running.stop()


async def test_bot_cancels_only_the_order_of_the_cancel_clause(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "where is A1003? also cancel A1001")
    paused = await bot.buttons_message(DEMO)
    assert "Cancel order A1001" in (paused.text or "")
    bot.standin.press_button(
        DEMO, paused.message_id, paused.buttons[0][0].callback_data or "", DEMO
    )
    await bot.until_text(DEMO, "Order A1001 has been cancelled.")
    statuses = dict(bot.query("SELECT id, status FROM shop_orders"))
    assert statuses["A1001"] == "cancelled" and statuses["A1003"] == "pending"


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("please don't cancel A1001, I only want to know where it is", "Order A1001 is on its way"),
        ("不要取消 A1005，只想查一下物流", "订单 A1005：运输中"),
        ("A1001 和 A1005 到哪了", "订单 A1005：运输中"),
        # No staff group in this bot: the handoff is recorded, with no promise of a reply.
        ("I want to talk to a real person", say("handoff_unstaffed", Language.EN)),
        (
            "Can I pay for order A1005 with bitcoin and change the delivery address to Berlin?",
            "I can't help with changing how an order is paid here.",
        ),
    ],
)
async def test_bot_answers_issue_13_examples(bot: Bot, text: str, answer: str) -> None:
    bot.standin.inject_message(DEMO, DEMO, text)
    await bot.until_text(DEMO, answer)
    assert not any(m.buttons for m in bot.standin.bot_messages(DEMO))
    assert bot.query("SELECT count(*) FROM shop_cancellations") == [(0,)]


async def test_bot_asks_back_with_option_buttons_only_the_asker_can_press(bot: Bot) -> None:
    bot.standin.inject_message(DEMO, DEMO, "I ordered A1001 and A1005, cancel it")
    question = await bot.buttons_message(DEMO)
    assert question.text == "Which order should I cancel?"
    assert [[b.text for b in row] for row in question.buttons] == [["A1001"], ["A1005"]]
    assert bot.query("SELECT status FROM runs") == [("needs_clarification",)]
    data = question.buttons[1][0].callback_data or ""

    stranger = bot.standin.press_button(DEMO, question.message_id, data, OTHER)
    await bot.standin.wait_for(lambda: bool(bot.standin.callback_answers(stranger)))
    assert [a.text for a in bot.standin.callback_answers(stranger)] == [
        "This button isn't for you."
    ]

    forged = bot.standin.press_button(DEMO, question.message_id, data[:-1] + "3", DEMO, forge=True)
    await bot.standin.wait_for(lambda: bool(bot.standin.callback_answers(forged)))
    assert [a.text for a in bot.standin.callback_answers(forged)] == [
        "This button is no longer valid."
    ]

    first = bot.standin.press_button(DEMO, question.message_id, data, DEMO)
    confirm = await bot.until_text(DEMO, "Cancel order A1005 — waiting for your confirmation")
    assert [a.text for a in bot.standin.callback_answers(first)] == ["Got it, working on it."]
    again = bot.standin.press_button(DEMO, question.message_id, data, DEMO, forge=True)
    await bot.standin.wait_for(lambda: bool(bot.standin.callback_answers(again)))
    assert [a.text for a in bot.standin.callback_answers(again)] == [
        "This request was already handled."
    ]
    asked = next(m for m in bot.standin.bot_messages(DEMO) if m.message_id == question.message_id)
    assert asked.text == "Which order should I cancel?\n→ A1005" and not asked.buttons

    bot.standin.press_button(
        DEMO, confirm.message_id, confirm.buttons[0][0].callback_data or "", DEMO
    )
    await bot.until_text(DEMO, "Order A1005 has been cancelled.")
    statuses = dict(bot.query("SELECT id, status FROM shop_orders"))
    assert statuses["A1005"] == "cancelled" and statuses["A1001"] == "shipping"
    assert bot.query("SELECT count(*) FROM shop_cancellations") == [(1,)]
