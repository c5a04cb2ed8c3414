"""The Telegram stand-in, driven over real HTTP by python-telegram-bot and raw clients.

Synchronisation is always an event (a waiting long poll, a logged call, a queued update),
never a sleep; the only clocks involved are fake ones for flood control and the few
deliberately short server-side timeouts being tested.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from telegram import (
    Bot,
    BotCommandScopeAllChatAdministrators,
    BotCommandScopeChat,
    BotCommandScopeChatMember,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    MessageEntity,
    ReplyParameters,
    Update,
)
from telegram.error import (
    BadRequest,
    Conflict,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TimedOut,
)
from telegram.ext import Application, ApplicationBuilder, CallbackQueryHandler, CommandHandler

from standin import DEFAULT_TOKEN, SECRET_HEADER, FloodLimits, StandIn, WebhookRetry
from standin.formatting import ParseError, parse
from tests.botapi import assert_conforms
from tests.harness import PATIENCE

CHAT = 4242
ROOT = Path(__file__).resolve().parents[1]


class FakeClock:
    """Dates, flood windows and query expiry read this instead of the wall clock."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def said(description: str) -> str:
    """Match a Telegram description in a PTB error (PTB re-capitalises "Bad Request: ...")."""
    return "(?i)" + re.escape(description)


def keyboard(*data: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton(d.upper(), callback_data=d) for d in data]])


def connect(standin: StandIn, token: str = DEFAULT_TOKEN) -> Bot:
    return Bot(token, base_url=standin.base_url, base_file_url=standin.base_file_url)


@pytest.fixture
async def standin() -> AsyncIterator[StandIn]:
    """A stand-in whose answers and updates are spec-checked after each test (requests are
    not: these tests send malformed ones on purpose)."""
    async with StandIn() as running:
        yield running
    assert_conforms(running, requests=False)


@pytest.fixture
async def bot(standin: StandIn) -> AsyncIterator[Bot]:
    async with connect(standin) as client:
        yield client


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def raw(http: aiohttp.ClientSession, url: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    async with http.post(url, **kwargs) as response:
        return response.status, await response.json()


# ----- updates and long polling ---------------------------------------------------------


async def test_get_me_returns_the_bot(bot: Bot) -> None:
    me = await bot.get_me()
    assert (me.id, me.is_bot, me.username) == (123456789, True, "stepwise_test_bot")


async def test_long_poll_returns_as_soon_as_a_message_arrives(bot: Bot, standin: StandIn) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    poll = asyncio.create_task(bot.get_updates(timeout=8))
    await standin.wait_for(lambda: standin.active_polls == 1)

    standin.inject_message(CHAT, text="hello")
    updates = await asyncio.wait_for(poll, 5)

    assert loop.time() - started < 5  # far sooner than the 8 s poll timeout
    assert [u.message.text for u in updates if u.message] == ["hello"]


async def test_long_poll_without_updates_waits_for_its_timeout(
    standin: StandIn, http: aiohttp.ClientSession
) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    status, body = await raw(
        http, f"{standin.base_url}{DEFAULT_TOKEN}/getUpdates", json={"timeout": 0.3}
    )
    assert (status, body) == (200, {"ok": True, "result": []})
    assert loop.time() - started >= 0.25  # the server held the poll open


async def test_offset_confirms_updates(bot: Bot, standin: StandIn) -> None:
    standin.inject_message(CHAT, text="one")
    standin.inject_message(CHAT, text="two")

    first = await bot.get_updates()
    again = await bot.get_updates()  # nothing confirmed yet: the same updates again
    assert [u.message.text for u in first if u.message] == ["one", "two"]
    assert [u.update_id for u in again] == [u.update_id for u in first]
    assert first[1].update_id == first[0].update_id + 1

    offset = first[-1].update_id + 1
    assert await bot.get_updates(offset=offset) == ()
    standin.inject_message(CHAT, text="three")
    (third,) = await bot.get_updates(offset=offset)
    assert third.update_id == offset
    assert third.message is not None and third.message.message_id == 3
    assert len(standin.pending_updates()) == 1


async def test_allowed_updates_apply_to_updates_created_after_the_call(
    bot: Bot, standin: StandIn
) -> None:
    # Telegram: allowed_updates "doesn't affect updates created before the call to
    # getUpdates, so unwanted updates may be received for a short period of time".
    standin.add_chat(CHAT)
    sent = await bot.send_message(CHAT, "Pick", reply_markup=keyboard("a"))
    standin.inject_message(CHAT, text="queued before the filter")
    standin.press_button(CHAT, sent.message_id, "a")
    before = await bot.get_updates(allowed_updates=["callback_query"])
    assert [(u.message is not None, u.callback_query is not None) for u in before] == [
        (True, False),
        (False, True),
    ]
    standin.inject_message(CHAT, text="created after: never sent")
    standin.press_button(CHAT, sent.message_id, "a")
    offset = before[-1].update_id + 1
    (after,) = await bot.get_updates(offset=offset)  # the filter persists
    assert after.callback_query is not None
    # The default (no allowed_updates yet) leaves out the opt-in kinds.
    async with StandIn() as fresh, connect(fresh) as other:
        fresh.inject_update("message_reaction", _reaction())
        fresh.inject_message(CHAT, text="hi")
        assert [u.message is not None for u in await other.get_updates()] == [True]


def _reaction() -> dict[str, Any]:
    return {
        "chat": {"id": CHAT, "type": "private", "first_name": "Test User"},
        "message_id": 1,
        "user": {"id": CHAT, "is_bot": False, "first_name": "Test User"},
        "date": 1_700_000_000,
        "old_reaction": [],
        "new_reaction": [{"type": "emoji", "emoji": "👍"}],
    }


async def test_stopping_releases_a_waiting_long_poll(standin: StandIn, bot: Bot) -> None:
    poll = asyncio.create_task(bot.get_updates(timeout=8))
    await standin.wait_for(lambda: standin.active_polls == 1)
    await standin.stop()
    assert await asyncio.wait_for(poll, 3) == ()


async def test_a_second_poller_ends_the_first_with_conflict(bot: Bot, standin: StandIn) -> None:
    first = asyncio.create_task(bot.get_updates(timeout=8))
    await standin.wait_for(lambda: standin.active_polls == 1)
    async with connect(standin) as other_instance:
        assert await other_instance.get_updates() == ()
    with pytest.raises(Conflict, match="terminated by other getUpdates request"):
        await asyncio.wait_for(first, 5)


async def test_injected_messages_look_like_telegrams(bot: Bot, standin: StandIn) -> None:
    standin.inject_message(CHAT, text="/start promo", first_name="Ana", language_code="pt")
    standin.inject_message(-1001234567890, 7, "hi all", title="Support")
    standin.inject_message(CHAT, text="see this", photo=True)
    standin.inject_message(CHAT, sticker=True)

    command, group, photo, sticker = (u.message for u in await bot.get_updates())
    assert command is not None and command.from_user is not None
    assert command.entities[0].type == "bot_command" and command.entities[0].length == 6
    assert (command.from_user.first_name, command.from_user.language_code) == ("Ana", "pt")
    assert group is not None and group.from_user is not None
    assert (group.chat.type, group.chat.title, group.from_user.id) == ("supergroup", "Support", 7)
    assert photo is not None and photo.caption == "see this" and photo.photo
    assert sticker is not None and sticker.sticker is not None and sticker.text is None
    file = await bot.get_file(photo.photo[-1].file_id)
    assert (await file.download_as_bytearray()).startswith(b"standin file")


# ----- every update shape real Telegram sends ---------------------------------------------

GROUP = -1001234567890


async def test_an_edit_resends_the_whole_message_as_edited_message(
    bot: Bot, standin: StandIn
) -> None:
    original = standin.inject_message(CHAT, text="where is order A1001")
    edited = standin.inject_edited_message(CHAT, None, original["message_id"], "cancel A1003")
    assert edited["edit_date"] >= edited["date"] and edited["text"] == "cancel A1003"

    first, second = await bot.get_updates()
    assert first.message is not None and second.edited_message is not None
    assert second.message is None and second.edited_message.text == "cancel A1003"
    assert second.edited_message.message_id == first.message.message_id
    assert second.edited_message.edit_date is not None
    shown = standin.chat_messages(CHAT)[-1]
    assert (shown.text, shown.history) == ("cancel A1003", ("where is order A1001",))
    with pytest.raises(ValueError, match="only user"):
        standin.inject_edited_message(CHAT, 555, original["message_id"], "not mine")


async def test_group_service_messages(bot: Bot, standin: StandIn) -> None:
    standin.inject_message(GROUP, 7, "hello", title="Support")
    pinned = standin.inject_message(GROUP, 7, "rules")
    standin.inject_service_message(GROUP, "new_chat_members", user_id=7, members=[8, 9])
    standin.inject_service_message(GROUP, "left_chat_member", user_id=8)
    standin.inject_service_message(GROUP, "new_chat_title", user_id=7, title="Help desk")
    standin.inject_service_message(
        GROUP, "pinned_message", user_id=7, pinned_message_id=pinned["message_id"]
    )
    updates = await bot.get_updates()
    joined, left, titled, pin = (u.message for u in updates[2:])
    assert joined is not None and [u.id for u in joined.new_chat_members] == [8, 9]
    assert joined.text is None and joined.from_user is not None and joined.from_user.id == 7
    assert left is not None and left.left_chat_member is not None
    assert left.left_chat_member.id == 8
    assert titled is not None and titled.new_chat_title == "Help desk"
    assert titled.chat.title == "Help desk"
    assert pin is not None and isinstance(pin.pinned_message, Message)
    assert pin.pinned_message.text == "rules"
    assert [m.kind for m in standin.chat_messages(GROUP)][2:] == [
        "new_chat_members",
        "left_chat_member",
        "new_chat_title",
        "pinned_message",
    ]
    with pytest.raises(ValueError, match="groups only"):
        standin.inject_service_message(CHAT, "new_chat_title", title="x")


async def test_adding_the_bot_to_a_group_sends_my_chat_member_too(
    bot: Bot, standin: StandIn
) -> None:
    standin.inject_message(GROUP, 7, "hello")
    standin.inject_service_message(GROUP, "new_chat_members", user_id=7, members=[123456789])
    _, service, member = await bot.get_updates()
    assert service.message is not None and service.message.new_chat_members[0].is_bot
    assert member.my_chat_member is not None
    assert member.my_chat_member.old_chat_member.status == "left"
    assert member.my_chat_member.new_chat_member.status == "member"


async def test_channel_posts_have_no_sender(bot: Bot, standin: StandIn) -> None:
    channel = -1009876543210
    post = standin.inject_channel_post(channel, "news", title="Shop news")
    photo = standin.inject_channel_post(channel, "look", photo=True)
    assert "from" not in post and post["sender_chat"]["id"] == channel
    standin.inject_edited_message(channel, None, post["message_id"], "news, corrected")

    text, picture, edited = await bot.get_updates()
    assert text.channel_post is not None and text.channel_post.from_user is None
    assert text.channel_post.chat.type == "channel"
    assert text.channel_post.sender_chat is not None
    assert picture.channel_post is not None and picture.channel_post.caption == "look"
    assert photo["photo"] and edited.edited_channel_post is not None
    assert edited.edited_channel_post.text == "news, corrected"
    with pytest.raises(ValueError, match="channel"):
        standin.inject_message(channel, 7, "users cannot write here")


async def test_forum_topics_carry_the_thread_both_ways(bot: Bot, standin: StandIn) -> None:
    forum = -1005555555555
    standin.add_chat(forum, 7, title="Help", is_forum=True)
    topic = standin.add_topic(forum, "Orders", user_id=7)
    asked = standin.inject_message(forum, 7, "where is A1001", message_thread_id=topic)
    assert (asked["message_thread_id"], asked["is_topic_message"]) == (topic, True)

    created, question = (u.message for u in await bot.get_updates())
    assert created is not None and created.forum_topic_created is not None
    assert created.forum_topic_created.name == "Orders"
    assert question is not None and question.is_topic_message
    assert question.message_thread_id == topic and question.chat.is_forum

    reply = await bot.send_message(forum, "On its way", message_thread_id=topic)
    assert (reply.message_thread_id, reply.is_topic_message) == (topic, True)
    edited = await bot.edit_message_text("Delivered", forum, reply.message_id)
    assert not isinstance(edited, bool) and edited.message_thread_id == topic
    assert standin.bot_messages(forum)[-1].message_thread_id == topic
    assert await bot.send_chat_action(forum, "typing", message_thread_id=topic)
    for wrong in (999, 1):  # unknown, and General (whose messages have no thread id)
        with pytest.raises(BadRequest, match=said("message thread not found")):
            await bot.send_message(forum, "lost", message_thread_id=wrong)
    standin.add_chat(CHAT)
    with pytest.raises(BadRequest, match=said("message thread not found")):
        await bot.send_message(CHAT, "not a forum", message_thread_id=topic)
    implicit = standin.inject_message(forum, 7, "elsewhere", message_thread_id=77)
    assert implicit["message_thread_id"] == 77
    with pytest.raises(ValueError, match="not a forum"):
        standin.inject_message(GROUP, 7, "x", message_thread_id=5)


async def test_presses_on_messages_the_bot_cannot_access(bot: Bot) -> None:
    clock = FakeClock()
    async with StandIn(clock=clock) as standin, connect(standin) as client:
        standin.add_chat(CHAT)
        sent = await client.send_message(CHAT, "Pick", reply_markup=keyboard("a"))
        standin.press_button(CHAT, sent.message_id, "a", inaccessible=True)
        clock.advance(48 * 3600 + 1)
        standin.press_button(CHAT, sent.message_id, "a")
        updates = await client.get_updates()
        for update in updates:
            query = update.callback_query
            assert query is not None and query.message is not None
            assert not query.message.is_accessible
            assert query.message.message_id == sent.message_id
        (raw_update,) = [u for u in standin.pending_updates()][:1]
        assert raw_update["callback_query"]["message"] == {
            "chat": {"id": CHAT, "type": "private", "first_name": "Test User"},
            "message_id": sent.message_id,
            "date": 0,
        }


async def test_my_chat_member_for_added_promoted_kicked_and_left(
    bot: Bot, standin: StandIn
) -> None:
    added = standin.inject_my_chat_member(GROUP, "member", user_id=7, title="Support")
    assert added["old_chat_member"]["status"] == "left"
    await bot.send_message(GROUP, "hello all")
    standin.inject_my_chat_member(GROUP, "administrator", user_id=7)
    standin.inject_my_chat_member(GROUP, "kicked", user_id=7)
    with pytest.raises(Forbidden, match="bot was kicked from the supergroup chat"):
        await bot.send_message(GROUP, "still here?")
    standin.inject_my_chat_member(GROUP, "member", user_id=7)
    standin.inject_my_chat_member(GROUP, "left", user_id=7)
    with pytest.raises(Forbidden, match="bot is not a member of the supergroup chat"):
        await bot.send_message(GROUP, "still here?")
    statuses = [
        (u.my_chat_member.old_chat_member.status, u.my_chat_member.new_chat_member.status)
        for u in await bot.get_updates()
        if u.my_chat_member is not None
    ]
    assert statuses == [
        ("left", "member"),
        ("member", "administrator"),
        ("administrator", "kicked"),
        ("kicked", "member"),
        ("member", "left"),
    ]
    standin.inject_message(CHAT, text="hi")
    blocked = standin.inject_my_chat_member(CHAT, "kicked")
    assert blocked["new_chat_member"] == {
        "status": "kicked",
        "user": standin.bot,
        "until_date": 0,
    }
    with pytest.raises(Forbidden, match="bot was blocked by the user"):
        await bot.send_message(CHAT, "hello?")
    with pytest.raises(ValueError, match="private chat"):
        standin.inject_my_chat_member(CHAT, "left")


async def test_any_other_update_through_the_escape_hatch(bot: Bot, standin: StandIn) -> None:
    request = {
        "chat": {"id": GROUP, "type": "supergroup", "title": "Support"},
        "from": {"id": 7, "is_bot": False, "first_name": "Ana"},
        "user_chat_id": 7,
        "date": 1_700_000_000,
    }
    queued = standin.inject_update("chat_join_request", request)
    request["user_chat_id"] = 8  # the queued update is a copy, frozen when injected
    (update,) = await bot.get_updates()
    assert update.chat_join_request is not None
    assert update.chat_join_request.user_chat_id == 7 == queued["user_chat_id"]
    with pytest.raises(ValueError, match="not an update kind"):
        standin.inject_update("update_id", {})
    with pytest.raises(ValueError, match="required field of ChatJoinRequest missing"):
        without_id = {k: v for k, v in request.items() if k != "user_chat_id"}
        standin.inject_update("chat_join_request", without_id)  # checked against the spec
    assert len(standin.pending_updates()) == 1  # only the valid one was queued


async def test_update_shapes_over_the_test_api(
    bot: Bot, standin: StandIn, http: aiohttp.ClientSession
) -> None:
    api = f"{standin.url}/_test"
    forum = -1005555555555

    async def post(endpoint: str, **body: Any) -> Any:
        status, answer = await raw(http, f"{api}/{endpoint}", json=body)
        assert status == 200, answer
        return answer["result"]

    await post("chats", chat_id=forum, user_id=7, is_forum=True)
    topic = (await post("topics", chat_id=forum, name="Orders", user_id=7))["message_thread_id"]
    sent = await post(
        "inject_message", chat_id=forum, user_id=7, text="hi", message_thread_id=topic
    )
    await post(
        "inject_edited_message", chat_id=forum, user_id=7, message_id=sent["message_id"], text="hey"
    )
    await post(
        "inject_service_message", chat_id=forum, kind="new_chat_members", user_id=7, members=[8]
    )
    await post("inject_channel_post", chat_id=-1009876543210, text="news")
    await post("inject_my_chat_member", chat_id=forum, status="administrator", user_id=7)
    await post(
        "inject_update",
        kind="chat_join_request",
        payload={
            "chat": {"id": forum, "type": "supergroup", "title": "Help", "is_forum": True},
            "from": {"id": 9, "is_bot": False, "first_name": "Bo"},
            "user_chat_id": 9,
            "date": 1_700_000_000,
        },
    )
    bot_message = await bot.send_message(
        forum, "Pick", message_thread_id=topic, reply_markup=keyboard("a")
    )
    await post(
        "press_button",
        chat_id=forum,
        message_id=bot_message.message_id,
        callback_data="a",
        user_id=7,
        inaccessible=True,
    )
    kinds = [next(k for k in u if k != "update_id") for u in standin.pending_updates()]
    assert kinds == [
        "message",
        "message",
        "edited_message",
        "message",
        "channel_post",
        "my_chat_member",
        "chat_join_request",
        "callback_query",
    ]
    status, answer = await raw(
        http, f"{api}/inject_service_message", json={"chat_id": forum, "kind": "nope", "user_id": 7}
    )
    assert status == 400 and "must be one of" in answer["description"]


# ----- buttons and callback queries -------------------------------------------------------


async def test_button_press_becomes_a_callback_query_answered_once(
    bot: Bot, standin: StandIn
) -> None:
    standin.add_chat(CHAT)
    sent = await bot.send_message(CHAT, "Pick one", reply_markup=keyboard("yes", "no"))
    shown = standin.chat_messages(CHAT)[-1]
    assert shown.from_bot and shown.callback_data == ["yes", "no"]
    assert shown.button("NO").callback_data == "no"

    query_id = standin.press_button(CHAT, sent.message_id, "no")
    (update,) = await bot.get_updates()
    query = update.callback_query
    assert query is not None and query.message is not None
    assert (query.id, query.data, query.from_user.id) == (query_id, "no", CHAT)
    assert query.message.message_id == sent.message_id

    assert await bot.answer_callback_query(query.id, text="Noted")
    assert [a.text for a in standin.callback_answers(query_id)] == ["Noted"]
    with pytest.raises(BadRequest, match=said("query is too old and response timeout expired")):
        await bot.answer_callback_query(query.id)


async def test_press_button_refuses_buttons_that_are_not_shown(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CHAT)
    sent = await bot.send_message(CHAT, "Pick", reply_markup=keyboard("yes"))
    with pytest.raises(ValueError, match="no button with callback_data 'nope'"):
        standin.press_button(CHAT, sent.message_id, "nope")
    with pytest.raises(LookupError):
        standin.press_button(CHAT, 999, "yes")

    standin.press_button(CHAT, sent.message_id, "nope", forge=True)
    standin.press_button(CHAT, 999, "stale", forge=True)
    forged, stale = (u.callback_query for u in await bot.get_updates())
    assert forged is not None and forged.data == "nope"
    assert stale is not None and stale.message is not None
    assert not stale.message.is_accessible


async def test_callback_queries_expire_when_a_ttl_is_set() -> None:
    clock = FakeClock()
    async with StandIn(callback_query_ttl=15, clock=clock) as standin, connect(standin) as bot:
        standin.add_chat(CHAT)
        sent = await bot.send_message(CHAT, "Pick", reply_markup=keyboard("a"))
        query_id = standin.press_button(CHAT, sent.message_id, "a")
        clock.advance(16)
        with pytest.raises(BadRequest, match=said("query is too old")):
            await bot.answer_callback_query(query_id)
        assert standin.callback_answers(query_id) == []


async def test_callback_data_may_have_at_most_64_bytes(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CHAT)
    await bot.send_message(CHAT, "fits", reply_markup=keyboard("é" * 32))  # 64 UTF-8 bytes
    with pytest.raises(BadRequest, match=said("button_data_invalid")):
        await bot.send_message(CHAT, "too long", reply_markup=keyboard("x" * 65))
    assert [m.text for m in standin.chat_messages(CHAT)] == ["fits"]


# ----- editing ------------------------------------------------------------------------------


async def test_edits_follow_telegrams_rules(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CHAT)
    sent = await bot.send_message(CHAT, "Step 1", reply_markup=keyboard("next"))
    with pytest.raises(BadRequest, match=said("message is not modified")):
        await bot.edit_message_text("Step 1", CHAT, sent.message_id, reply_markup=keyboard("next"))

    edited = await bot.edit_message_text(
        "Step 2", CHAT, sent.message_id, reply_markup=keyboard("next")
    )
    assert not isinstance(edited, bool) and edited.text == "Step 2"
    shown = standin.chat_messages(CHAT)[-1]
    assert (shown.history, shown.edit_count, shown.callback_data) == (("Step 1",), 1, ["next"])

    await bot.edit_message_text("Step 2", CHAT, sent.message_id)  # no markup: keyboard removed
    assert standin.chat_messages(CHAT)[-1].buttons == ()
    with pytest.raises(BadRequest, match=said("message to edit not found")):
        await bot.edit_message_text("Step 3", CHAT, 999)
    with pytest.raises(BadRequest, match=said("message is not modified")):
        await bot.edit_message_reply_markup(CHAT, sent.message_id)


async def test_user_messages_cannot_be_edited(bot: Bot, standin: StandIn) -> None:
    user_message = standin.inject_message(CHAT, text="mine")
    with pytest.raises(BadRequest, match=said("message can't be edited")):
        await bot.edit_message_text("yours now", CHAT, user_message["message_id"])


# ----- text and markup limits ---------------------------------------------------------------


async def test_length_is_measured_after_parsing(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CHAT)
    with pytest.raises(BadRequest, match=said("message is too long")):
        await bot.send_message(CHAT, "a" * 4097)
    with pytest.raises(BadRequest, match=said("message is too long")):
        await bot.send_message(CHAT, "😀" * 2049)  # 4098 UTF-16 code units
    html = "<b>" + "a" * 4095 + "</b>&lt;"  # 4096 visible characters
    sent = await bot.send_message(CHAT, html, parse_mode="HTML")
    assert sent.text == "a" * 4095 + "<" and sent.entities[0].type == "bold"
    with pytest.raises(BadRequest, match=said("message text is empty")):
        await bot.send_message(CHAT, "")
    with pytest.raises(BadRequest, match=said("message must be non-empty")):
        await bot.send_message(CHAT, "<b> </b>", parse_mode="HTML")


async def test_bad_markup_is_rejected_with_telegrams_message(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CHAT)
    with pytest.raises(BadRequest, match=said('unsupported start tag "br" at byte offset 5')):
        await bot.send_message(CHAT, "Hello<br>world", parse_mode="HTML")


async def test_only_html_markup_is_modelled(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CHAT)
    for mode in ("MarkdownV2", "Markdown", "markdownv2"):
        with pytest.raises(BadRequest, match=said("supports parse_mode HTML only")):
            await bot.send_message(CHAT, "Version 1\\.0 *ready*", parse_mode=mode)
    with pytest.raises(BadRequest, match=said("unsupported parse_mode")):
        await bot.send_message(CHAT, "plain", parse_mode="BBCode")
    assert standin.chat_messages(CHAT) == []


@pytest.mark.parametrize(
    ("mode", "source", "expected"),
    [
        ("HTML", "🏟 🏟&lt;<abacaba", "Unclosed start tag at byte offset 13"),
        (
            "HTML",
            "🏟 🏟&lt;<i>a</em   >",
            'Unmatched end tag at byte offset 17, expected "</i>", found "</em>"',
        ),
        ("HTML", "<b>x", 'Can\'t find end tag corresponding to start tag "b"'),
        ("HTML", "<span>x</span>", 'Tag "span" must have class "tg-spoiler" at byte offset 0'),
    ],
)
def test_parse_errors_match_tdlib(mode: str, source: str, expected: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(source, mode)
    assert str(caught.value) == expected


def test_entities_use_utf16_offsets() -> None:
    parsed = parse("🏟 <b>x</b> <a href='example.com'>site</a>", "HTML")
    assert parsed.text == "🏟 x site"
    assert parsed.entities == (
        {"type": "bold", "offset": 3, "length": 1},
        {"type": "text_link", "offset": 5, "length": 4, "url": "http://example.com/"},
    )


# ----- flood control ----------------------------------------------------------------------


async def test_per_chat_flood_control_answers_retry_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    clock = FakeClock()
    async with (
        StandIn(flood=FloodLimits(per_chat=3), clock=clock) as standin,
        connect(standin) as bot,
    ):
        standin.add_chat(CHAT)
        for n in range(3):
            await bot.send_message(CHAT, f"m{n}")
        with pytest.raises(RetryAfter) as caught:
            await bot.send_message(CHAT, "one too many")
        assert caught.value.retry_after.total_seconds() == 1  # type: ignore[union-attr]
        assert (standin.served_429, standin.flood_refusals(CHAT)) == (1, 1)

        clock.advance(1.0)
        await bot.send_message(CHAT, "after the window")
        assert len(standin.bot_messages(CHAT)) == 4


async def test_dates_and_the_call_log_read_the_injected_clock() -> None:
    clock = FakeClock()
    async with StandIn(clock=clock) as standin, connect(standin) as bot:
        standin.add_chat(CHAT)
        sent = await bot.send_message(CHAT, "first")
        clock.advance(90)
        await bot.edit_message_text("second", CHAT, sent.message_id)
        incoming = standin.inject_message(CHAT, text="hi")
        shown = standin.chat_messages(CHAT)[0]
        assert (shown.date, shown.edit_date) == (1_700_000_000, 1_700_000_090)
        assert incoming["date"] == 1_700_000_090
        first_send = standin.calls("sendMessage")[0]
        assert (first_send.started, first_send.finished) == (1_700_000_000.0, 1_700_000_000.0)


async def test_global_and_group_flood_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    clock = FakeClock()
    limited = StandIn(flood=FloodLimits(overall=4, per_group=2, per_group_window=60.0), clock=clock)
    async with limited as standin, connect(standin) as bot:
        group = -100200300
        standin.inject_message(group, 7, "hello")
        await bot.send_message(group, "one")
        await bot.send_message(group, "two")
        with pytest.raises(RetryAfter) as in_group:
            await bot.send_message(group, "three")
        assert in_group.value.retry_after.total_seconds() == 60  # type: ignore[union-attr]

        for chat in (1, 2, 3):
            standin.add_chat(chat)
        await bot.send_message(1, "hi")
        await bot.send_message(2, "hi")
        with pytest.raises(RetryAfter):
            await bot.send_message(3, "over the bot-wide limit of 4 per second")
        assert standin.served_429 == 2 and standin.flood_refusals() == 2


# ----- failures --------------------------------------------------------------------------


async def test_blocked_chat_answers_forbidden(bot: Bot, standin: StandIn) -> None:
    standin.inject_message(CHAT, text="bye")
    standin.block_chat(CHAT)
    with pytest.raises(Forbidden, match="bot was blocked by the user"):
        await bot.send_message(CHAT, "are you there?")
    with pytest.raises(Forbidden):
        await bot.send_chat_action(CHAT, "typing")
    member = (await bot.get_updates())[-1].my_chat_member
    assert member is not None and member.new_chat_member.status == "kicked"

    standin.unblock_chat(CHAT)
    await bot.send_message(CHAT, "welcome back")
    assert [m.text for m in standin.bot_messages(CHAT)] == ["welcome back"]


async def test_unknown_chat_and_reply_target(bot: Bot, standin: StandIn) -> None:
    with pytest.raises(BadRequest, match=said("chat not found")):
        await bot.send_message(777, "hello?")
    standin.add_chat(CHAT)
    with pytest.raises(BadRequest, match=said("message to be replied not found")):
        await bot.send_message(CHAT, "re", reply_to_message_id=999)
    lenient = ReplyParameters(message_id=999, allow_sending_without_reply=True)
    await bot.send_message(CHAT, "re", reply_parameters=lenient)
    question = standin.inject_message(CHAT, text="question")
    answer = await bot.send_message(CHAT, "answer", reply_to_message_id=question["message_id"])
    assert answer.reply_to_message is not None
    assert answer.reply_to_message.text == "question"


async def test_injected_server_error_then_success(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CHAT)
    standin.fail_next("sendMessage", status=500)
    with pytest.raises(NetworkError, match="Internal Server Error"):
        await bot.send_message(CHAT, "first try")
    await bot.send_message(CHAT, "second try")
    assert [m.text for m in standin.chat_messages(CHAT)] == ["second try"]
    assert [c.status for c in standin.calls("sendMessage", chat_id=CHAT)] == [500, 200]


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ({"status": 502, "body": "<html><body>502 Bad Gateway</body></html>"}, NetworkError),
        ({"status": 429, "retry_after": 3}, RetryAfter),
        ({"status": 403, "description": "Forbidden: bot was kicked"}, Forbidden),
    ],
)
async def test_injected_faults_reach_the_client_as_telegram_would_send_them(
    bot: Bot,
    standin: StandIn,
    fault: dict[str, Any],
    error: type[Exception],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    standin.add_chat(CHAT)
    standin.fail_next("sendmessage", chat_id=CHAT, **fault)
    with pytest.raises(error):
        await bot.send_message(CHAT, "x")
    assert standin.chat_messages(CHAT) == []


async def test_answer_slower_than_client_timeout_still_delivers(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CHAT)
    standin.fail_next("sendMessage", status=None, delay=3.0)
    with pytest.raises(TimedOut):
        await bot.send_message(CHAT, "slow", read_timeout=0.2)
    await standin.wait_for(lambda: len(standin.chat_messages(CHAT)) == 1)
    record = standin.calls("sendMessage")[0]
    await standin.wait_for(lambda: record.status is not None)
    assert record.status == 499  # the client hung up before the late answer


async def test_wrong_token_is_rejected(standin: StandIn, http: aiohttp.ClientSession) -> None:
    with pytest.raises(InvalidToken):
        async with connect(standin, "987654321:WrongTokenWrongTokenWrongToken1"):
            pass
    status, body = await raw(http, f"{standin.base_url}987654321:Wrong/getMe")
    assert (status, body) == (401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
    status, body = await raw(http, f"{standin.base_url}not-a-token/getMe")
    assert (status, body) == (404, {"ok": False, "error_code": 404, "description": "Not Found"})


# ----- raw HTTP shapes ----------------------------------------------------------------------


async def test_raw_requests_in_every_encoding(
    standin: StandIn, http: aiohttp.ClientSession
) -> None:
    api = f"{standin.base_url}{DEFAULT_TOKEN}"
    standin.add_chat(CHAT)
    status, sent = await raw(http, f"{api}/sendMessage", json={"chat_id": CHAT, "text": "hi"})
    assert status == 200 and sent["ok"] is True
    assert {"message_id", "from", "chat", "date", "text"} <= sent["result"].keys()
    assert isinstance(sent["result"]["date"], int)

    markup = json.dumps({"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]})
    form = {"chat_id": str(CHAT), "text": "form", "reply_markup": markup}
    status, sent = await raw(http, f"{api}/sendmessage", data=form)
    assert status == 200 and sent["result"]["reply_markup"]["inline_keyboard"][0][0]["text"] == "A"

    async with http.get(f"{api}/getMe") as response:
        assert (await response.json())["result"]["id"] == 123456789

    status, body = await raw(http, f"{api}/sendMessage", json={"chat_id": CHAT, "text": "hi"})
    message_id = body["result"]["message_id"]
    edit = {"chat_id": CHAT, "message_id": message_id, "text": "hi"}
    status, body = await raw(http, f"{api}/editMessageText", json=edit)
    assert status == 400 and body == {
        "ok": False,
        "error_code": 400,
        "description": "Bad Request: message is not modified: specified new message content and "
        "reply markup are exactly the same as a current content and reply markup of the message",
    }
    status, body = await raw(http, f"{api}/sendMessage", json={"chat_id": CHAT})
    assert body["description"] == "Bad Request: message text is empty"
    status, body = await raw(http, f"{api}/noSuchMethod", json={})
    assert (status, body) == (404, {"ok": False, "error_code": 404, "description": "Not Found"})


@pytest.mark.parametrize(
    ("method", "body", "description"),
    [
        ("sendMessage", {"chat_id": CHAT}, "message text is empty"),
        ("sendMessage", {"text": "x"}, "chat_id is empty"),
        (
            "sendMessage",
            {"chat_id": CHAT, "text": "x", "parse_mode": "bbcode"},
            "unsupported parse_mode",
        ),
        (
            "sendMessage",
            {"chat_id": CHAT, "text": "x", "disable_notification": "maybe"},
            'parameter "disable_notification" must be of type Boolean',
        ),
        (
            "sendMessage",
            {"chat_id": CHAT, "text": "x", "reply_markup": "{not json"},
            "can't parse reply keyboard markup JSON object",
        ),
        (
            "sendMessage",
            {"chat_id": CHAT, "text": "x", "reply_markup": 5},
            "object expected as reply markup",
        ),
        (
            "sendMessage",
            {
                "chat_id": CHAT,
                "text": "x",
                "reply_markup": {"inline_keyboard": [[{"text": 5, "callback_data": "a"}]]},
            },
            'can\'t parse inline keyboard button: Field "text" must be of type String',
        ),
        (
            "sendMessage",
            {"chat_id": CHAT, "text": "x", "entities": [{"offset": 0, "length": 1}]},
            "can't parse MessageEntity: Can't find field \"type\"",
        ),
        (
            "sendChatAction",
            {"chat_id": CHAT, "action": "dancing"},
            "wrong parameter action in request",
        ),
        (
            "answerCallbackQuery",
            {},
            "query is too old and response timeout expired or query ID is invalid",
        ),
        ("getFile", {}, "file_id not specified"),
        (
            "setMyCommands",
            {"commands": [{"command": "help", "description": "Help"}], "scope": {"type": "nope"}},
            "can't parse BotCommandScope: Unsupported type specified",
        ),
        ("setMyCommands", {}, 'Parameter "commands" is required'),
    ],
)
async def test_requests_are_checked_against_the_spec_in_telegrams_words(
    standin: StandIn,
    http: aiohttp.ClientSession,
    method: str,
    body: dict[str, Any],
    description: str,
) -> None:
    standin.add_chat(CHAT)
    status, answer = await raw(http, f"{standin.base_url}{DEFAULT_TOKEN}/{method}", json=body)
    assert (status, answer["description"]) == (400, f"Bad Request: {description}")
    assert standin.chat_messages(CHAT) == []


async def test_what_telegram_ignores_the_stand_in_ignores(
    standin: StandIn, http: aiohttp.ClientSession
) -> None:
    api = f"{standin.base_url}{DEFAULT_TOKEN}"
    standin.add_chat(CHAT)
    status, _ = await raw(
        http, f"{api}/sendMessage", json={"chat_id": CHAT, "text": "x", "colour": "red"}
    )
    assert status == 200  # an unknown parameter
    markup = {"inline_keyboard": [[{"text": "A", "callback_data": "a", "shade": 1}]]}
    status, _ = await raw(
        http, f"{api}/sendMessage", json={"chat_id": CHAT, "text": "y", "reply_markup": markup}
    )
    assert status == 200  # an unknown field in a JSON object
    status, _ = await raw(
        http, f"{api}/getUpdates", json={"allowed_updates": ["message", "mesage"]}
    )
    assert status == 200  # an unknown update type
    assert [m.text for m in standin.chat_messages(CHAT)] == ["x", "y"]


async def test_flood_answer_shape(http: aiohttp.ClientSession) -> None:
    async with StandIn(flood=FloodLimits(per_chat=1), clock=FakeClock()) as standin:
        standin.add_chat(CHAT)
        url = f"{standin.base_url}{DEFAULT_TOKEN}/sendMessage"
        await raw(http, url, json={"chat_id": CHAT, "text": "one"})
        status, body = await raw(http, url, json={"chat_id": CHAT, "text": "two"})
    assert (status, body) == (
        429,
        {
            "ok": False,
            "error_code": 429,
            "description": "Too Many Requests: retry after 1",
            "parameters": {"retry_after": 1},
        },
    )


# ----- other methods ------------------------------------------------------------------------


async def test_commands_webhook_actions_and_deletion(bot: Bot, standin: StandIn) -> None:
    assert await bot.set_my_commands([("start", "Begin"), ("help", "Get help")])
    assert [c.command for c in await bot.get_my_commands()] == ["start", "help"]
    assert standin.commands()[0] == {"command": "start", "description": "Begin"}
    with pytest.raises(BadRequest, match=said("bot_command_invalid")):
        await bot.set_my_commands([("Not A Command", "x")])

    assert await bot.set_webhook("https://example.com/hook")
    assert (await bot.get_webhook_info()).url == "https://example.com/hook"
    with pytest.raises(Conflict, match="webhook is active"):
        await bot.get_updates()
    assert await bot.delete_webhook(drop_pending_updates=True)

    mine = standin.inject_message(CHAT, text="secret")
    assert await bot.send_chat_action(CHAT, "typing")
    assert standin.chat_actions(CHAT) == ["typing"]
    assert await bot.delete_message(CHAT, mine["message_id"])
    assert standin.chat_messages(CHAT) == []
    with pytest.raises(BadRequest, match=said("message to delete not found")):
        await bot.delete_message(CHAT, mine["message_id"])
    assert await bot.close() and await bot.log_out()


# ----- divergences from Telegram, fixed (issue 11) ----------------------------------------


async def test_default_flood_limits_are_a_burst_of_three_then_one_per_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    assert (FloodLimits().per_chat, FloodLimits().per_chat_interval) == (3, 1.0)
    clock = FakeClock()
    async with StandIn(clock=clock) as standin, connect(standin) as bot:
        standin.add_chat(CHAT)
        first = await bot.send_message(CHAT, "1", reply_markup=keyboard("a"))
        await bot.send_message(CHAT, "2")
        await bot.edit_message_text("1, edited", CHAT, first.message_id)  # edits count too
        with pytest.raises(RetryAfter) as caught:
            await bot.send_message(CHAT, "4")
        assert caught.value.retry_after.total_seconds() == 1  # type: ignore[union-attr]
        query_id = standin.press_button(CHAT, first.message_id, "a", forge=True)
        assert await bot.answer_callback_query(query_id)  # not counted
        assert await bot.send_chat_action(CHAT, "typing")  # not counted
        standin.add_chat(CHAT + 1)
        await bot.send_message(CHAT + 1, "another chat has its own budget")
        for _ in range(3):  # sustained: one per second
            clock.advance(1.0)
            await bot.send_message(CHAT, "steady")
            with pytest.raises(RetryAfter):
                await bot.send_message(CHAT, "too soon")
        clock.advance(10)  # an idle chat earns its burst back, no more
        for _ in range(3):
            await bot.send_message(CHAT, "burst")
        with pytest.raises(RetryAfter):
            await bot.send_message(CHAT, "over")
        assert standin.flood_refusals(CHAT) == 5


async def test_a_too_late_answer_gets_telegrams_400(http: aiohttp.ClientSession) -> None:
    clock = FakeClock()
    async with StandIn(callback_query_ttl=15, clock=clock) as standin, connect(standin) as bot:
        standin.add_chat(CHAT)
        sent = await bot.send_message(CHAT, "Pick", reply_markup=keyboard("a"))
        in_time = standin.press_button(CHAT, sent.message_id, "a")
        late = standin.press_button(CHAT, sent.message_id, "a")
        clock.advance(15)
        assert await bot.answer_callback_query(in_time)  # at the limit: still in time
        clock.advance(0.5)
        status, body = await raw(
            http,
            f"{standin.base_url}{DEFAULT_TOKEN}/answerCallbackQuery",
            json={"callback_query_id": late, "text": "too late"},
        )
    assert (status, body["description"]) == (
        400,
        "Bad Request: query is too old and response timeout expired or query ID is invalid",
    )
    assert StandIn().state.callback_query_ttl is None  # the default stays configurable: none


async def test_an_inline_button_has_exactly_one_action(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CHAT)
    both = {"text": "Go", "callback_data": "go", "url": "https://example.com"}
    with pytest.raises(
        BadRequest, match=said("exactly one action is allowed, got url, callback_data")
    ):
        await bot.send_message(CHAT, "x", reply_markup={"inline_keyboard": [[both]]})  # type: ignore[arg-type]
    with pytest.raises(BadRequest, match=said("text buttons are unallowed in the inline keyboard")):
        await bot.send_message(CHAT, "x", reply_markup={"inline_keyboard": [[{"text": "Go"}]]})  # type: ignore[arg-type]
    await bot.send_message(CHAT, "ok", reply_markup=keyboard("go"))
    assert [m.text for m in standin.chat_messages(CHAT)] == ["ok"]


async def test_set_my_commands_limits_and_scopes(
    bot: Bot, standin: StandIn, http: aiohttp.ClientSession
) -> None:
    standin.add_chat(CHAT, username="ana")
    group = -1001234567890
    standin.inject_message(group, 7, "hi")
    help_ = [("help", "Help")]
    refused = [
        ({"commands": [("c", "d")] * 101}, "BOT_COMMANDS_TOO_MUCH"),
        ({"commands": [("x" * 33, "d")]}, "BOT_COMMAND_INVALID"),
        ({"commands": [("help", "")]}, "BOT_COMMAND_DESCRIPTION_INVALID"),
        ({"commands": [("help", "d" * 257)]}, "BOT_COMMAND_DESCRIPTION_INVALID"),
        ({"commands": help_, "language_code": "eng"}, "LANG_CODE_INVALID"),
        ({"commands": help_, "scope": BotCommandScopeChat(777)}, "chat not found"),
        (
            {"commands": help_, "scope": BotCommandScopeChatMember(group, 0)},
            "can't parse BotCommandScope: Invalid user_id specified",
        ),
    ]
    for kwargs, description in refused:
        with pytest.raises(BadRequest, match=said(description)):
            await bot.set_my_commands(**kwargs)  # type: ignore[arg-type]
    assert await bot.set_my_commands([("a" * 32, "d" * 256)] * 100)  # the limits themselves

    await bot.set_my_commands([("start", "Start")], language_code="zh")
    await bot.set_my_commands([("runs", "Runs")], scope=BotCommandScopeChat("@ana"))
    await bot.set_my_commands([("mod", "Moderate")], scope=BotCommandScopeChatMember(group, 7))
    await bot.set_my_commands([("admin", "Admin")], scope=BotCommandScopeAllChatAdministrators())
    assert [c.command for c in await bot.get_my_commands(language_code="zh")] == ["start"]
    assert [c.command for c in await bot.get_my_commands(scope=BotCommandScopeChat(CHAT))] == [
        "runs"
    ]
    assert await bot.get_my_commands(scope=BotCommandScopeChat(CHAT), language_code="zh") == ()
    assert standin.commands({"type": "chat", "chat_id": CHAT})[0]["command"] == "runs"
    assert standin.commands({"type": "chat_member", "chat_id": group, "user_id": 7}) == [
        {"command": "mod", "description": "Moderate"}
    ]
    assert standin.commands({"type": "all_chat_administrators"})[0]["command"] == "admin"
    assert standin.commands(language_code="zh") == [{"command": "start", "description": "Start"}]
    scope = json.dumps({"type": "chat", "chat_id": "@ana"})
    async with http.get(f"{standin.url}/_test/commands", params={"scope": scope}) as response:
        assert [c["command"] for c in (await response.json())["result"]] == ["runs"]
    assert await bot.delete_my_commands(scope=BotCommandScopeChat(CHAT))
    assert standin.commands({"type": "chat", "chat_id": CHAT}) == []


async def test_explicit_entities_are_checked_in_utf16(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CHAT)
    text = "😀 bold"  # the emoji is two UTF-16 units: "bold" is at 3, not 2
    sent = await bot.send_message(CHAT, text, entities=[MessageEntity("bold", 3, 4)])
    assert [(e.offset, e.length) for e in sent.entities] == [(3, 4)]
    refused = [
        (
            MessageEntity("bold", 3, 5),
            "entity beginning at UTF-16 offset 3 ends after the end of the text at UTF-16 offset 8",
        ),
        (MessageEntity("bold", 9, 1), "entity begins after the end of the text at UTF-16 offset 9"),
        (MessageEntity("bold", -1, 1), "receive an entity with incorrect offset -1"),
        (MessageEntity("bold", 0, -2), "receive an entity with incorrect length -2"),
        (MessageEntity("text_link", 0, 1), "can't parse MessageEntity: Can't find field \"url\""),
        (
            MessageEntity("text_link", 0, 1, url="not a url"),
            "entity URL 'not a url' is invalid: Wrong HTTP URL",
        ),
        (MessageEntity("blink", 0, 1), "can't parse MessageEntity: Unsupported type specified"),
    ]
    for entity, description in refused:
        with pytest.raises(BadRequest, match=said(description)):
            await bot.send_message(CHAT, text, entities=[entity])
    edited = await bot.edit_message_text(
        text, CHAT, sent.message_id, entities=[MessageEntity("italic", 0, 2)]
    )
    assert not isinstance(edited, bool) and edited.entities[0].type == "italic"
    with pytest.raises(BadRequest, match=said("ends after the end of the text")):
        await bot.edit_message_text(
            "short", CHAT, sent.message_id, entities=[MessageEntity("bold", 0, 6)]
        )


async def test_webhook_settings_are_checked(bot: Bot, standin: StandIn) -> None:
    refused = [
        (
            {"url": "http://example.com/hook"},
            "bad webhook: an https url must be provided for webhook",
        ),
        (
            {"url": "https://example.com:1234/hook"},
            "bad webhook: webhook can be set up only on ports 80, 88, 443 or 8443",
        ),
        (
            {"url": "https://example.com/hook", "secret_token": "a b"},
            "secret token contains unallowed characters",
        ),
        (
            {"url": "https://example.com/hook", "secret_token": "s+/="},
            "secret token contains unallowed characters",
        ),
        (
            {"url": "https://example.com/hook", "secret_token": "s" * 257},
            "secret token is too long",
        ),
        (
            {"url": "https://example.com/hook", "max_connections": 0},
            "max_connections must be between 1 and 100",
        ),
        (
            {"url": "https://example.com/hook", "max_connections": 101},
            "max_connections must be between 1 and 100",
        ),
    ]
    for kwargs, description in refused:
        with pytest.raises(BadRequest, match=said(description)):
            await bot.set_webhook(**kwargs)  # type: ignore[arg-type]
        assert (await bot.get_webhook_info()).url == ""
    secret = "A-z_0-9" + "s" * 249  # 256 characters
    assert await bot.set_webhook(
        "https://example.com:8443/hook", secret_token=secret, max_connections=100
    )
    info = await bot.get_webhook_info()
    assert (info.url, info.max_connections) == ("https://example.com:8443/hook", 100)
    assert await bot.set_webhook("")  # an empty url removes it
    assert (await bot.get_webhook_info()).url == ""


class WebhookReceiver:
    """A bot's webhook endpoint for tests: answers with the statuses it is told to."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.received: list[tuple[dict[str, Any], str | None]] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append((await request.json(), request.headers.get(SECRET_HEADER)))
        return web.Response(status=self.statuses.pop(0) if self.statuses else 200)

    async def __aenter__(self) -> WebhookReceiver:
        app = web.Application()
        app.router.add_post("/telegram", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/telegram"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


FAST_RETRY = WebhookRetry(attempts=3, first_delay=0.01)


async def test_a_webhook_gets_every_update_by_post_with_the_secret_and_retries() -> None:
    async with (
        WebhookReceiver([500, 502]) as receiver,
        StandIn(webhook_retry=FAST_RETRY) as standin,
        connect(standin) as bot,
    ):
        standin.inject_message(CHAT, text="queued before the webhook")
        assert await bot.set_webhook(receiver.url, secret_token="s3cret_-")
        standin.inject_message(CHAT, text="after")
        await standin.wait_for(
            lambda: len(receiver.received) == 4 and not standin.pending_updates()
        )
        texts = [update["message"]["text"] for update, _ in receiver.received]
        assert texts == ["queued before the webhook"] * 3 + ["after"]  # 500, 502, then 200
        assert {secret for _, secret in receiver.received} == {"s3cret_-"}
        assert [d.status for d in standin.webhook_deliveries()] == [500, 502, 200, 200]
        info = await bot.get_webhook_info()
        assert info.last_error_message == "Wrong response from the webhook: 502 Bad Gateway"
        assert info.pending_update_count == 0
        with pytest.raises(Conflict, match="webhook is active"):
            await bot.get_updates()

        assert await bot.delete_webhook()
        standin.inject_message(CHAT, text="kept for getUpdates")
        (update,) = await bot.get_updates()
        assert update.message is not None and update.message.text == "kept for getUpdates"
        assert len(receiver.received) == 4  # nothing was posted after deleteWebhook


async def test_a_webhook_that_keeps_failing_loses_the_update_after_bounded_retries() -> None:
    async with (
        WebhookReceiver([500] * 3) as receiver,
        StandIn(webhook_retry=FAST_RETRY) as standin,
        connect(standin) as bot,
    ):
        await bot.set_webhook(receiver.url)
        standin.inject_message(CHAT, text="lost")
        standin.inject_message(CHAT, text="next")
        await standin.wait_for(lambda: len(receiver.received) == 4)
        assert [u["message"]["text"] for u, _ in receiver.received] == ["lost"] * 3 + ["next"]
        assert receiver.received[0][1] is None  # no secret, no header
    async with StandIn(webhook_retry=FAST_RETRY) as standin, connect(standin) as bot:
        await bot.set_webhook("http://127.0.0.1:9/telegram")  # nothing listens there
        standin.inject_message(CHAT, text="refused")
        await standin.wait_for(lambda: len(standin.webhook_deliveries()) == 3)
        assert (await bot.get_webhook_info()).last_error_message == "Connection refused"


async def test_a_ptb_application_in_webhook_mode_round_trip(standin: StandIn) -> None:
    async def echo(update: Update, context: Any) -> None:
        assert update.effective_chat is not None and update.effective_message is not None
        await context.bot.send_message(
            update.effective_chat.id, f"got {update.effective_message.text}"
        )

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app: Application[Any, Any, Any, Any, Any, Any] = (
        ApplicationBuilder()
        .token(DEFAULT_TOKEN)
        .base_url(standin.base_url)
        .base_file_url(standin.base_file_url)
        .build()
    )
    app.add_handler(CommandHandler("start", echo))
    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_webhook(
            listen="127.0.0.1",
            port=port,
            url_path="telegram",
            webhook_url=f"http://127.0.0.1:{port}/telegram",
            secret_token="s3cret",
        )
        standin.inject_message(CHAT, text="/start")
        (answer,) = await standin.wait_for_bot_messages(CHAT, timeout=8)
        await app.updater.stop()
        await app.stop()
    assert answer.text == "got /start"
    assert standin.webhook_deliveries()[0].ok


# ----- the test-side HTTP API ---------------------------------------------------------------


async def test_test_api_over_http(bot: Bot, standin: StandIn, http: aiohttp.ClientSession) -> None:
    test_api = f"{standin.url}/_test"
    status, body = await raw(
        http, f"{test_api}/inject_message", json={"chat_id": CHAT, "text": "hi"}
    )
    assert status == 200 and body["result"]["text"] == "hi"
    (update,) = await bot.get_updates()

    await raw(http, f"{test_api}/fail_next", json={"method": "sendMessage", "status": 502})
    with pytest.raises(NetworkError):
        await bot.send_message(CHAT, "lost")
    sent = await bot.send_message(CHAT, "Pick", reply_markup=keyboard("go"))
    status, body = await raw(
        http, f"{test_api}/wait_for_call", json={"method": "sendMessage", "count": 2}
    )
    assert status == 200 and body["result"]["status"] == 200

    async with http.get(f"{test_api}/chat_messages", params={"chat_id": CHAT}) as response:
        shown = (await response.json())["result"]
    assert [m["text"] for m in shown] == ["hi", "Pick"]
    assert shown[1]["buttons"] == [[{"text": "GO", "callback_data": "go"}]]

    press = {"chat_id": CHAT, "message_id": sent.message_id, "callback_data": "nope"}
    status, body = await raw(http, f"{test_api}/press_button", json=press)
    assert status == 400 and "no button" in body["description"]
    status, body = await raw(
        http, f"{test_api}/press_button", json={**press, "callback_data": "go"}
    )
    query_id = body["result"]["callback_query_id"]
    await bot.answer_callback_query(query_id, text="Going")
    async with http.get(f"{test_api}/callback_answers", params={"query_id": query_id}) as response:
        assert [a["text"] for a in (await response.json())["result"]] == ["Going"]
    async with http.get(f"{test_api}/stats") as response:
        assert (await response.json())["result"]["pending_updates"] == 2


async def test_wait_for_reports_a_timeout(standin: StandIn) -> None:
    with pytest.raises(TimeoutError, match=re.escape("condition not met within 0.05s")):
        await standin.wait_for(lambda: False, timeout=0.05)


# ----- the real thing: a PTB Application polling the stand-in ------------------------------


async def test_application_round_trip(standin: StandIn) -> None:
    async def start(update: Update, context: Any) -> None:
        assert update.effective_chat is not None
        await context.bot.send_message(
            update.effective_chat.id, "Shall we begin?", reply_markup=keyboard("begin")
        )

    async def pressed(update: Update, context: Any) -> None:
        query = update.callback_query
        assert query is not None
        await query.answer("Starting")
        await query.edit_message_text(f"You chose {query.data}")

    app: Application[Any, Any, Any, Any, Any, Any] = (
        ApplicationBuilder()
        .token(DEFAULT_TOKEN)
        .base_url(standin.base_url)
        .base_file_url(standin.base_file_url)
        .build()
    )
    app.add_handler(CommandHandler("start", start))
    app.add_handler(CallbackQueryHandler(pressed))
    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(timeout=5)
        standin.inject_message(CHAT, text="/start")
        (question,) = await standin.wait_for_bot_messages(CHAT)
        query_id = standin.press_button_by_text(CHAT, "BEGIN")
        await standin.wait_for(
            lambda: (
                bool(standin.callback_answers(query_id))
                and standin.chat_messages(CHAT)[-1].edit_count == 1
            )
        )
        await app.updater.stop()
        await app.stop()
    final = standin.chat_messages(CHAT)[-1]
    assert (final.text, final.buttons, final.history) == (
        "You chose begin",
        (),
        ("Shall we begin?",),
    )
    assert standin.callback_answers(query_id)[0].text == "Starting"


async def test_python_m_standin_serves_until_terminated(http: aiohttp.ClientSession) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "stepwise",
        "standin",
        "--port",
        "0",
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        urls = json.loads(await asyncio.wait_for(process.stdout.readline(), 8 * PATIENCE))
        async with http.get(f"{urls['base_url']}{DEFAULT_TOKEN}/getMe") as response:
            assert (await response.json())["result"]["username"] == "stepwise_test_bot"
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), 5 * PATIENCE) == 0
