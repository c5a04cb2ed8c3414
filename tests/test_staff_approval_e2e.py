"""Staff approval end to end (issue 14 item 6) over HTTP with the stand-in: a refund above
STEPWISE_STAFF_APPROVAL_ABOVE waits for our team; the Approve/Reject buttons are posted in
the customer's topic of the staff group; the customer (even with forged button data) and
group members who are not staff cannot decide; two staff members pressing at once give
one refund; a reject tells the customer nothing was changed."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_core.models import Language
from bot.application import bot_of
from bot.texts import TEXTS
from standin import ShownMessage, StandIn
from tests.harness import DEMO, STAFF, BotHarness, start_bot, until

FORUM = -1005555555555
OTHER_STAFF = 901
STRANGER = 779
EN = Language.EN


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[BotHarness]:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    standin.set_member(FORUM, OTHER_STAFF, "member", first_name="Lee")
    standin.set_member(FORUM, STRANGER, "member", first_name="Sly")
    harness = await start_bot(
        standin,
        tmp_path / "approval.db",
        STEPWISE_STAFF_CHAT_ID=str(FORUM),
        STEPWISE_STAFF_IDS=f"{STAFF},{OTHER_STAFF}",
        STEPWISE_STAFF_APPROVAL_ABOVE="50",
    )
    try:
        yield harness
    finally:
        await harness.stop()


async def staff_prompt(h: BotHarness) -> ShownMessage:
    def found() -> ShownMessage | None:
        return next(
            (m for m in h.standin.chat_messages(FORUM) if "Approval needed" in (m.text or "")),
            None,
        )

    shown: ShownMessage = await until(found, what="the staff prompt")
    # The bot binds the pause to the message it sent (`bind_prompt`) just after sending:
    # a press or an expiry sweep before that is judged against no prompt. A person never
    # presses within that instant; a test must wait for it.
    await until(
        lambda: (
            h.query(
                "SELECT count(*) FROM runs WHERE prompt_chat_id = ? AND prompt_message_id = ?",
                FORUM,
                shown.message_id,
            )
            == [(1,)]
        ),
        what="the staff prompt bound to its run",
    )
    return shown


async def refunds(h: BotHarness) -> int:
    assert h.runtime.shop is not None
    return await h.runtime.shop.ledger_count(tool="request_refund")


async def test_a_big_refund_waits_for_staff_and_one_approval_refunds_once(
    bot: BotHarness,
) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "refund 59 for order A1002", first_name="Ada")
    waiting = await h.until_text(DEMO, TEXTS["waiting_for_team"][EN])
    assert not waiting.buttons  # nothing for the customer to press
    prompt = await staff_prompt(h)
    assert "Ada" in (prompt.text or "") and "59.00" in (prompt.text or "")
    approve = next(d for d in prompt.callback_data if d.startswith("sw:c:"))

    # The customer replays the staff button's data in their own chat: not theirs.
    forged = h.standin.press_button(DEMO, waiting.message_id, approve, DEMO, forge=True)
    (toast,) = await until(lambda: h.standin.callback_answers(forged), what="refusal")
    assert toast.text == TEXTS["toast_not_yours"][EN]
    # A group member who is not staff.
    stranger = h.standin.press_button(FORUM, prompt.message_id, approve, STRANGER)
    (toast,) = await until(lambda: h.standin.callback_answers(stranger), what="refusal")
    assert toast.text == TEXTS["toast_staff_only"][EN]
    assert await refunds(h) == 0

    # Two staff members press at once: one decision, one refund.
    first = h.standin.press_button(FORUM, prompt.message_id, approve, STAFF)
    second = h.standin.press_button(FORUM, prompt.message_id, approve, OTHER_STAFF)
    await h.until_text(DEMO, TEXTS["team_approved"][EN])
    await h.until_text(DEMO, "refund number")
    answers = [
        (await until(lambda q=q: h.standin.callback_answers(q)))[0].text for q in (first, second)
    ]
    assert sorted(answers) == sorted([TEXTS["toast_confirmed"][EN], TEXTS["toast_handled"][EN]])
    assert await refunds(h) == 1
    decided = "SELECT message FROM events WHERE kind = 'decision_claimed'"
    ((message,),) = h.query(decided)
    assert message in (f"confirmed by staff {STAFF}", f"confirmed by staff {OTHER_STAFF}")


async def test_a_staff_reject_changes_nothing_and_the_customer_is_told(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "refund 59 for order A1002")
    prompt = await staff_prompt(h)
    reject = next(d for d in prompt.callback_data if d.startswith("sw:x:"))
    asked = h.standin.press_button(FORUM, prompt.message_id, reject, STAFF)
    (toast,) = await until(lambda: h.standin.callback_answers(asked), what="the toast")
    assert toast.text == TEXTS["toast_pick_reason"][EN]
    assert h.query("SELECT status FROM runs") == [("paused",)]  # nothing decided yet

    def with_reasons() -> ShownMessage | None:
        shown = next(m for m in h.standin.chat_messages(FORUM) if m.message_id == prompt.message_id)
        return shown if any(d.startswith("sw:r:") for d in shown.callback_data) else None

    reasons = await until(with_reasons, what="the reason buttons")
    documents = reasons.button("Needs documents").callback_data or ""
    before = len(h.standin.bot_messages(DEMO))
    h.standin.press_button(FORUM, prompt.message_id, documents, STAFF)
    told = await h.until_text(DEMO, TEXTS["reject_reason_d"][EN])
    assert "did not approve" in (told.text or "")  # the answer itself carries the reason
    await until(lambda: h.query("SELECT status FROM runs") == [("declined",)], what="declined")
    await until(lambda: h.query("SELECT 1 FROM events WHERE kind = 'answer_delivered'"))
    # One new message for the customer: the waiting message was edited, not followed up.
    new = h.standin.bot_messages(DEMO)[before:]
    assert [m.message_id for m in new] == [told.message_id]
    said = [m for m in h.standin.bot_messages(DEMO) if "Our team did not approve" in (m.text or "")]
    assert said == [told]
    assert await refunds(h) == 0
    notes = "SELECT message FROM events WHERE kind = 'notice'"
    await until(lambda: (f"rejected by staff {STAFF}: Needs documents",) in h.query(notes))


async def test_staff_read_what_the_approved_refund_came_to(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "refund 59 for order A1002", first_name="Ada")
    prompt = await staff_prompt(h)
    assert "Nothing refunded on A1002 yet (paid 59.00)" in (prompt.text or "")
    approve = next(d for d in prompt.callback_data if d.startswith("sw:c:"))
    h.standin.press_button(FORUM, prompt.message_id, approve, STAFF)
    done = await until(
        lambda: (m := _shown(h, prompt.message_id)) and "approved by Sam," in (m.text or "") and m,
        what="the staff prompt edited to the outcome",
    )
    assert (done.text or "").startswith("✅ approved by Sam, refunded 59.00")
    assert str(STAFF) not in (done.text or "") and not done.buttons


async def test_staff_read_that_the_shop_refused_the_approved_refund(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "refund 30 for order A1002", first_name="Ada")
    confirm = await h.buttons_message(DEMO)
    h.standin.press_button(DEMO, confirm.message_id, confirm.callback_data[0], DEMO)
    await h.until_text(DEMO, "refund number")
    await until(lambda: h.query("SELECT status FROM runs") == [("completed",)], what="done")

    h.standin.inject_message(DEMO, DEMO, "refund 59 for order A1002", first_name="Ada")
    prompt = await staff_prompt(h)
    assert "Already refunded on A1002: 30.00 of 59.00 paid, 29.00 left." in html.unescape(
        re.sub("<[^>]+>", "", prompt.text or "")
    )
    approve = next(d for d in prompt.callback_data if d.startswith("sw:c:"))
    h.standin.press_button(FORUM, prompt.message_id, approve, STAFF)
    refused = await until(
        lambda: (m := _shown(h, prompt.message_id)) and "refused" in (m.text or "") and m,
        what="the staff prompt edited to the refusal",
    )
    assert (refused.text or "").startswith(
        "⚠️ approved by Sam, the shop refused: only 29.00 left to refund"
    )
    assert "✅" not in (refused.text or "")
    assert await refunds(h) == 1  # the 30 only


def _shown(h: BotHarness, message_id: int) -> ShownMessage | None:
    return next((m for m in h.standin.chat_messages(FORUM) if m.message_id == message_id), None)


async def test_a_small_refund_stays_the_customers_to_confirm(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "refund 20 for order A1002")
    prompt = await h.buttons_message(DEMO)
    assert any(d.startswith("sw:c:") for d in prompt.callback_data)
    assert not any("Approval needed" in (m.text or "") for m in h.standin.chat_messages(FORUM))


async def test_staff_buttons_work_after_a_restart_and_expire_safely(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    db = tmp_path / "restart.db"
    env = {
        "STEPWISE_STAFF_CHAT_ID": str(FORUM),
        "STEPWISE_STAFF_APPROVAL_ABOVE": "50",
    }
    first = await start_bot(standin, db, **env)
    standin.inject_message(DEMO, DEMO, "refund 59 for order A1002")
    prompt = await staff_prompt(first)
    await first.stop()

    # After a restart whose approvals expire at once: pressing does nothing but say so.
    expiring = await start_bot(standin, db, STEPWISE_APPROVAL_TTL="0", **env)
    try:
        approve = next(d for d in prompt.callback_data if d.startswith("sw:c:"))
        pressed = standin.press_button(FORUM, prompt.message_id, approve, STAFF)
        (toast,) = await until(lambda: standin.callback_answers(pressed), what="the toast")
        assert toast.text == TEXTS["toast_expired"][EN]
        await until(lambda: expiring.query("SELECT status FROM runs") == [("expired",)])
        await expiring.until_text(DEMO, "expired")
        assert await refunds(expiring) == 0
    finally:
        await expiring.stop()


async def test_a_staff_approval_survives_a_restart(standin: StandIn, tmp_path: Path) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    db = tmp_path / "restart.db"
    env = {"STEPWISE_STAFF_CHAT_ID": str(FORUM), "STEPWISE_STAFF_APPROVAL_ABOVE": "50"}
    first = await start_bot(standin, db, **env)
    standin.inject_message(DEMO, DEMO, "refund 59 for order A1002")
    prompt = await staff_prompt(first)
    await first.stop()
    second = await start_bot(standin, db, **env)
    try:
        approve = next(d for d in prompt.callback_data if d.startswith("sw:c:"))
        standin.press_button(FORUM, prompt.message_id, approve, STAFF)
        await second.until_text(DEMO, "refund number")
        assert await refunds(second) == 1
    finally:
        await second.stop()


async def test_an_approval_nobody_answers_expires_and_both_sides_are_told(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    h = await start_bot(
        standin,
        tmp_path / "expiry.db",
        STEPWISE_STAFF_CHAT_ID=str(FORUM),
        STEPWISE_STAFF_APPROVAL_ABOVE="50",
        STEPWISE_APPROVAL_TTL="0",  # every approval is past its time at once
    )
    try:
        standin.inject_message(DEMO, DEMO, "refund 59 for order A1002")
        prompt = await staff_prompt(h)
        assert await bot_of(h.app).handoffs.sweep_staff_expiries() == 1
        assert await bot_of(h.app).handoffs.sweep_staff_expiries() == 0  # once
        await until(lambda: h.query("SELECT status FROM runs") == [("expired",)])
        await h.until_text(DEMO, "expired")

        def noted() -> bool:
            shown = next(
                m for m in standin.chat_messages(FORUM) if m.message_id == prompt.message_id
            )
            return "nobody decided in time" in (shown.text or "") and not shown.buttons

        await until(noted, what="the topic's prompt closed")
        assert await refunds(h) == 0
    finally:
        await h.stop()


async def test_four_eyes_needs_two_distinct_staff_members(standin: StandIn, tmp_path: Path) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    standin.set_member(FORUM, OTHER_STAFF, "member", first_name="Lee")
    h = await start_bot(
        standin,
        tmp_path / "four.db",
        STEPWISE_STAFF_CHAT_ID=str(FORUM),
        STEPWISE_STAFF_IDS=f"{STAFF},{OTHER_STAFF}",
        STEPWISE_STAFF_APPROVAL_ABOVE="10",
        STEPWISE_STAFF_FOUR_EYES_ABOVE="50",
    )
    try:
        standin.inject_message(DEMO, DEMO, "refund 59 for order A1002")
        prompt = await staff_prompt(h)
        approve = next(d for d in prompt.callback_data if d.startswith("sw:c:"))

        first = standin.press_button(FORUM, prompt.message_id, approve, STAFF)
        (toast,) = await until(lambda: standin.callback_answers(first), what="first toast")
        assert "second staff member" in (toast.text or "")
        again = standin.press_button(FORUM, prompt.message_id, approve, STAFF)
        (toast,) = await until(lambda: standin.callback_answers(again), what="repeat toast")
        assert "approved already" in (toast.text or "")
        assert h.query("SELECT status FROM runs") == [("paused",)]
        assert await refunds(h) == 0

        second = standin.press_button(FORUM, prompt.message_id, approve, OTHER_STAFF)
        await h.until_text(DEMO, "refund number")
        (toast,) = await until(lambda: standin.callback_answers(second), what="second toast")
        assert toast.text == TEXTS["toast_confirmed"][EN]
        assert await refunds(h) == 1
        rows = h.query("SELECT staff_id FROM staff_approvals ORDER BY at")
        assert [r[0] for r in rows] == [STAFF, OTHER_STAFF]
        decided = h.query("SELECT message FROM events WHERE kind = 'decision_claimed'")
        assert decided == [(f"confirmed by staff {OTHER_STAFF}",)]
    finally:
        await h.stop()
