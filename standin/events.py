"""What people and Telegram do in chats, turned into the updates real Telegram sends.

A bot is only as robust as the updates it has been fed, and real Telegram sends far more
than plain text messages: edits of old messages, service messages ("X joined", a new
title, a pin), channel posts with no sender, messages inside forum topics, button
presses on messages the bot can no longer see, and changes of the bot's own membership.
Each is built here in the exact shape Telegram uses (the test suite checks every update
against the Bot API specification), stored where it belongs in the chat, and queued.

The test-side `Controls` resolve users and wake waiters; this module only shapes and
records, so each event has one definition whether a test or the /_test API causes it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from .botapi import object_problems, update_kinds
from .formatting import command_entities
from .markup import buttons
from .members import has_right, member_json
from .records import CallbackQuery, Chat, Member, StoredMessage, Topic, User
from .state import BotState
from .topics import ICON_COLORS, open_topic

JSON = dict[str, Any]

# Telegram gives bots a pressed message's content only while it is recent; older ones
# arrive as an InaccessibleMessage (date 0).
INACCESSIBLE_AFTER_S = 48 * 3600
GENERAL_TOPIC_ID = 1  # a forum's General topic: its messages carry no message_thread_id
SERVICE_KINDS = ("new_chat_members", "left_chat_member", "new_chat_title", "pinned_message")
MEMBER_STATUSES = ("member", "administrator", "left", "kicked")


class Events:
    """Event builders over one BotState; each returns the payload it queued."""

    def __init__(self, state: BotState) -> None:
        self.state = state

    # ----- messages --------------------------------------------------------------------

    def message(
        self,
        chat_id: int,
        user: User,
        *,
        text: str | None,
        media: JSON,
        caption: str | None,
        reply_to: int | None,
        title: str | None,
        thread_id: int | None = None,
    ) -> JSON:
        """A user writes into a chat (or into a forum topic): store it, queue `message`."""
        state = self.state
        chat = state.ensure_chat(chat_id, user, title)
        if reply_to is not None and state.find_message(chat_id, reply_to) is None:
            raise LookupError(f"message {reply_to} not found in chat {chat_id}")
        if thread_id is not None:
            _enter_topic(chat, thread_id, user)
        _join(chat, user)
        message = state.add_message(
            chat, user, text=text, caption=caption, media=media, reply_to=reply_to
        )
        message.thread_id = thread_id
        message.entities = command_entities(text or caption or "")
        return self._queue("message", message)

    def edit(self, chat_id: int, user: User | None, message_id: int, text: str) -> JSON:
        """The author edits a message: Telegram sends the whole message again, edited.

        User messages arrive as `edited_message`, channel posts as `edited_channel_post`.
        """
        state = self.state
        message = state.find_message(chat_id, message_id)
        if message is None:
            raise LookupError(f"message {message_id} not found in chat {chat_id}")
        if message.from_bot or message.service:
            raise ValueError(f"message {message_id} is not a user's text or caption")
        if message.sender is not None and (user is None or message.sender.id != user.id):
            raise ValueError(f"only user {message.sender.id} can edit message {message_id}")
        current = message.caption if message.media else message.text
        if text == current:
            raise ValueError("the new text is the same as the old one: Telegram sends no edit")
        message.record_edit(state.date())
        if message.media:
            message.caption = text
        else:
            message.text = text
        message.entities = command_entities(text)
        kind = "edited_channel_post" if message.sender is None else "edited_message"
        return self._queue(kind, message)

    def channel_post(
        self,
        chat_id: int,
        *,
        text: str | None,
        media: JSON,
        caption: str | None,
        title: str | None,
    ) -> JSON:
        """A post in a channel the bot administers: no `from`, the channel is `sender_chat`."""
        chat = self.state.ensure_chat(chat_id, None, title, channel=True)
        chat.bot_status = "administrator"  # bots read channels only as administrators
        message = self.state.add_message(chat, None, text=text, caption=caption, media=media)
        message.entities = command_entities(text or caption or "")
        return self._queue("channel_post", message)

    def service(
        self,
        chat_id: int,
        user: User,
        kind: str,
        *,
        members: Sequence[User] = (),
        title: str | None = None,
        pinned_message_id: int | None = None,
    ) -> JSON:
        """A service message: someone joined or left, the title changed, a message was pinned.

        Telegram sends these as ordinary `message` updates with no text; when the bot
        itself joins or leaves, a `my_chat_member` update follows, as on Telegram.
        """
        state = self.state
        if kind not in SERVICE_KINDS:
            raise ValueError(f"service message kind must be one of {SERVICE_KINDS}, not {kind!r}")
        chat = state.ensure_chat(chat_id, user)
        if kind != "pinned_message" and not chat.is_group:
            raise ValueError(f"{kind} happens in groups only; chat {chat_id} is {chat.type}")
        value: Any
        if kind == "new_chat_members":
            value = [member.to_api() for member in members or (user,)]
        elif kind == "left_chat_member":
            if len(members) > 1:
                raise ValueError("left_chat_member names one user")
            value = (members[0] if members else user).to_api()
        elif kind == "new_chat_title":
            if not title:
                raise ValueError("new_chat_title needs the new title")
            chat.title = value = title
        else:
            value = self._pinned(chat, pinned_message_id)
        message = state.add_message(chat, user, service={kind: value})
        payload = self._queue("message", message)
        _record_membership(chat, kind, user, members, state.bot.id)
        bot = state.bot.id
        if kind == "new_chat_members" and any(member.id == bot for member in members):
            chat.bot_status = "left"  # it joins, so it was not in the group a moment ago
            self.member_status(chat, "member", by=user)
        if kind == "left_chat_member" and members and members[0].id == bot:
            self.member_status(chat, "left", by=user)
        return payload

    def _pinned(self, chat: Chat, message_id: int | None) -> JSON:
        if message_id is None:
            raise ValueError("pinned_message needs pinned_message_id")
        target = self.state.find_message(chat.id, message_id)
        if target is None:
            raise LookupError(f"message {message_id} not found in chat {chat.id}")
        return self.state.message_json(target, nested=True)  # no reply_to_message inside

    def add_topic(self, chat_id: int, user: User, name: str) -> int:
        """Someone creates a forum topic; its id is the id of the service message that did."""
        chat = self.state.chat(chat_id)
        if not chat.is_forum:
            raise ValueError(f"chat {chat_id} is not a forum (add_chat(..., is_forum=True))")
        _join(chat, user)
        return open_topic(self.state, chat, user, name).thread_id

    # ----- buttons ---------------------------------------------------------------------

    def press(
        self,
        chat_id: int,
        message_id: int,
        data: str,
        user: User,
        *,
        forge: bool = False,
        inaccessible: bool = False,
    ) -> str:
        """A user taps an inline button: queue the callback_query update, return its id.

        The message comes as an InaccessibleMessage (`date` 0) when it no longer exists,
        is older than 48 hours on the stand-in's clock, or `inaccessible` says so.
        """
        state = self.state
        chat = state.chat(chat_id)
        message = state.find_message(chat_id, message_id)
        if not forge:
            _check_pressable(message, chat_id, message_id, data)
        too_old = message is not None and state.date() - message.date > INACCESSIBLE_AFTER_S
        shown: JSON
        if message is None or inaccessible or too_old:
            shown = {"chat": chat.to_api(), "message_id": message_id, "date": 0}
        else:
            shown = state.message_json(message)
        query_id = str(state.bot.id * 1_000_000 + state.next_number())
        state.callback_queries[query_id] = CallbackQuery(
            query_id, chat_id, message_id, user.id, data, state.clock()
        )
        payload = {
            "id": query_id,
            "from": user.to_api(),
            "message": shown,
            "chat_instance": chat.instance,
            "data": data,
        }
        state.enqueue("callback_query", payload)
        return query_id

    # ----- the bot's own membership ----------------------------------------------------

    def member_status(self, chat: Chat, status: str, *, by: User | None) -> JSON | None:
        """The bot's status in `chat` changes: added, promoted, blocked, kicked or left.

        Sending to the chat then succeeds or answers 403 accordingly. With `by` (who made
        the change) Telegram's `my_chat_member` update is queued and returned.
        """
        if status not in MEMBER_STATUSES:
            raise ValueError(f"status must be one of {MEMBER_STATUSES}, not {status!r}")
        if chat.type == "private" and status not in ("member", "kicked"):
            raise ValueError("in a private chat the bot is 'member' or, blocked, 'kicked'")
        old, chat.bot_status = chat.bot_status, status
        chat.blocked = status in ("left", "kicked")
        if by is None:
            return None
        payload = {
            "chat": chat.to_api(),
            "from": by.to_api(),
            "date": self.state.date(),
            "old_chat_member": self._member(chat, old),
            "new_chat_member": self._member(chat, status),
        }
        self.state.enqueue("my_chat_member", payload)
        return payload

    def _member(self, chat: Chat, status: str) -> JSON:
        rights = chat.bot_rights if status == "administrator" else {}
        return member_json(self.state.bot, Member(status, rights), chat.type)

    # ----- anything else -----------------------------------------------------------------

    def update(self, kind: str, payload: JSON) -> JSON:
        """Queue any update kind with a payload the test wrote (a deep copy of it).

        The payload must be what Telegram could send: it is checked against the Bot API
        specification here, so a test cannot feed the bot an impossible update.
        """
        if kind not in update_kinds():
            raise ValueError(f"{kind!r} is not an update kind; Update has {sorted(update_kinds())}")
        problems = object_problems("Update", {"update_id": 1, kind: payload})
        if problems:
            shown = "; ".join(str(problem) for problem in problems[:5])
            raise ValueError(f"not a {kind} update Telegram could send: {shown}")
        frozen = copy.deepcopy(payload)
        self.state.enqueue(kind, frozen)
        return frozen

    def _queue(self, kind: str, message: StoredMessage) -> JSON:
        payload = self.state.message_json(message)
        self.state.enqueue(kind, payload)
        return payload

    # ----- media -------------------------------------------------------------------------

    def new_file(self, kind: str, extension: str) -> JSON:
        """Register a file the bot may later fetch with getFile."""
        number = self.state.next_number()
        file_id = f"standin-{kind}-{number:06d}"
        record = {
            "file_id": file_id,
            "file_unique_id": f"u{kind[:2]}{number:06d}",
            "file_size": 1024,
            "file_path": f"{kind}s/file_{number}.{extension}",
        }
        self.state.files[file_id] = record
        return record

    def new_media(self, kind: str) -> JSON:
        """Message fields for an injected sticker, photo, document or voice note, with real
        file ids (getFile finds them, copyMessage carries them over)."""
        if kind == "sticker":
            file = self.new_file("sticker", "webp")
            sticker = {"type": "regular", "width": 512, "height": 512, "emoji": "🙂"}
            flags = {"is_animated": False, "is_video": False}
            return {"sticker": {**_file_fields(file), **sticker, **flags}}
        if kind == "photo":
            sizes = [(90, self.new_file("photo", "jpg")), (800, self.new_file("photo", "jpg"))]
            photo = [{**_file_fields(f), "width": side, "height": side} for side, f in sizes]
            return {"photo": photo}
        if kind == "document":
            file = self.new_file("document", "pdf")
            name = file["file_path"].rsplit("/", 1)[-1]
            return {
                "document": {
                    **_file_fields(file),
                    "file_name": name,
                    "mime_type": "application/pdf",
                }
            }
        file = self.new_file("voice", "oga")
        return {"voice": {**_file_fields(file), "duration": 3, "mime_type": "audio/ogg"}}


def _enter_topic(chat: Chat, thread_id: int, user: User) -> None:
    """A message in topic `thread_id`; a topic the test did not create is created silently.

    A real client cannot write into a deleted topic, nor into a closed one unless its
    user may manage topics.
    """
    if not chat.is_forum:
        raise ValueError(f"chat {chat.id} is not a forum: message_thread_id needs is_forum")
    if thread_id == GENERAL_TOPIC_ID:
        raise ValueError("messages in a forum's General topic carry no message_thread_id")
    if thread_id in chat.deleted_topics:
        raise ValueError(f"topic {thread_id} of chat {chat.id} was deleted")
    topic = chat.topics.setdefault(
        thread_id, Topic(thread_id, f"Topic {thread_id}", ICON_COLORS[0], user.id)
    )
    member = chat.members.get(user.id, Member("member"))
    if topic.closed and not has_right(member, "can_manage_topics"):
        raise ValueError(f"topic {thread_id} is closed: only admins who manage topics write there")


def _join(chat: Chat, user: User) -> None:
    """Someone who writes in a group is one of its members, unless the test said more."""
    if chat.is_group and user.id not in chat.members:
        chat.members[user.id] = Member("member")


def _record_membership(
    chat: Chat, kind: str, sender: User, members: Sequence[User], bot_id: int
) -> None:
    """Joins and leaves change who getChatMember reports as in the group."""
    if kind == "new_chat_members":
        for member in members or (sender,):
            if member.id != bot_id and chat.members.get(member.id, Member("left")).status in (
                "left",
                "kicked",
            ):
                chat.members[member.id] = Member("member")
    elif kind == "left_chat_member":
        gone = members[0] if members else sender
        if gone.id != bot_id:
            chat.members[gone.id] = Member("left")


def _file_fields(file: JSON) -> JSON:
    keys = ("file_id", "file_unique_id", "file_size")
    return {key: file[key] for key in keys}


def _check_pressable(
    message: StoredMessage | None, chat_id: int, message_id: int, data: str
) -> None:
    """A real client can only press buttons that are on screen; say what is there instead."""
    if message is None:
        raise LookupError(f"message {message_id} not found in chat {chat_id}")
    available = [b.callback_data for row in buttons(message.reply_markup) for b in row]
    if data not in available:
        raise ValueError(
            f"message {message_id} in chat {chat_id} has no button with callback_data "
            f"{data!r}; it has {available} (pass forge=True to send arbitrary data)"
        )
