"""Staff buttons are bound to their message (issue 20, item 4), and every expired staff
approval is closed (item 6), over HTTP with the stand-in.

Two customers wait for our team at once, so the staff group shows two approval prompts, X
(DEMO's refund) and Y (OTHER's). Every staff press is checked against the message it was
pressed on before anything is shown or recorded: X's data pressed on Y's prompt replaces
no buttons, overwrites no text and counts no approval, and the toast says the button is
not valid; Y stays decidable. A staff member who is the run's customer decides nothing
(and is not one of the four eyes).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path

from agent_core.execution.executor import Executor
from agent_core.models import Language, utcnow
from bot.application import bot_of
from bot.texts import TEXTS
from standin import ShownMessage, StandIn
from tests.fakes import make_run
from tests.harness import DEMO, OTHER, STAFF, BotHarness, prompt_for, start_bot, until

FORUM = -1005555555555
OTHER_STAFF = 901
EN = Language.EN
REFUND = ("request_refund", {"order_id": "A1002", "amount": "59.00"}, "refund")


def _forum(standin: StandIn, *members: int) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    for member in members:
        standin.set_member(FORUM, member, "member", first_name=f"M{member}")


async def _start(
    standin: StandIn, tmp_path: Path, staff: tuple[int, ...], **env: str
) -> BotHarness:
    return await start_bot(
        standin,
        tmp_path / "binding.db",
        STEPWISE_STAFF_CHAT_ID=str(FORUM),
        STEPWISE_STAFF_IDS=",".join(str(s) for s in staff),
        **env,
    )


async def _waiting(h: BotHarness, customer: int, text: str) -> tuple[str, ShownMessage]:
    """`customer` asks `text` and waits for our team: their run id and its staff prompt."""
    h.standin.inject_message(customer, customer, text)
    await h.until_text(customer, TEXTS["waiting_for_team"][EN])
    ((run_id,),) = await until(
        lambda: h.query("SELECT id FROM runs WHERE user_id = ? AND status = 'paused'", customer),
        what=f"the paused run of {customer}",
    )
    prompt = await until(lambda: prompt_for(h.standin, FORUM, run_id), what="the staff prompt")
    return run_id, prompt


def _data(prompt: ShownMessage, prefix: str) -> str:
    return next(d for d in prompt.callback_data if d.startswith(prefix))


def _shown(h: BotHarness, message_id: int) -> ShownMessage:
    return next(m for m in h.standin.chat_messages(FORUM) if m.message_id == message_id)


async def _toast(h: BotHarness, query_id: str) -> str:
    (answer,) = await until(lambda: h.standin.callback_answers(query_id), what="the toast")
    return answer.text or ""


async def refunds(h: BotHarness) -> int:
    assert h.runtime.shop is not None
    return await h.runtime.shop.ledger_count(tool="request_refund")


def _status(h: BotHarness, run_id: str) -> str:
    ((status,),) = h.query("SELECT status FROM runs WHERE id = ?", run_id)
    return str(status)


async def test_reject_data_of_one_run_on_anothers_prompt_changes_nothing(
    standin: StandIn, tmp_path: Path
) -> None:
    _forum(standin, OTHER_STAFF)
    h = await _start(standin, tmp_path, (STAFF, OTHER_STAFF), STEPWISE_STAFF_APPROVAL_ABOVE="50")
    try:
        x, px = await _waiting(h, DEMO, "refund 59 for order A1002")
        y, py = await _waiting(h, OTHER, "refund 100 for order B2001")
        before = _shown(h, py.message_id)

        # X's Reject replayed onto Y's prompt: stale, and Y's prompt keeps its buttons.
        replay = standin.press_button(FORUM, py.message_id, _data(px, "sw:x:"), STAFF, forge=True)
        assert await _toast(h, replay) == TEXTS["toast_invalid"][EN]
        # X's Reject reason replayed onto Y's prompt: nothing decided for X either.
        reason = standin.press_button(
            FORUM,
            py.message_id,
            f"sw:r:{x}:{_data(px, 'sw:x:').rsplit(':', 1)[1]}:d",
            STAFF,
            forge=True,
        )
        assert await _toast(h, reason) == TEXTS["toast_invalid"][EN]
        assert (_status(h, x), _status(h, y)) == ("paused", "paused")

        # Y is still decided on its own prompt (its own button, as shown): reject with a reason.
        asked = standin.press_button(FORUM, py.message_id, _data(py, "sw:x:"), OTHER_STAFF)
        assert await _toast(h, asked) == TEXTS["toast_pick_reason"][EN]
        reasons = await until(
            lambda: (
                (m := _shown(h, py.message_id))
                and any(d.startswith(f"sw:r:{y}:") for d in m.callback_data)
                and m
            ),
            what="Y's reason buttons",
        )
        assert all(f":{y}:" in d for d in reasons.callback_data)  # Y's, never X's
        assert reasons.text == before.text
        documents = reasons.button("Needs documents").callback_data or ""
        standin.press_button(FORUM, py.message_id, documents, OTHER_STAFF)
        await h.until_text(OTHER, TEXTS["reject_reason_d"][EN])
        await until(lambda: _status(h, y) == "declined", what="Y declined")

        # X was never touched: still waiting, its prompt as it was shown.
        assert _status(h, x) == "paused"
        assert _shown(h, px.message_id).callback_data == px.callback_data
        assert not any(
            x in str(call.params) for call in standin.calls(chat_id=FORUM) if "edit" in call.method
        )
    finally:
        await h.stop()


async def test_four_eyes_a_replayed_approve_on_anothers_prompt_counts_nothing(
    standin: StandIn, tmp_path: Path
) -> None:
    _forum(standin, OTHER_STAFF)
    h = await _start(
        standin,
        tmp_path,
        (STAFF, OTHER_STAFF),
        STEPWISE_STAFF_APPROVAL_ABOVE="10",
        STEPWISE_STAFF_FOUR_EYES_ABOVE="50",
    )
    try:
        x, px = await _waiting(h, DEMO, "refund 59 for order A1002")
        y, py = await _waiting(h, OTHER, "refund 100 for order B2001")
        shown_y = _shown(h, py.message_id)

        replay = standin.press_button(FORUM, py.message_id, _data(px, "sw:c:"), STAFF, forge=True)
        assert await _toast(h, replay) == TEXTS["toast_invalid"][EN]
        assert h.query("SELECT run_id, staff_id FROM staff_approvals") == []
        after = _shown(h, py.message_id)
        assert (after.text, after.edit_count) == (shown_y.text, shown_y.edit_count)  # no goal of X

        # X's first approval is still to come: STAFF's real press on X's prompt is it.
        first = standin.press_button(FORUM, px.message_id, _data(px, "sw:c:"), STAFF)
        assert "second staff member" in await _toast(h, first)
        assert h.query("SELECT run_id, staff_id FROM staff_approvals") == [(x, STAFF)]
        second = standin.press_button(FORUM, px.message_id, _data(px, "sw:c:"), OTHER_STAFF)
        assert await _toast(h, second) == TEXTS["toast_confirmed"][EN]
        await h.until_text(DEMO, "refund number")
        # Y was never touched.
        assert _status(h, y) == "paused"
        assert _shown(h, py.message_id).callback_data == py.callback_data
    finally:
        await h.stop()


async def test_a_staff_member_never_decides_their_own_order(
    standin: StandIn, tmp_path: Path
) -> None:
    _forum(standin, OTHER_STAFF, DEMO)
    h = await _start(
        standin,
        tmp_path,
        (STAFF, OTHER_STAFF, DEMO),  # the customer DEMO is a staff member too
        STEPWISE_STAFF_APPROVAL_ABOVE="10",
        STEPWISE_STAFF_FOUR_EYES_ABOVE="50",
    )
    try:
        x, px = await _waiting(h, DEMO, "refund 59 for order A1002")
        own = TEXTS["toast_own_order"][EN]
        approve = standin.press_button(FORUM, px.message_id, _data(px, "sw:c:"), DEMO)
        assert await _toast(h, approve) == own
        reject = standin.press_button(FORUM, px.message_id, _data(px, "sw:x:"), DEMO)
        assert await _toast(h, reject) == own
        assert h.query("SELECT staff_id FROM staff_approvals") == []
        assert _shown(h, px.message_id).callback_data == px.callback_data  # no reasons shown
        assert _status(h, x) == "paused"

        # Four eyes are two staff members other than the customer: DEMO was not one.
        first = standin.press_button(FORUM, px.message_id, _data(px, "sw:c:"), STAFF)
        assert "second staff member" in await _toast(h, first)
        again = standin.press_button(FORUM, px.message_id, _data(px, "sw:c:"), DEMO)
        assert await _toast(h, again) == own
        assert _status(h, x) == "paused"
        second = standin.press_button(FORUM, px.message_id, _data(px, "sw:c:"), OTHER_STAFF)
        assert await _toast(h, second) == TEXTS["toast_confirmed"][EN]
        await h.until_text(DEMO, "refund number")
        assert [r[0] for r in h.query("SELECT staff_id FROM staff_approvals ORDER BY at")] == [
            STAFF,
            OTHER_STAFF,
        ]
    finally:
        await h.stop()


# -- item 6: an expired staff approval is closed however many newer ones wait --------------


async def test_the_sweep_closes_every_expired_approval_behind_200_newer_ones(
    standin: StandIn, tmp_path: Path
) -> None:
    """DEMO's approval (over HTTP) and four more expired ones are the oldest of 205 waiting;
    the 200 newest have not expired. One sweep closes all five, page after page, and tells
    each customer and the topic; the 200 keep waiting."""
    _forum(standin)
    start = utcnow()
    now = [start]
    h = await start_bot(
        standin,
        tmp_path / "sweep.db",
        clock=lambda: now[0],
        STEPWISE_STAFF_CHAT_ID=str(FORUM),
        STEPWISE_STAFF_APPROVAL_ABOVE="50",
        STEPWISE_APPROVAL_TTL="3600",
    )
    try:
        x, px = await _waiting(h, DEMO, "refund 59 for order A1002")
        executor = h.runtime.agent.executor

        async def pause(users: range, at: datetime) -> list[str]:
            paused = Executor(
                executor.registry,
                journal=h.runtime.store,
                staff_rule=executor.staff_rule,
                clock=lambda: at,
            )
            runs = [
                make_run([REFUND], user_id=u).model_copy(update={"id": f"{u:08x}"}) for u in users
            ]
            for run in runs:
                standin.add_chat(run.chat_id, run.user_id, first_name=f"C{run.user_id}")
            started = await asyncio.gather(*(paused.start(run) for run in runs))
            assert all(r.pause is not None and r.pause.approver == "staff" for r in started)
            return [r.id for r in started]

        expired = await pause(range(40000, 40004), start + timedelta(minutes=1))
        waiting = await pause(range(50000, 50200), start + timedelta(hours=1))
        assert len(waiting) == 200
        now[0] = start + timedelta(minutes=90)  # DEMO's and the four: past the hour

        assert await bot_of(h.app).handoffs.sweep_staff_expiries(page=2) == 5
        assert await bot_of(h.app).handoffs.sweep_staff_expiries(page=2) == 0  # once
        for run_id in (x, *expired):
            assert _status(h, run_id) == "expired"
        await h.until_text(DEMO, "expired")
        for user in range(40000, 40004):
            await h.until_text(user, "expired")
        await until(
            lambda: "nobody decided in time" in (_shown(h, px.message_id).text or ""),
            what="the topic's prompt closed",
        )
        statuses = h.query(
            "SELECT status, count(*) FROM runs WHERE user_id >= 50000 GROUP BY status"
        )
        assert statuses == [("paused", 200)]
        assert await refunds(h) == 0
    finally:
        await h.stop()
