"""Human handoff end to end (issue 14): the production bot long-polling the stand-in over
HTTP, a forum supergroup as the staff group.

Handoff by the planner's intent, by the "Talk to a person" button and by /human; relays of
text and photos both ways; a non-staff member and the bot's own messages never reach the
customer; /close and the agent answers again; a restart keeps relaying and re-sends what a
crash left uncopied; without a staff group the customer is told the truth.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_core.models import Language, utcnow
from bot.application import bot_of
from bot.handoff import Customer, record_handoff
from bot.texts import TEXTS
from standin import ShownMessage, StandIn
from stepwise.demo import DEMO_STAFF, Demo
from stepwise.settings import Settings
from storage.handoffs import Trigger
from tests.harness import DEMO, STAFF, BotHarness, start_bot, until

FORUM = -1005555555555
STRANGER = 779  # in the staff group, not a staff member
EN, ZH = Language.EN, Language.ZH


def staff_forum(standin: StandIn) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)


async def staffed(standin: StandIn, db: Path, **env: str) -> BotHarness:
    return await start_bot(
        standin,
        db,
        STEPWISE_STAFF_CHAT_ID=str(FORUM),
        STEPWISE_CONSOLE_URL="https://staff.example",
        **env,
    )


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[BotHarness]:
    staff_forum(standin)
    harness = await staffed(standin, tmp_path / "handoff.db")
    try:
        yield harness
    finally:
        await harness.stop()


def in_topic(standin: StandIn, thread: int) -> list[ShownMessage]:
    return [m for m in standin.chat_messages(FORUM) if m.message_thread_id == thread]


async def customer_topic(h: BotHarness) -> int:
    """The customer's topic, once the bot made it and posted the header in it."""
    topics = await until(lambda: h.standin.topics(FORUM), what="a topic")
    thread = int(topics[0]["message_thread_id"])
    await until(
        lambda: any("Handoff" in (m.text or "") for m in in_topic(h.standin, thread)),
        what="the header",
    )
    return thread


def said(message: ShownMessage) -> str | None:
    """A customer's relayed text without the "Name:" line staff read above it."""
    return (message.text or "").partition("\n")[2] or None


def texts(h: BotHarness, chat: int) -> list[str]:
    return [m.text or m.caption or f"<{m.kind}>" for m in h.standin.bot_messages(chat)]


async def test_handoff_by_intent_relays_both_ways_then_close(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "我要转人工", first_name="Ada", language_code="zh")
    await h.until_text(DEMO, TEXTS["handoff_opened"][ZH])
    thread = await customer_topic(h)
    (topic,) = h.standin.topics(FORUM)
    assert topic["name"] == f"Ada · {DEMO}"
    header = next(m for m in in_topic(h.standin, thread) if "Handoff" in (m.text or ""))
    assert "the customer asked for a person" in (header.text or "")  # never "intent"
    assert "我要转人工" in (header.text or "")
    assert any(d.startswith("sw:hc:") for d in header.callback_data)
    # The agent's own "someone will follow up" was replaced by the handoff's reply.
    assert texts(h, DEMO) == [TEXTS["handoff_opened"][ZH]]

    asked = h.standin.inject_message(DEMO, DEMO, "where is A1001, it is late")
    await until(
        # With the customer's name (issue 23 #8): a copy would read as the bot's own.
        lambda: any(
            m.text == "Ada:\nwhere is A1001, it is late" for m in in_topic(h.standin, thread)
        ),
        what="the customer's message in the topic",
    )
    h.standin.inject_message(FORUM, STAFF, "Checking it for you now", message_thread_id=thread)
    await h.until_text(DEMO, "Checking it for you now")
    # The agent stayed silent: no plan, no answer for the relayed question.
    assert texts(h, DEMO) == [TEXTS["handoff_opened"][ZH], "Checking it for you now"]
    assert h.query("SELECT count(*) FROM runs WHERE request_text = ?", asked["text"]) == [(0,)]

    h.standin.inject_message(FORUM, STAFF, "/close", message_thread_id=thread)
    await h.until_text(DEMO, TEXTS["handoff_closed"][ZH])
    counted = "SELECT trigger, closed_by, to_staff, to_customer FROM handoffs"
    await until(lambda: h.query(counted) == [("intent", STAFF, 1, 1)], what="closed, counted")
    assert h.query("SELECT first_staff_reply_at IS NOT NULL FROM handoffs") == [(1,)]

    notes = "SELECT message FROM events WHERE kind = 'notice' ORDER BY seq"
    await until(lambda: len(h.query(notes)) == 2, what="the handoff on the run's timeline")
    opened, closed = (row[0] for row in h.query(notes))
    assert opened.startswith("handed off to a person (intent, ")
    assert closed.endswith(f"closed by Sam ({STAFF})")

    h.standin.inject_message(STAFF, STAFF, "/stats")  # a staff member's private chat
    stats = (await h.until_text(STAFF, "Handoffs to a person")).text or ""
    assert f"{utcnow().date().isoformat()}: 1" in stats
    assert "median time to first staff reply: " in stats and "no staff reply yet" not in stats

    h.standin.inject_message(DEMO, DEMO, "where is A1001")
    await h.until_text(DEMO, "A1001")  # the agent answers again
    await until(
        lambda: h.query("SELECT count(*) FROM runs WHERE request_text = ?", "where is A1001")
    )
    assert not any(m.text == "where is A1001" for m in in_topic(h.standin, thread))


async def test_handoff_by_button_relays_photos_and_ignores_strangers(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "where is order Z9999", first_name="Ada")
    answer = await h.buttons_message(DEMO)
    assert answer.buttons[-1][0].text == TEXTS["talk_to_person"][EN]
    query_id = h.standin.press_button(
        DEMO, answer.message_id, answer.buttons[-1][0].callback_data or "", DEMO
    )
    await h.until_text(DEMO, TEXTS["handoff_opened"][EN])
    assert query_id
    thread = await customer_topic(h)
    header = next(m for m in in_topic(h.standin, thread) if "Handoff" in (m.text or ""))
    assert "the customer pressed Talk to a person" in (header.text or "")
    assert "Z9999" in (header.text or "")
    assert "https://staff.example/runs/" in str(header.entities) + (header.text or "")

    h.standin.inject_message(DEMO, DEMO, "the label", photo=True)
    await until(
        lambda: any(m.kind == "photo" for m in in_topic(h.standin, thread)), what="photo in topic"
    )
    h.standin.inject_message(FORUM, STRANGER, "I am not staff", message_thread_id=thread)
    h.standin.inject_message(FORUM, STAFF, "this one?", photo=True, message_thread_id=thread)
    await until(lambda: any(m.kind == "photo" for m in h.standin.bot_messages(DEMO)))
    photo = next(m for m in h.standin.bot_messages(DEMO) if m.kind == "photo")
    assert photo.caption == "this one?"
    assert not any("I am not staff" in t for t in texts(h, DEMO))
    counted = "SELECT to_staff, to_customer, trigger FROM handoffs"
    await until(lambda: h.query(counted) == [(1, 1, "button")], what="counted once each way")


async def test_a_customer_cannot_press_another_customers_person_button(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "where is order Z9999")
    answer = await h.buttons_message(DEMO)
    data = answer.buttons[-1][0].callback_data or ""
    query_id = h.standin.press_button(DEMO, answer.message_id, data, 20002, forge=True)
    (toast,) = await until(lambda: h.standin.callback_answers(query_id), what="the toast")
    assert toast.text == TEXTS["toast_not_yours"][EN]
    assert h.query("SELECT count(*) FROM handoffs") == [(0,)]


async def test_handoff_by_command_never_echoes_the_bot_or_service_messages(
    bot: BotHarness,
) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/human", first_name="Ada")
    await h.until_text(DEMO, TEXTS["handoff_opened"][EN])
    thread = await customer_topic(h)
    h.standin.inject_message(DEMO, DEMO, "/human")
    await h.until_text(DEMO, TEXTS["handoff_already"][EN])
    # The header and the topic's service message are the bot's own: never relayed.
    h.standin.inject_message(FORUM, STAFF, "hello from staff", message_thread_id=thread)
    await h.until_text(DEMO, "hello from staff")
    assert texts(h, DEMO) == [
        TEXTS["handoff_opened"][EN],
        TEXTS["handoff_already"][EN],
        "hello from staff",
    ]
    counted = "SELECT trigger, to_customer FROM handoffs"
    await until(lambda: h.query(counted) == [("command", 1)], what="the reply counted")
    # With a staff group, customers are offered /human in their language (without one,
    # test_telegram_real's test_6: /help only).
    offered = {lang: h.standin.commands(language_code=lang) for lang in ("", "zh")}
    assert [(c["command"], c["description"]) for c in offered[""]] == [
        ("help", TEXTS["command_help"][EN]),
        ("human", TEXTS["command_human"][EN]),
    ]
    assert [c["description"] for c in offered["zh"]][1] == TEXTS["command_human"][ZH]


async def test_restart_keeps_relaying_and_resends_what_a_crash_left(
    standin: StandIn, tmp_path: Path
) -> None:
    staff_forum(standin)
    db = tmp_path / "restart.db"
    first = await staffed(standin, db)
    standin.inject_message(DEMO, DEMO, "talk to a person please", first_name="Ada")
    await first.until_text(DEMO, TEXTS["handoff_opened"][EN])
    thread = await customer_topic(first)
    await first.stop()

    # A crash between recording a relay and copying it: the row is there, unmarked.
    lost = standin.inject_message(FORUM, STAFF, "sent before the crash", message_thread_id=thread)
    second = await staffed(standin, db)
    try:
        (hid,) = second.query("SELECT id FROM handoffs")[0]
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO handoff_relays (handoff_id, direction, from_chat_id, message_id,"
                " variant, to_chat_id, to_topic_id, text, received_at, copied_at)"
                " VALUES (?, 'to_customer', ?, ?, 0, ?, NULL, NULL,"
                " '2026-12-01T09:00:00.000000Z', NULL)",
                (hid, FORUM, lost["message_id"], DEMO),
            )
        await bot_of(second.app).handoffs.handoff_start()
        # Delivered once: the update polled after the restart finds the row marked.
        await second.until_text(DEMO, "sent before the crash")
        standin.inject_message(DEMO, DEMO, "still there?")
        await until(lambda: any(said(m) == "still there?" for m in in_topic(standin, thread)))
        standin.inject_message(FORUM, STAFF, "yes", message_thread_id=thread)
        await second.until_text(DEMO, "yes")
        assert [t for t in texts(second, DEMO) if t == "sent before the crash"] == [
            "sent before the crash"
        ]
        pending = "SELECT count(*) FROM handoff_relays WHERE copied_at IS NULL"
        await until(lambda: second.query(pending) == [(0,)], what="every relay marked")
    finally:
        await second.stop()


async def test_without_topic_rights_the_customer_is_told_the_truth(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=False)  # an admin, but not of topics
    h = await staffed(standin, tmp_path / "norights.db")
    try:
        standin.inject_message(DEMO, DEMO, "/human")
        await h.until_text(DEMO, TEXTS["handoff_unstaffed"][EN])
        assert h.query("SELECT closed_at IS NOT NULL, topic_id FROM handoffs") == [(1, None)]
        assert standin.chat_messages(FORUM) == []  # nothing posted into General either
        standin.inject_message(DEMO, DEMO, "where is A1001")
        await h.until_text(DEMO, "A1001")  # the agent still answers
    finally:
        await h.stop()


async def test_a_terminal_handoff_gets_its_topic_when_the_bot_starts(
    standin: StandIn, tmp_path: Path
) -> None:
    staff_forum(standin)
    h = await staffed(standin, tmp_path / "terminal.db")
    try:
        customer = Customer(DEMO, DEMO, "customer 10001", EN)
        now = utcnow()
        await record_handoff(
            h.runtime.store.handoffs, customer, Trigger.INTENT, None, now=now, handoff_id="ab12cd"
        )
        await bot_of(h.app).handoffs.handoff_start()
        thread = await customer_topic(h)
        assert h.query("SELECT topic_id FROM handoffs") == [(thread,)]
        standin.inject_message(DEMO, DEMO, "hello? I asked in the terminal")
        await until(
            lambda: any("in the terminal" in (m.text or "") for m in in_topic(standin, thread))
        )
    finally:
        await h.stop()


async def test_without_a_staff_group_the_customer_is_told_the_truth(
    standin: StandIn, tmp_path: Path
) -> None:
    h = await start_bot(standin, tmp_path / "alone.db")
    try:
        standin.inject_message(DEMO, DEMO, "I want a real person")
        await h.until_text(DEMO, TEXTS["handoff_unstaffed"][EN])
        assert not any("follow up with you here" in t for t in texts(h, DEMO))
        (row,) = h.query("SELECT trigger, closed_at IS NOT NULL, closed_by FROM handoffs")
        assert row == ("intent", 1, None)
        standin.inject_message(DEMO, DEMO, "where is order Z9999")
        finished = "SELECT answer FROM runs WHERE status = 'failed'"
        ((answer,),) = await until(lambda: h.query(finished), what="the failed run")
        shown = await h.until_text(DEMO, answer.splitlines()[-1])
        assert not shown.buttons  # no person to offer: no "Talk to a person"
    finally:
        await h.stop()


async def test_close_button_is_for_staff_and_reopen_hands_over_again(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/human", first_name="Ada")
    thread = await customer_topic(h)
    header = next(m for m in in_topic(h.standin, thread) if m.callback_data)
    close = next(d for d in header.callback_data if d.startswith("sw:hc:"))
    h.standin.set_member(FORUM, STRANGER, "member", first_name="Sly")
    refused = h.standin.press_button(FORUM, header.message_id, close, STRANGER)
    (toast,) = await until(lambda: h.standin.callback_answers(refused), what="a refusal")
    assert toast.text == TEXTS["toast_staff_only"][EN]
    assert h.query("SELECT closed_at IS NULL FROM handoffs") == [(1,)]

    pressed = h.standin.press_button(FORUM, header.message_id, close, STAFF)
    await h.until_text(DEMO, TEXTS["handoff_closed"][EN])
    (toast,) = await until(lambda: h.standin.callback_answers(pressed), what="the toast")
    assert toast.text == TEXTS["toast_closed"][EN]
    assert h.query("SELECT closed_by FROM handoffs") == [(STAFF,)]
    await until(lambda: h.standin.topics(FORUM)[0]["closed"], what="the topic closed")

    h.standin.inject_message(FORUM, STAFF, "/reopen", message_thread_id=thread)
    await h.until_text(DEMO, TEXTS["handoff_reopened"][EN])
    assert h.query("SELECT trigger, closed_at IS NULL FROM handoffs ORDER BY opened_at") == [
        ("command", 0),
        ("reopen", 1),
    ]
    assert len(h.standin.topics(FORUM)) == 1  # the customer's topic, reused
    assert h.standin.topics(FORUM)[0]["closed"] is False  # and reopened
    h.standin.inject_message(DEMO, DEMO, "thanks for coming back")
    await until(
        lambda: any(said(m) == "thanks for coming back" for m in in_topic(h.standin, thread))
    )


async def test_a_blocked_customer_is_noted_in_the_topic_and_not_retried(
    bot: BotHarness,
) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/human")
    thread = await customer_topic(h)
    h.standin.block_chat(DEMO, notify=False)
    h.standin.inject_message(FORUM, STAFF, "are you still there?", message_thread_id=thread)
    await until(
        lambda: any(
            "the customer blocked the bot" in (m.text or "") for m in in_topic(h.standin, thread)
        ),
        what="the note in the topic",
    )
    settled = "SELECT failure IS NOT NULL, gave_up_at IS NOT NULL, copied_at FROM handoff_relays"
    await until(lambda: h.query(settled) == [(1, 1, None)], what="the relay given up")
    assert await bot_of(h.app).handoff.resend_pending() == 0  # type: ignore[union-attr]
    assert h.query("SELECT to_customer FROM handoffs") == [(0,)]


async def test_edits_are_relayed_as_marked_new_messages(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/human")
    thread = await customer_topic(h)
    sent = h.standin.inject_message(DEMO, DEMO, "my adress is 1 Main St")
    await until(
        lambda: any(said(m) == "my adress is 1 Main St" for m in in_topic(h.standin, thread))
    )
    h.standin.inject_edited_message(DEMO, DEMO, sent["message_id"], "my address is 1 Main St")
    await until(
        lambda: any(
            (m.text or "").startswith("✏️ ")
            and (m.text or "").endswith(" edited: my address is 1 Main St")
            for m in in_topic(h.standin, thread)
        ),
        what="the customer's edit in the topic",
    )
    reply = h.standin.inject_message(FORUM, STAFF, "noted", message_thread_id=thread)
    await h.until_text(DEMO, "noted")
    h.standin.inject_edited_message(FORUM, STAFF, reply["message_id"], "noted, thanks")
    await h.until_text(DEMO, "✏️ (edited) noted, thanks")
    # The original copies stay as they were: an edit is a new, marked message.
    assert "noted" in texts(h, DEMO) and "my adress is 1 Main St" in [
        said(m) for m in in_topic(h.standin, thread)
    ]


async def test_a_deleted_topic_is_recreated(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/human", first_name="Ada")
    thread = await customer_topic(h)
    assert await h.app.bot.delete_forum_topic(FORUM, thread)
    h.standin.inject_message(DEMO, DEMO, "are you there?")
    await until(
        lambda: (
            len(h.standin.topics(FORUM)) == 1
            and h.standin.topics(FORUM)[0]["message_thread_id"] != thread
        ),
        what="a new topic",
    )
    new = int(h.standin.topics(FORUM)[0]["message_thread_id"])
    await until(lambda: any(m.text == "Ada:\nare you there?" for m in in_topic(h.standin, new)))
    assert any("Handoff" in (m.text or "") for m in in_topic(h.standin, new))
    assert h.query("SELECT topic_id FROM handoff_topics") == [(new,)]


async def test_staff_group_check_logs_one_line_and_customers_are_still_served(
    standin: StandIn, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    h = await staffed(standin, tmp_path / "check.db")  # the bot is no admin there
    try:
        with caplog.at_level("WARNING", logger="bot.handoff"):
            problem = await bot_of(h.app).handoff.check_staff_chat()  # type: ignore[union-attr]
        assert problem is not None and "not an admin" in problem
        assert [r.getMessage() for r in caplog.records if r.name == "bot.handoff"] == [problem]
        standin.set_bot_rights(FORUM, can_manage_topics=True)
        assert await bot_of(h.app).handoff.check_staff_chat() is None  # type: ignore[union-attr]
        standin.inject_message(DEMO, DEMO, "where is A1001")
        await h.until_text(DEMO, "A1001")
    finally:
        await h.stop()


async def test_the_demo_hands_off_into_its_staff_panel(tmp_path: Path) -> None:
    """`stepwise demo` (no token): the customer asks for a person, the demo's staff group
    gets the topic with a header linking to the run in the demo's console, and the demo
    staff member's reply reaches the customer."""
    settings = Settings.model_validate(
        {"STEPWISE_DB": str(tmp_path / "demo.db"), "STEPWISE_SHOP_LATENCY_MS": "0"}
    )
    demo = Demo(settings, chat_port=0, staff_port=0, poll_timeout_s=1)
    await demo.start()
    try:
        standin = demo.standin
        forum = DEMO_STAFF.chat_id
        standin.inject_message(DEMO, DEMO, "I want to talk to a real person", first_name="Ada")
        topics = await until(lambda: standin.topics(forum), what="the demo's topic")
        thread = int(topics[0]["message_thread_id"])
        header = await until(
            lambda: next(
                (m for m in standin.chat_messages(forum) if "Handoff" in (m.text or "")), None
            ),
            what="the header",
        )
        links = [e.get("url", "") for e in header.entities]
        assert any(url.startswith(demo.console_url.rstrip("/") + "/runs/") for url in links)
        standin.inject_message(forum, DEMO_STAFF.user_id, "Hi, Sam here", message_thread_id=thread)
        await until(lambda: any(m.text == "Hi, Sam here" for m in standin.bot_messages(DEMO)))
    finally:
        await demo.stop()


async def test_the_demo_sends_a_big_refund_to_its_staff_panel(tmp_path: Path) -> None:
    """`stepwise demo`: a refund above the demo's threshold (50) waits for the staff panel;
    the demo staff member's Approve refunds it once and the customer is told."""
    settings = Settings.model_validate(
        {"STEPWISE_DB": str(tmp_path / "demo.db"), "STEPWISE_SHOP_LATENCY_MS": "0"}
    )
    demo = Demo(settings, chat_port=0, staff_port=0, poll_timeout_s=1)
    await demo.start()
    try:
        standin, forum = demo.standin, DEMO_STAFF.chat_id
        assert demo.runtime is not None and demo.runtime.shop is not None
        standin.inject_message(DEMO, DEMO, "refund 59 for order A1002", first_name="Ada")
        await until(
            lambda: any(
                TEXTS["waiting_for_team"][EN] in (m.text or "") for m in standin.bot_messages(DEMO)
            ),
            what="the customer told to wait for the team",
        )
        prompt = await until(
            lambda: next((m for m in standin.chat_messages(forum) if m.buttons), None),
            what="Approve/Reject in the staff topic",
        )
        approve = next(d for d in prompt.callback_data if d.startswith("sw:c:"))
        standin.press_button(forum, prompt.message_id, approve, DEMO_STAFF.user_id)
        await until(
            lambda: any("refund number" in (m.text or "") for m in standin.bot_messages(DEMO)),
            what="the refund's answer",
        )
        assert await demo.runtime.shop.ledger_count(tool="request_refund") == 1
    finally:
        await demo.stop()
