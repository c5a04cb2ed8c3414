"""Issue 23 over HTTP: the production bot long-polling the stand-in; what the customer
and staff read is true to what happened."""

from __future__ import annotations

import html
import logging
from pathlib import Path

import pytest

from agent_core.models import Language, utcnow
from bot.handoff import header_text
from bot.texts import TEXTS
from standin import ShownMessage, StandIn
from storage.handoffs import Handoff, Trigger
from storage.store import open_store
from tests.fakes import make_run
from tests.harness import DEMO, STAFF, start_bot, until
from tests.test_console import client_for, sign_in

EN = Language.EN

# -- 12: no warning for a staff menu that has nowhere to go yet ------------------------------


async def test_12_no_warning_for_a_staff_member_who_never_wrote_to_the_bot(
    standin: StandIn, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="bot.application"):
        h = await start_bot(standin, tmp_path / "menu.db")  # STAFF has no chat with the bot
        await h.stop()
    assert [r.getMessage() for r in caplog.records if r.name == "bot.application"] == []


# -- 3: a staff pause is our team's, and its message is edited in place ------------------

FORUM = -1005555555555


async def test_3_a_staff_approved_refund_edits_the_waiting_message_in_place(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    h = await start_bot(
        standin,
        tmp_path / "staff.db",
        STEPWISE_STAFF_CHAT_ID=str(FORUM),
        STEPWISE_STAFF_APPROVAL_ABOVE="50",
    )
    try:
        h.standin.inject_message(DEMO, DEMO, "refund 59 for order A1002", first_name="Ada")
        waiting = await h.until_text(DEMO, TEXTS["waiting_for_team"][EN])
        assert "waiting for our team" in (waiting.text or "")
        assert "your confirmation" not in (waiting.text or "")
        prompt = await until(
            lambda: next((m for m in standin.chat_messages(FORUM) if m.buttons), None)
        )
        approve = next(d for d in prompt.callback_data if d.startswith("sw:c:"))
        h.standin.press_button(FORUM, prompt.message_id, approve, STAFF)
        await h.until_text(DEMO, "refund number")

        def step_line(m: ShownMessage) -> bool:
            return "Request a refund" in (m.text or "") and " — " in (m.text or "")

        edited = await until(
            lambda: [m for m in h.standin.bot_messages(DEMO) if step_line(m)] or None
        )
        # One message for the step, edited from waiting to done; no second one.
        assert [m.message_id for m in edited] == [waiting.message_id]
        assert edited[0].text is not None
        assert edited[0].text.startswith("✅") and "approved by our team and done" in edited[0].text
        (run_id,) = h.query("SELECT id FROM runs")[0]
    finally:
        await h.stop()
    store = await open_store(str(tmp_path / "staff.db"))
    try:
        async with client_for(store) as console:
            assert (await sign_in(console)).status_code == 303
            page = (await console.get(f"/runs/{run_id}")).text
    finally:
        await store.close()
    assert "the customer must confirm it first" not in page and "customer decided" not in page
    assert "a staff member must approve it first" in page and "staff decided" in page
    assert "by staff Sam" in page  # by name (issue 23 #8), the id beside it


# -- 2: what the customer saw is what was sent -------------------------------------------


async def test_2_the_console_shows_the_handoff_reply_that_was_sent(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    db = tmp_path / "handoff.db"
    h = await start_bot(standin, db, STEPWISE_STAFF_CHAT_ID=str(FORUM))
    try:
        h.standin.inject_message(DEMO, DEMO, "I want to talk to a person", first_name="Ada")
        await h.until_text(DEMO, TEXTS["handoff_opened"][EN])
        await until(lambda: h.query("SELECT 1 FROM events WHERE kind = 'answer_delivered'"))
        ((run_id, composed),) = h.query("SELECT id, answer FROM runs")
    finally:
        await h.stop()
    assert composed != TEXTS["handoff_opened"][EN]  # the run's own answer was replaced
    store = await open_store(str(db))
    try:
        async with client_for(store) as console:
            assert (await sign_in(console)).status_code == 303
            page = (await console.get(f"/runs/{run_id}")).text
    finally:
        await store.close()
    saw = html.unescape(page.split("What the customer saw", 1)[1].split("</div>", 1)[0])
    assert TEXTS["handoff_opened"][EN] in saw
    assert (composed or "") not in saw


# -- 6: asking back offers only orders that exist and can take the action ---------------


async def test_6_no_button_for_an_order_that_was_not_found(
    standin: StandIn, tmp_path: Path
) -> None:
    h = await start_bot(standin, tmp_path / "clarify.db")
    try:
        h.standin.inject_message(DEMO, DEMO, "where is Z9999")
        await h.until_text(DEMO, "I couldn't find order Z9999")
        h.standin.inject_message(DEMO, DEMO, "cancel my order")
        asked = await h.until_text(DEMO, "Which order should I cancel?")
        assert "Please send its number" in (asked.text or "")
        assert asked.buttons == ()
        assert not any("Z9999" in b.text for m in h.standin.bot_messages(DEMO) for row in m.buttons
                       for b in row)  # fmt: skip
    finally:
        await h.stop()


async def test_6_one_possible_order_is_planned_and_asks_for_the_confirm(
    standin: StandIn, tmp_path: Path
) -> None:
    h = await start_bot(standin, tmp_path / "clarify.db")
    try:
        h.standin.inject_message(DEMO, DEMO, "where is A1001")
        await h.until_text(DEMO, "Order A1001 is on its way")
        h.standin.inject_message(DEMO, DEMO, "cancel it")
        prompt = await h.buttons_message(DEMO)
        assert [b.text for b in prompt.buttons[0]] == ["Yes, cancel A1001", "No, keep it"]
        assert not any("Which order" in t for t in h.bot_texts(DEMO))
        assert h.query("SELECT status FROM shop_orders WHERE id = 'A1001'") == [("shipping",)]
    finally:
        await h.stop()


# -- 8: staff read names and links, never bare ids or internal words ---------------------


async def test_8_staff_read_names_and_the_run_link(standin: StandIn, tmp_path: Path) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    h = await start_bot(
        standin,
        tmp_path / "names.db",
        STEPWISE_STAFF_CHAT_ID=str(FORUM),
        STEPWISE_STAFF_APPROVAL_ABOVE="50",
        STEPWISE_CONSOLE_URL="https://staff.example",
    )
    try:
        h.standin.inject_message(DEMO, DEMO, "refund 59 for order A1002", first_name="Ada")
        prompt = await until(
            lambda: next((m for m in standin.chat_messages(FORUM) if m.buttons), None)
        )
        approve = next(d for d in prompt.callback_data if d.startswith("sw:c:"))
        h.standin.press_button(FORUM, prompt.message_id, approve, STAFF)
        decided = await until(
            lambda: next(
                (m for m in standin.chat_messages(FORUM) if "approved by" in (m.text or "")), None
            )
        )
        assert "approved by Sam" in (decided.text or "") and str(STAFF) not in (decided.text or "")
        await h.until_text(DEMO, "refund number")

        h.standin.inject_message(DEMO, DEMO, "/human", first_name="Ada")
        await h.until_text(DEMO, TEXTS["handoff_opened"][EN])
        header = await until(
            lambda: next(
                (m for m in standin.chat_messages(FORUM) if "Handoff" in (m.text or "")), None
            )
        )
        assert "the customer sent /human" in (header.text or "")
        assert "· command ·" not in (header.text or "")
        thread = header.message_thread_id
        h.standin.inject_message(DEMO, DEMO, "is anyone there?", first_name="Ada")
        await until(
            lambda: any(
                m.text == "Ada:\nis anyone there?"
                for m in standin.chat_messages(FORUM)
                if m.message_thread_id == thread
            ),
            what="the relayed message with the customer's name",
        )
        h.standin.inject_message(DEMO, DEMO, "the label", photo=True, first_name="Ada")
        photo = await until(
            lambda: next(
                (
                    m
                    for m in standin.chat_messages(FORUM)
                    if m.kind == "photo" and m.message_thread_id == thread
                ),
                None,
            ),
            what="the photo with the customer's name in its caption",
        )
        assert photo.caption == "Ada: the label"
        h.standin.inject_message(FORUM, STAFF, "/close", message_thread_id=thread)
        closed = await until(
            lambda: next(
                (m for m in standin.chat_messages(FORUM) if "Closed by" in (m.text or "")), None
            )
        )
        assert (closed.text or "").startswith("Closed by Sam.")
    finally:
        await h.stop()


async def test_8_a_run_header_links_the_console() -> None:
    run = make_run([("get_order_status", {"order_id": "A1001"}, None)])
    handoff = Handoff(
        id="h1",
        customer_chat_id=DEMO,
        customer_user_id=DEMO,
        customer_name="Ada",
        language="en",
        trigger=Trigger.INTENT,
        run_id=run.id,
        opened_at=utcnow(),
    )
    text = header_text(handoff, run, "https://staff.example")
    assert f'<a href="https://staff.example/runs/{run.id}">' in text
    assert "· intent ·" not in text and "the customer asked for a person" in text
