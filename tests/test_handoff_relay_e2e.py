"""Nothing a customer writes is lost during a handoff (issue 20, item 5), end to end: the
production bot long-polling the stand-in over HTTP, a forum supergroup as the staff group.

- two edits of one message within the same second both reach staff (the stand-in's clock
  is held still, so both edits carry the same whole-second `edit_date`);
- an edit too long to relay with its "✏️" mark arrives split in marked parts, and a relay
  Telegram refuses for good is told to staff and to the customer;
- an unknown "/word" is a request outside a handoff (or, alone, answered with the real
  commands), and is relayed during one;
- a handoff asked for in a group goes to the asker's private chat: other members keep the
  agent, nothing of the handoff is posted in the group.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_core.models import Language
from bot.texts import TEXTS, say
from standin import FloodLimits, StandIn
from tests.harness import DEMO, OTHER, STAFF, BotHarness, until
from tests.test_handoff_e2e import FORUM, customer_topic, in_topic, staff_forum, staffed, texts

EN, ZH = Language.EN, Language.ZH
GROUP = -4001  # a plain group with several members (not the staff group)
ROOMY = FloodLimits(per_chat=50, per_group=50, overall=200)


class HeldClock:
    """The stand-in's clock, held at one second: every message and edit is dated alike."""

    def __init__(self, now: float = 1_800_000_000.25) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[BotHarness]:
    staff_forum(standin)
    harness = await staffed(standin, tmp_path / "relay.db")
    try:
        yield harness
    finally:
        await harness.stop()


NAME = "Test User"


def topic_texts(h: BotHarness, thread: int) -> list[str]:
    return [m.text or "" for m in in_topic(h.standin, thread)]


# -- 1. two edits within one second ------------------------------------------------------


@pytest.mark.standin(clock=HeldClock(), flood=ROOMY)
async def test_two_edits_in_the_same_second_both_reach_staff(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/human")
    thread = await customer_topic(h)
    sent = h.standin.inject_message(DEMO, DEMO, "my adress is 1 Main St")
    # Staff read who wrote (issue 23 #8): the stand-in's default user is "Test User".
    await until(
        lambda: f"{NAME}:\nmy adress is 1 Main St" in topic_texts(h, thread), what="the original"
    )
    first = h.standin.inject_edited_message(DEMO, DEMO, sent["message_id"], "my address is 1 Main")
    await until(
        lambda: f"✏️ {NAME} edited: my address is 1 Main" in topic_texts(h, thread),
        what="the first edit",
    )
    second = h.standin.inject_edited_message(
        DEMO, DEMO, sent["message_id"], "my address is 1 Main St, flat 2"
    )
    assert first["edit_date"] == second["edit_date"]  # the same whole second
    await until(
        lambda: f"✏️ {NAME} edited: my address is 1 Main St, flat 2" in topic_texts(h, thread),
        what="the final text of the second edit",
    )
    relays = "SELECT count(*), count(copied_at) FROM handoff_relays WHERE direction = 'to_staff'"
    await until(lambda: h.query(relays) == [(3, 3)], what="three relays, each copied")


@pytest.mark.standin(clock=HeldClock(), flood=ROOMY)
async def test_two_staff_edits_in_the_same_second_both_reach_the_customer(
    bot: BotHarness,
) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/human")
    thread = await customer_topic(h)
    reply = h.standin.inject_message(FORUM, STAFF, "refund is 5", message_thread_id=thread)
    await h.until_text(DEMO, "refund is 5")
    h.standin.inject_edited_message(FORUM, STAFF, reply["message_id"], "refund is 50")
    await h.until_text(DEMO, "✏️ (edited) refund is 50")
    h.standin.inject_edited_message(FORUM, STAFF, reply["message_id"], "refund is 59")
    await h.until_text(DEMO, "✏️ (edited) refund is 59")


# -- 2. an edit too long for its mark ----------------------------------------------------


@pytest.mark.standin(flood=ROOMY)
async def test_a_long_edit_reaches_staff_in_marked_parts(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/human")
    thread = await customer_topic(h)
    sent = h.standin.inject_message(DEMO, DEMO, "the story so far")
    await until(lambda: f"{NAME}:\nthe story so far" in topic_texts(h, thread), what="the original")
    lines = [
        f"line {n:03d}: the parcel was left at the wrong door <again> & again" for n in range(64)
    ]
    long_edit = "\n".join(lines)
    assert 4085 <= len(long_edit) <= 4096  # fits Telegram alone; not with "✏️ edited: "
    h.standin.inject_edited_message(DEMO, DEMO, sent["message_id"], long_edit)

    def parts() -> list[str]:
        return [t for t in topic_texts(h, thread) if t.startswith("✏️ (")]

    await until(lambda: len(parts()) == 2, what="the edit in two parts")
    first, second = parts()
    assert first.startswith(f"✏️ (1/2) {NAME} edited: line 000")
    assert second.startswith("✏️ (2/2) ")
    body = first.removeprefix(f"✏️ (1/2) {NAME} edited: ") + "\n" + second.removeprefix("✏️ (2/2) ")
    assert body == long_edit  # every character, in order, `<` and `&` as written
    settled = "SELECT copied_at IS NOT NULL, gave_up_at FROM handoff_relays WHERE variant != 0"
    await until(lambda: h.query(settled) == [(1, None)], what="the edit relay marked copied")


async def test_a_relay_refused_for_good_is_told_to_staff_and_customer(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/human")
    thread = await customer_topic(h)
    h.standin.fail_next(
        "copyMessage", status=400, description="Bad Request: message to copy not found"
    )
    h.standin.inject_message(DEMO, DEMO, "here is my order number", photo=True)  # a copy
    await until(
        lambda: any("could not be copied here" in t for t in topic_texts(h, thread)),
        what="the note to staff",
    )
    await h.until_text(DEMO, TEXTS["relay_failed"][EN])
    settled = "SELECT gave_up_at IS NOT NULL, failure FROM handoff_relays"
    ((gave_up, failure),) = await until(lambda: h.query(settled), what="the relay settled")
    assert gave_up == 1 and "message to copy not found" in failure.lower()


# -- 3. unknown /words -------------------------------------------------------------------


async def test_unknown_slash_words_are_requests_or_get_the_real_commands(
    bot: BotHarness,
) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/cancel order A1003")
    prompt = await h.buttons_message(DEMO)  # the agent's Confirm for cancelling A1003
    assert "A1003" in (prompt.text or "")
    assert h.query("SELECT request_text FROM runs") == [("cancel order A1003",)]

    h.standin.inject_message(DEMO, DEMO, "/settings")
    unknown = say("unknown_command", EN).format(command="/settings", commands="/help, /human")
    await h.until_text(DEMO, unknown)
    h.standin.inject_message(DEMO, DEMO, "/help")  # known commands keep working
    await h.until_text(DEMO, TEXTS["help"][EN])
    assert h.query("SELECT count(*) FROM runs") == [(1,)]


async def test_unknown_slash_words_are_relayed_during_a_handoff(bot: BotHarness) -> None:
    h = bot
    h.standin.inject_message(DEMO, DEMO, "/human")
    thread = await customer_topic(h)
    h.standin.inject_message(DEMO, DEMO, "/cancel order P0002")
    h.standin.inject_message(DEMO, DEMO, "/refund")
    await until(
        lambda: (
            {f"{NAME}:\n/cancel order P0002", f"{NAME}:\n/refund"} <= set(topic_texts(h, thread))
        ),
        what="both /words in the topic",
    )
    assert texts(h, DEMO) == [TEXTS["handoff_opened"][EN]]  # the agent stayed silent
    assert h.query("SELECT count(*) FROM runs") == [(0,)]


# -- 4. a handoff asked for in a group ---------------------------------------------------


@pytest.mark.standin(flood=ROOMY)
async def test_a_handoff_asked_in_a_group_goes_private_and_the_group_keeps_the_agent(
    bot: BotHarness,
) -> None:
    h = bot
    h.standin.add_chat(GROUP, DEMO, title="Family orders", first_name="Ada")
    h.standin.inject_message(GROUP, DEMO, "/human", first_name="Ada")
    # Another member keeps talking to the agent: never copied into anyone's topic.
    h.standin.inject_message(GROUP, OTHER, "where is B2001", first_name="Bob")
    bobs = "SELECT chat_id, user_id FROM runs WHERE request_text = ?"
    await until(
        lambda: h.query(bobs, "where is B2001") == [(GROUP, OTHER)], what="the agent serving Bob"
    )
    await h.until_text(GROUP, "B2001")
    assert h.standin.topics(FORUM) == []
    # The asker is sent to a private chat with the bot, one tap away.
    redirect = await h.until_text(GROUP, TEXTS["handoff_private_only"][EN])
    (button,) = redirect.buttons[0]
    assert button.text == TEXTS["handoff_private_button"][EN]
    assert button.url == "https://t.me/stepwise_test_bot?start=human"
    assert h.query("SELECT count(*) FROM handoffs") == [(0,)]

    # Asked in words, in Chinese: the same, with the run for context in the link.
    h.standin.inject_message(GROUP, DEMO, "我要转人工", first_name="Ada", language_code="zh")
    worded = await h.until_text(GROUP, TEXTS["handoff_private_only"][ZH])
    ((run_id,),) = await until(
        lambda: h.query("SELECT id FROM runs WHERE request_text = '我要转人工'"), what="the run"
    )
    assert worded.buttons[0][0].url == f"https://t.me/stepwise_test_bot?start=human-{run_id}"

    # The asker taps the button: Telegram opens the private chat with "/start human-<run>".
    h.standin.inject_message(DEMO, DEMO, f"/start human-{run_id}", first_name="Ada")
    await h.until_text(DEMO, TEXTS["handoff_opened"][EN])
    thread = await customer_topic(h)
    rows = h.query("SELECT customer_chat_id, customer_user_id, run_id, trigger FROM handoffs")
    assert rows == [(DEMO, DEMO, run_id, "command")]
    h.standin.inject_message(GROUP, OTHER, "and B2001 again?", first_name="Bob")
    await until(
        lambda: h.query(bobs, "and B2001 again?") == [(GROUP, OTHER)], what="Bob served again"
    )
    h.standin.inject_message(
        FORUM, STAFF, "Hi Ada, your A1001 ships today", message_thread_id=thread
    )
    await h.until_text(DEMO, "Hi Ada, your A1001 ships today")

    topic = topic_texts(h, thread)
    assert not any("B2001" in t or "Bob" in t for t in topic)  # nothing of another member
    assert not any("Hi Ada" in t for t in h.bot_texts(GROUP))  # staff never post in the group
