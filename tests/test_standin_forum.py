"""The stand-in's chat information, forum topics and message copies, over real HTTP.

What human handoff needs from Telegram: check the staff group (`getChat`, `getChatMember`),
open, rename, close, reopen and delete one topic per customer, and relay messages both
ways with `copyMessage`. Every call goes through python-telegram-bot to the stand-in, and
the shared `standin` fixture checks every request, answer and update against the vendored
Bot API specification after each test.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from telegram import Bot, ChatFullInfo, ChatMemberAdministrator, ForumTopic, MessageEntity
from telegram.constants import ChatMemberStatus
from telegram.error import BadRequest, Forbidden

from standin import FloodLimits, StandIn
from standin.webchat import StaffDesk, WebChat, prepare_staff_group

CUSTOMER = 4242
STAFF = 77
OTHER_STAFF = 78
STRANGER = 79
FORUM = -1005555555555
GROUP = -1006666666666  # a supergroup without topics
ROOMY = FloodLimits(per_chat=50, per_group=50)  # tests that relay many messages at once


def said(description: str) -> str:
    """Match a Telegram description in a PTB error (PTB re-capitalises the first letter)."""
    return "(?i)" + re.escape(description)


@pytest.fixture
async def bot(standin: StandIn) -> AsyncIterator[Bot]:
    async with Bot(
        "123456789:AAStandInTokenForLocalTests_0123456789",
        base_url=standin.base_url,
        base_file_url=standin.base_file_url,
    ) as client:
        yield client


def staff_forum(standin: StandIn, *, admin: bool = True, **bot_rights: bool) -> None:
    """The staff group: a forum made by STAFF, the bot an administrator with `bot_rights`
    (or, without `admin`, a plain member)."""
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    if admin:
        standin.set_bot_rights(FORUM, **bot_rights)


# ----- getChat and getChatMember -----------------------------------------------------------


async def test_get_chat_describes_a_private_chat_and_a_forum(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CUSTOMER, first_name="Ana", username="ana")
    staff_forum(standin)
    private = await bot.get_chat(CUSTOMER)
    assert isinstance(private, ChatFullInfo)
    assert (private.type, private.first_name, private.username) == ("private", "Ana", "ana")
    assert not private.is_forum and private.accepted_gift_types is not None
    forum = await bot.get_chat(FORUM)
    assert (forum.type, forum.title, forum.is_forum) == ("supergroup", "Support staff", True)
    assert forum.permissions is not None and forum.permissions.can_send_messages
    standin.add_chat(GROUP, STAFF, title="Plain")
    assert not (await bot.get_chat(GROUP)).is_forum
    with pytest.raises(BadRequest, match=said("chat not found")):
        await bot.get_chat(-1009999999999)
    standin.set_bot_rights(FORUM, "left")
    with pytest.raises(Forbidden, match=said("bot is not a member of the supergroup chat")):
        await bot.get_chat(FORUM)


async def test_get_chat_member_reports_the_bot_rights_and_the_staff(
    bot: Bot, standin: StandIn
) -> None:
    staff_forum(standin, admin=False)
    me = await bot.get_chat_member(FORUM, bot.id)
    assert me.status == ChatMemberStatus.MEMBER  # added, not yet promoted
    promoted = standin.set_bot_rights(FORUM, can_manage_topics=True)
    assert promoted["status"] == "administrator" and promoted["can_manage_topics"] is True
    me = await bot.get_chat_member(FORUM, bot.id)
    assert isinstance(me, ChatMemberAdministrator)
    assert me.can_manage_topics and me.can_delete_messages and not me.can_promote_members

    assert (await bot.get_chat_member(FORUM, STAFF)).status == ChatMemberStatus.OWNER
    standin.set_member(
        FORUM, OTHER_STAFF, "administrator", first_name="Lee", can_manage_topics=True
    )
    other = await bot.get_chat_member(FORUM, OTHER_STAFF)
    assert isinstance(other, ChatMemberAdministrator) and other.can_manage_topics
    assert other.user.first_name == "Lee"
    standin.inject_message(CUSTOMER, text="hi")  # a user the bot knows, not in the group
    assert (await bot.get_chat_member(FORUM, CUSTOMER)).status == ChatMemberStatus.LEFT
    standin.inject_service_message(FORUM, "new_chat_members", user_id=STRANGER)
    assert (await bot.get_chat_member(FORUM, STRANGER)).status == ChatMemberStatus.MEMBER
    standin.inject_service_message(FORUM, "left_chat_member", user_id=STRANGER)
    assert (await bot.get_chat_member(FORUM, STRANGER)).status == ChatMemberStatus.LEFT
    with pytest.raises(BadRequest, match=said("user not found")):
        await bot.get_chat_member(FORUM, 123)
    assert (await bot.get_chat_member(CUSTOMER, CUSTOMER)).status == ChatMemberStatus.MEMBER
    with pytest.raises(ValueError, match="unknown administrator rights"):
        standin.set_bot_rights(FORUM, can_manage_topic=True)


async def test_rights_changes_can_tell_the_bot(bot: Bot, standin: StandIn) -> None:
    staff_forum(standin)
    standin.set_bot_rights(FORUM, "administrator", user_id=STAFF, can_manage_topics=True)
    (update,) = await bot.get_updates()
    change = update.my_chat_member
    assert change is not None and change.from_user.id == STAFF
    assert change.old_chat_member.status == ChatMemberStatus.ADMINISTRATOR  # silent before
    new = change.new_chat_member
    assert isinstance(new, ChatMemberAdministrator) and new.can_manage_topics


# ----- forum topics ------------------------------------------------------------------------


async def test_create_forum_topic_opens_a_topic_with_its_service_message(
    bot: Bot, standin: StandIn
) -> None:
    staff_forum(standin, can_manage_topics=True)
    topic = await bot.create_forum_topic(FORUM, "Ana (4242)", icon_color=0xFFD67E)
    assert isinstance(topic, ForumTopic)
    assert (topic.name, topic.icon_color) == ("Ana (4242)", 0xFFD67E)
    thread = topic.message_thread_id
    (created,) = standin.chat_messages(FORUM)
    assert (created.message_id, created.kind, created.from_bot) == (
        thread,
        "forum_topic_created",
        True,
    )
    assert created.message_thread_id == thread
    (update,) = await bot.get_updates()  # Telegram tells the bot even about its own topic
    assert update.message is not None and update.message.forum_topic_created is not None
    assert update.message.from_user is not None and update.message.from_user.id == bot.id
    assert update.message.message_thread_id == thread and update.message.is_topic_message

    sent = await bot.send_message(FORUM, "Header", message_thread_id=thread)
    assert sent.message_thread_id == thread
    assert sent.reply_to_message is not None  # a topic's messages answer its first one
    assert sent.reply_to_message.message_id == thread
    assert standin.topics(FORUM) == [
        {"message_thread_id": thread, "name": "Ana (4242)", "icon_color": 0xFFD67E, "closed": False}
    ]
    long = await bot.create_forum_topic(FORUM, "x" * 200)
    assert long.name == "x" * 128  # Telegram cuts long names rather than refusing them


async def test_create_forum_topic_refusals(bot: Bot, standin: StandIn) -> None:
    standin.add_chat(CUSTOMER)
    standin.add_chat(GROUP, STAFF, title="Plain")
    standin.set_bot_rights(GROUP, can_manage_topics=True)
    staff_forum(standin)
    with pytest.raises(BadRequest, match=said("the chat is not a forum")):
        await bot.create_forum_topic(GROUP, "Ana")
    with pytest.raises(BadRequest, match=said("the chat is not a forum")):
        await bot.create_forum_topic(CUSTOMER, "Ana")
    with pytest.raises(BadRequest, match=said("not enough rights to create a topic")):
        await bot.create_forum_topic(FORUM, "Ana")  # an administrator, but not of topics
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    with pytest.raises(BadRequest, match=said("title must be non-empty")):
        await bot.create_forum_topic(FORUM, "   ")
    with pytest.raises(BadRequest, match=said("invalid icon color specified")):
        await bot.create_forum_topic(FORUM, "Ana", icon_color=0x123456)
    standin.set_bot_rights(FORUM, "kicked")
    with pytest.raises(Forbidden, match=said("bot was kicked from the supergroup chat")):
        await bot.create_forum_topic(FORUM, "Ana")
    assert standin.topics(FORUM) == []


async def test_edit_close_reopen_a_topic_with_service_messages(bot: Bot, standin: StandIn) -> None:
    staff_forum(standin, can_manage_topics=True)
    thread = (await bot.create_forum_topic(FORUM, "Ana")).message_thread_id
    assert await bot.edit_forum_topic(FORUM, thread, name="Ana (closed soon)")
    assert await bot.edit_forum_topic(FORUM, thread)  # nothing asked: accepted, no change
    with pytest.raises(BadRequest, match=said("TOPIC_NOT_MODIFIED")):
        await bot.edit_forum_topic(FORUM, thread, name="Ana (closed soon)")
    assert await bot.close_forum_topic(FORUM, thread)
    with pytest.raises(BadRequest, match=said("TOPIC_NOT_MODIFIED")):
        await bot.close_forum_topic(FORUM, thread)
    assert standin.topics(FORUM)[0]["closed"] is True
    # Administrators who manage topics still write in a closed topic; nobody else can.
    await bot.send_message(FORUM, "closed, but the bot may write", message_thread_id=thread)
    standin.inject_message(FORUM, STAFF, "the owner may too", message_thread_id=thread)
    standin.inject_message(FORUM, STRANGER, "hello?")  # in General: fine
    with pytest.raises(ValueError, match="closed"):
        standin.inject_message(FORUM, STRANGER, "let me in", message_thread_id=thread)
    assert await bot.reopen_forum_topic(FORUM, thread)
    with pytest.raises(BadRequest, match=said("TOPIC_NOT_MODIFIED")):
        await bot.reopen_forum_topic(FORUM, thread)
    standin.inject_message(FORUM, STRANGER, "now I can", message_thread_id=thread)

    service = [
        u.message
        for u in await bot.get_updates()
        if u.message is not None
        and u.message.from_user is not None
        and u.message.from_user.id == bot.id
    ]
    assert service[0].forum_topic_created is not None
    assert service[1].forum_topic_edited is not None
    assert service[1].forum_topic_edited.name == "Ana (closed soon)"
    assert service[2].forum_topic_closed is not None
    assert service[3].forum_topic_reopened is not None
    assert all(m.message_thread_id == thread for m in service)
    assert standin.topics(FORUM)[0]["name"] == "Ana (closed soon)"


async def test_a_closed_topic_refuses_a_bot_that_cannot_manage_topics(
    bot: Bot, standin: StandIn
) -> None:
    staff_forum(standin, can_manage_topics=True)
    thread = (await bot.create_forum_topic(FORUM, "Ana")).message_thread_id
    await bot.close_forum_topic(FORUM, thread)
    standin.set_bot_rights(FORUM)  # still an administrator, no longer of topics
    with pytest.raises(BadRequest, match=said("TOPIC_CLOSED")):
        await bot.send_message(FORUM, "hello", message_thread_id=thread)
    assert await bot.reopen_forum_topic(FORUM, thread)  # its own topic: allowed anyway
    await bot.send_message(FORUM, "hello", message_thread_id=thread)


async def test_rights_over_topics_the_bot_did_not_create(bot: Bot, standin: StandIn) -> None:
    staff_forum(standin)
    standin.set_bot_rights(FORUM, can_delete_messages=False)
    thread = standin.add_topic(FORUM, "Staff chat", user_id=STAFF)
    with pytest.raises(BadRequest, match=said("not enough rights to edit the topic")):
        await bot.edit_forum_topic(FORUM, thread, name="Mine now")
    with pytest.raises(BadRequest, match=said("not enough rights to close or open the topic")):
        await bot.close_forum_topic(FORUM, thread)
    with pytest.raises(BadRequest, match=said("not enough rights to delete the topic")):
        await bot.delete_forum_topic(FORUM, thread)
    standin.set_bot_rights(FORUM, can_manage_topics=True, can_delete_messages=True)
    assert await bot.close_forum_topic(FORUM, thread)
    assert await bot.delete_forum_topic(FORUM, thread)
    standin.add_chat(CUSTOMER)
    with pytest.raises(BadRequest, match=said("the chat is not a forum")):
        await bot.close_forum_topic(CUSTOMER, thread)


async def test_a_deleted_topic_is_gone_with_its_messages(bot: Bot, standin: StandIn) -> None:
    staff_forum(standin, can_manage_topics=True)
    thread = (await bot.create_forum_topic(FORUM, "Ana")).message_thread_id
    await bot.send_message(FORUM, "Header", message_thread_id=thread)
    standin.inject_message(FORUM, STAFF, "in General")
    assert await bot.delete_forum_topic(FORUM, thread)  # its own topic, no delete right needed
    assert [m.text for m in standin.chat_messages(FORUM)] == ["in General"]
    assert standin.topics(FORUM) == []
    with pytest.raises(BadRequest, match=said("message thread not found")):
        await bot.send_message(FORUM, "still there?", message_thread_id=thread)
    for call in (bot.edit_forum_topic, bot.close_forum_topic, bot.delete_forum_topic):
        with pytest.raises(BadRequest, match=said("TOPIC_ID_INVALID")):
            await call(FORUM, thread)
    with pytest.raises(ValueError, match="deleted"):
        standin.inject_message(FORUM, STAFF, "hello?", message_thread_id=thread)
    again = await bot.create_forum_topic(FORUM, "Ana")  # recreated: a new id
    assert again.message_thread_id != thread


# ----- copyMessage ---------------------------------------------------------------------------


@pytest.mark.standin(flood=ROOMY)
async def test_copy_relays_text_and_media_into_a_topic_and_back(bot: Bot, standin: StandIn) -> None:
    staff_forum(standin, can_manage_topics=True)
    thread = (await bot.create_forum_topic(FORUM, "Ana (4242)")).message_thread_id
    text = standin.inject_message(CUSTOMER, text="/human please", first_name="Ana")
    photo = standin.inject_message(CUSTOMER, text="the parcel", photo=True)
    document = standin.inject_message(CUSTOMER, document=True)
    voice = standin.inject_message(CUSTOMER, voice=True)

    copied = []
    for original in (text, photo, document, voice):
        result = await bot.copy_message(
            FORUM, CUSTOMER, original["message_id"], message_thread_id=thread
        )
        copied.append(result.message_id)
    shown = {m.message_id: m for m in standin.chat_messages(FORUM)}
    relayed = [shown[i] for i in copied]
    assert [m.kind for m in relayed] == ["text", "photo", "document", "voice"]
    assert all(m.from_bot and m.message_thread_id == thread for m in relayed)
    assert relayed[0].text == "/human please"
    assert relayed[0].entities == ({"type": "bot_command", "offset": 0, "length": 6},)
    assert relayed[1].caption == "the parcel"

    updates = await bot.get_updates()
    by_id = {u.message.message_id: u.message for u in updates if u.message is not None}
    customer_photo = by_id[photo["message_id"]]
    customer_document = by_id[document["message_id"]]
    assert customer_photo.photo and customer_document.document is not None
    file = await bot.get_file(customer_document.document.file_id)
    assert file.file_path and (await file.download_as_bytearray())

    # Staff answer inside the topic; the bot copies the answer back to the customer.
    answer = standin.inject_message(
        FORUM, STAFF, "Sorry! A new one is on its way.", message_thread_id=thread
    )
    picture = standin.inject_message(FORUM, STAFF, "label", photo=True, message_thread_id=thread)
    for original in (answer, picture):
        await bot.copy_message(CUSTOMER, FORUM, original["message_id"])
    back = standin.bot_messages(CUSTOMER)
    assert [m.text or m.caption for m in back] == ["Sorry! A new one is on its way.", "label"]
    assert back[0].message_thread_id is None
    delivered = standin.state.message_json(standin.state.messages[(CUSTOMER, back[1].message_id)])
    assert delivered["photo"] == picture["photo"]  # the same file, reused
    assert "forward_origin" not in delivered and delivered["from"]["id"] == bot.id


async def test_copy_replaces_or_removes_a_caption_and_takes_markup(
    bot: Bot, standin: StandIn
) -> None:
    photo = standin.inject_message(CUSTOMER, text="old caption", photo=True)
    new = await bot.copy_message(
        CUSTOMER, CUSTOMER, photo["message_id"], caption="<b>new</b> caption", parse_mode="HTML"
    )
    bare = await bot.copy_message(CUSTOMER, CUSTOMER, photo["message_id"], caption="")
    shown = {m.message_id: m for m in standin.chat_messages(CUSTOMER)}
    assert shown[new.message_id].caption == "new caption"
    assert shown[new.message_id].entities == ({"type": "bold", "offset": 0, "length": 3},)
    assert shown[bare.message_id].caption is None
    text = standin.inject_message(CUSTOMER, text="plain")
    entities = [MessageEntity("italic", 0, 5)]
    kept = await bot.copy_message(
        CUSTOMER, CUSTOMER, text["message_id"], caption="ignored", caption_entities=entities
    )
    assert standin.chat_messages(CUSTOMER)[-1].message_id == kept.message_id
    assert standin.chat_messages(CUSTOMER)[-1].text == "plain"  # text has no caption


@pytest.mark.standin(flood=ROOMY)
async def test_a_copied_caption_can_be_edited_like_telegram_edits_it(
    bot: Bot, standin: StandIn
) -> None:
    photo = standin.inject_message(CUSTOMER, text="first", photo=True)
    copied = await bot.copy_message(CUSTOMER, CUSTOMER, photo["message_id"])
    edited = await bot.edit_message_caption(
        CUSTOMER, copied.message_id, caption="<i>second</i>", parse_mode="HTML"
    )
    assert not isinstance(edited, bool) and edited.caption == "second"
    assert edited.edit_date is not None and edited.photo
    with pytest.raises(BadRequest, match=said("message is not modified")):
        await bot.edit_message_caption(
            CUSTOMER, copied.message_id, caption="<i>second</i>", parse_mode="HTML"
        )
    removed = await bot.edit_message_caption(CUSTOMER, copied.message_id)
    assert not isinstance(removed, bool) and removed.caption is None
    text = await bot.send_message(CUSTOMER, "plain")
    with pytest.raises(BadRequest, match=said("there is no caption in the message to edit")):
        await bot.edit_message_caption(CUSTOMER, text.message_id, caption="x")
    with pytest.raises(BadRequest, match=said("message can't be edited")):
        await bot.edit_message_caption(CUSTOMER, photo["message_id"], caption="x")


async def test_copy_refusals(bot: Bot, standin: StandIn) -> None:
    staff_forum(standin, can_manage_topics=True)
    standin.inject_message(CUSTOMER, text="hi")
    thread = (await bot.create_forum_topic(FORUM, "Ana")).message_thread_id
    with pytest.raises(BadRequest, match=said("message to copy not found")):
        await bot.copy_message(FORUM, CUSTOMER, 999, message_thread_id=thread)
    with pytest.raises(BadRequest, match=said("message can't be copied")):
        await bot.copy_message(CUSTOMER, FORUM, thread)  # the forum_topic_created message
    with pytest.raises(BadRequest, match=said("chat not found")):
        await bot.copy_message(CUSTOMER, -1009999999999, 1)
    with pytest.raises(BadRequest, match=said("message thread not found")):
        await bot.copy_message(FORUM, CUSTOMER, 1, message_thread_id=thread + 50)
    with pytest.raises(BadRequest, match=said("message caption is too long")):
        photo = standin.inject_message(CUSTOMER, photo=True)
        await bot.copy_message(FORUM, CUSTOMER, photo["message_id"], caption="x" * 1025)
    standin.block_chat(CUSTOMER, notify=False)
    with pytest.raises(Forbidden, match=said("bot was blocked by the user")):
        await bot.copy_message(CUSTOMER, CUSTOMER, 1)


# ----- what staff do in the group ----------------------------------------------------------


async def test_staff_write_edit_and_join_in_the_staff_group(bot: Bot, standin: StandIn) -> None:
    staff_forum(standin, can_manage_topics=True)
    thread = (await bot.create_forum_topic(FORUM, "Ana")).message_thread_id
    sent = standin.inject_message(FORUM, STAFF, "first draft", message_thread_id=thread)
    standin.inject_edited_message(FORUM, STAFF, sent["message_id"], "final answer")
    standin.inject_service_message(FORUM, "new_chat_members", user_id=STAFF, members=[OTHER_STAFF])
    updates = await bot.get_updates()
    message = updates[1].message
    edited = updates[2].edited_message
    joined = updates[3].message
    assert message is not None and message.text == "first draft"
    assert edited is not None and edited.text == "final answer" and edited.edit_date is not None
    assert edited.message_thread_id == thread and edited.message_id == message.message_id
    assert joined is not None and [u.id for u in joined.new_chat_members] == [OTHER_STAFF]
    assert (await bot.get_chat_member(FORUM, OTHER_STAFF)).status == ChatMemberStatus.MEMBER
    standin.set_bot_rights(FORUM, can_manage_topics=True, can_delete_messages=False)
    with pytest.raises(BadRequest, match=said("message can't be deleted")):
        await bot.delete_message(FORUM, sent["message_id"])
    standin.set_bot_rights(FORUM, can_delete_messages=True)  # an admin may delete others'
    assert await bot.delete_message(FORUM, sent["message_id"])
    assert sent["message_id"] not in [m.message_id for m in standin.chat_messages(FORUM)]


async def test_forum_controls_over_the_test_api(bot: Bot, standin: StandIn) -> None:
    api = f"{standin.url}/_test"

    async def call(verb: str, endpoint: str, **body: Any) -> Any:
        async with (
            aiohttp.ClientSession() as http,
            http.request(verb, f"{api}/{endpoint}", json=body) as response,
        ):
            answer = await response.json()
        assert response.status == 200, answer
        return answer["result"]

    await call("POST", "chats", chat_id=FORUM, user_id=STAFF, is_forum=True, title="Staff")
    rights = {"can_manage_topics": True}
    promoted = await call("POST", "bot_rights", chat_id=FORUM, rights=rights)
    assert promoted["status"] == "administrator" and promoted["can_manage_topics"]
    member = await call(
        "POST", "members", chat_id=FORUM, user_id=OTHER_STAFF, status="administrator", rights=rights
    )
    assert member["user"]["id"] == OTHER_STAFF
    thread = (await bot.create_forum_topic(FORUM, "Ana")).message_thread_id
    topics = await call("GET", "forum_topics", chat_id=FORUM)
    assert [t["message_thread_id"] for t in topics] == [thread]
    document = await call("POST", "inject_message", chat_id=CUSTOMER, document=True, text="invoice")
    assert document["document"]["mime_type"] == "application/pdf"
    assert document["caption"] == "invoice"
    copied = await bot.copy_message(
        FORUM, CUSTOMER, document["message_id"], message_thread_id=thread
    )
    assert standin.chat_messages(FORUM)[-1].message_id == copied.message_id


# ----- the demo page's staff panel (the browser test drives the page itself) ----------------


async def test_the_staff_panel_api_writes_as_the_staff_member(bot: Bot, standin: StandIn) -> None:
    desk = StaffDesk(chat_id=FORUM, user_id=STAFF, first_name="Sam")
    prepare_staff_group(standin, desk)
    prepare_staff_group(standin, desk)  # idempotent: an existing group is kept
    page = WebChat(standin, user_id=CUSTOMER, staff=desk)
    await page.start()
    try:
        thread = (await bot.create_forum_topic(FORUM, "Ana")).message_thread_id
        async with aiohttp.ClientSession() as http:

            async def post(path: str, body: dict[str, Any]) -> tuple[int, Any]:
                async with http.post(page.url + path, json=body) as response:
                    return response.status, await response.json()

            assert await post("api/staff/send", {"topic": thread, "text": " hello "}) == (
                200,
                {"ok": True, "message_id": thread + 1},
            )
            status, _ = await post("api/staff/send", {"topic": "x", "text": "hi"})
            assert status == 400
            await bot.delete_forum_topic(FORUM, thread)
            status, answer = await post("api/staff/send", {"topic": thread, "text": "hi"})
            assert status == 400 and "deleted" in answer["description"]
            async with http.get(page.url + "api/state") as response:
                state = await response.json()
        assert state["staff"]["topics"] == [{"id": 0, "name": "General", "closed": False}]
        assert state["staff"]["messages"] == []  # the topic went with its messages
        sent = [u["message"] for u in standin.pending_updates() if "message" in u]
        staff_said = [m for m in sent if m["from"]["id"] == STAFF]
        assert [(m["text"], m["message_thread_id"]) for m in staff_said] == [("hello", thread)]
    finally:
        await page.stop()
