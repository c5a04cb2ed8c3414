"""Independent requests in one message are independent, over HTTP with the stand-in: each
planned step says which earlier steps it needs, and a failure stops only those. The
unrelated request still runs, and the answer says what was done and what was not, each
with its own reason."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from standin import ShownMessage, StandIn
from storage.store import open_store
from tests.harness import DEMO, BotHarness, start_bot, until
from tests.test_console import client_for, sign_in

EARLIER = "because an earlier step did not complete"


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[BotHarness]:
    harness = await start_bot(standin, tmp_path / "independent.db")
    try:
        yield harness
    finally:
        await harness.stop()


async def confirm(h: BotHarness, label: str) -> ShownMessage:
    """Press the Confirm button `label` of the newest prompt; the prompt pressed."""
    prompt = await until(
        lambda: next(
            (
                m
                for m in reversed(h.standin.bot_messages(DEMO))
                if any(b.text == label for row in m.buttons for b in row)
            ),
            None,
        ),
        what=f"a prompt with {label!r}",
    )
    h.standin.press_button(DEMO, prompt.message_id, prompt.button(label).callback_data or "", DEMO)
    return prompt


def statuses(h: BotHarness) -> list[tuple[str, str]]:
    return [(s, status) for s, status in h.query(
        "SELECT s.id, s.status FROM steps s JOIN runs r ON r.id = s.run_id"
        " ORDER BY r.created_at DESC, s.position"
    )]  # fmt: skip


async def test_a_failed_return_does_not_stop_the_address_change_of_another_order(
    bot: BotHarness,
) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "return A1002")
    await confirm(h, "Yes, request the return")
    await h.until_text(DEMO, "return number")

    h.standin.inject_message(
        DEMO, DEMO, "return A1002 and change the address of A1007 to 9 Sea Road, Ningbo"
    )
    first = await confirm(h, "Yes, request the return")
    # The return is refused (already requested): the address change of A1007 still asks.
    second = await confirm(h, "Yes, change it")
    assert second.message_id != first.message_id
    await until(
        lambda: (
            h.query("SELECT status FROM runs ORDER BY created_at DESC LIMIT 1") == [("failed",)]
        ),
        what="the run ended",
    )
    ((answer,),) = h.query("SELECT answer FROM runs ORDER BY created_at DESC LIMIT 1")
    assert "already" in answer  # why the return was not done
    assert "9 Sea Road" in answer and EARLIER not in answer
    address = h.query("SELECT address FROM shop_orders WHERE id = 'A1007'")
    assert address == [("9 Sea Road, Ningbo",)]
    assert statuses(h)[:4] == [("s1", "done"), ("s2", "failed"), ("s3", "done"), ("s4", "done")]


async def test_a_policy_question_is_answered_when_an_order_read_fails(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "where is A9999 and what is your return policy?")
    await until(lambda: h.query("SELECT status FROM runs") == [("failed",)], what="the run ended")
    ((answer,),) = h.query("SELECT answer FROM runs")
    assert "A9999" in answer  # the read that failed, with its reason
    assert "within 7 days" in answer  # the policy, looked up all the same
    assert EARLIER not in answer


async def test_a_step_that_needs_the_failed_one_says_so(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "cancel order B2001")  # somebody else's order
    await until(lambda: h.query("SELECT status FROM runs") == [("failed",)], what="the run ended")
    ((answer,),) = h.query("SELECT answer FROM runs")
    assert h.query("SELECT id, status, depends_on FROM steps ORDER BY position") == [
        ("s1", "failed", "[]"),
        ("s2", "skipped", '["s1"]'),
    ]
    assert (
        'Cancel order B2001: not done, because "check the status of order B2001" did not work'
        in answer
    )
    # The step's own line names the step once.
    await h.until_text(DEMO, '⏭ Cancel order B2001 — not done, because "check the status')
    assert h.query("SELECT count(*) FROM shop_cancellations") == [(0,)]


async def test_the_console_shows_which_step_each_step_needs(
    standin: StandIn, tmp_path: Path
) -> None:
    db = tmp_path / "console.db"
    h = await start_bot(standin, db)
    try:
        h.standin.inject_message(DEMO, DEMO, "cancel order B2001 and what is your return policy?")
        await until(lambda: h.query("SELECT status FROM runs") == [("failed",)], what="ended")
        ((run_id,),) = h.query("SELECT id FROM runs")
        assert h.query("SELECT tool, status FROM steps ORDER BY position") == [
            ("get_order_status", "failed"),
            ("cancel_order", "skipped"),
            ("search_policy", "done"),
        ]
    finally:
        await h.stop()
    store = await open_store(str(db))
    try:
        async with client_for(store) as console:
            assert (await sign_in(console)).status_code == 303
            page = (await console.get(f"/runs/{run_id}")).text
    finally:
        await store.close()
    needs = re.findall(r"<dt>Needs</dt><dd>(.*?)</dd>", page)
    assert [re.sub("<[^>]+>", "", n) for n in needs] == [
        "no earlier step: another step's failure does not stop it",
        "step 1",
        "no earlier step: another step's failure does not stop it",
    ]
