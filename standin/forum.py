"""Chat information and forum topics: getChat, getChatMember and the *ForumTopic methods.

What a support bot needs to run a staff forum: check the group (`getChat`: is it a
forum?) and its own rights (`getChatMember`: administrator with `can_manage_topics`?),
then open one topic per customer and rename, close, reopen or delete it. Rights and
errors follow tdlib (td/telegram/ForumTopicManager.cpp, whose messages the Bot API
passes on with a lower-case first letter): the chat must be a forum ("the chat is not a
forum"), creating needs `can_manage_topics` ("not enough rights to create a topic"),
editing, closing and reopening need it unless the bot created the topic, deleting needs
`can_delete_messages` unless the bot created the topic. A topic that does not exist (or
was deleted) is TOPIC_ID_INVALID, a change to the state it is already in
TOPIC_NOT_MODIFIED: the server's codes, which the Bot API passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .errors import bad_request
from .lookups import chat_of, writable_chat
from .members import bot_member, chat_full_info, has_right, member_json, member_of
from .params import Params
from .records import Chat, Member, Topic
from .state import BotState
from .topics import ICON_COLORS, clean_name, delete_topic, open_topic, topic_service

JSON = dict[str, Any]
Handler = Callable[[Params], Awaitable[Any]]

NOT_A_FORUM = "the chat is not a forum"
TOPIC_ID_INVALID = "TOPIC_ID_INVALID"
TOPIC_NOT_MODIFIED = "TOPIC_NOT_MODIFIED"


class ForumApi:
    """getChat, getChatMember and the forum topic methods over one BotState."""

    def __init__(self, state: BotState) -> None:
        self.state = state

    def handlers(self) -> dict[str, Handler]:
        """Method name -> implementation, for the Bot API's method table."""
        return {
            "getChat": self.get_chat,
            "getChatMember": self.get_chat_member,
            "createForumTopic": self.create_forum_topic,
            "editForumTopic": self.edit_forum_topic,
            "closeForumTopic": self.close_forum_topic,
            "reopenForumTopic": self.reopen_forum_topic,
            "deleteForumTopic": self.delete_forum_topic,
        }

    # ----- chat information ------------------------------------------------------------

    async def get_chat(self, params: Params) -> JSON:
        """ChatFullInfo; a group the bot has left or was kicked from answers 403."""
        return chat_full_info(self._readable_chat(params))

    async def get_chat_member(self, params: Params) -> JSON:
        """The ChatMember of `user_id`: the bot's own status and rights, a member the test
        set, someone the chat has seen ("member"), or "left" for a user known elsewhere."""
        chat = self._readable_chat(params)
        user_id = params.integer("user_id")
        if user_id is None or user_id <= 0:
            raise bad_request("invalid user_id specified")
        state = self.state
        user = state.bot if user_id == state.bot.id else state.users.get(user_id)
        if user is None:
            raise bad_request("user not found")
        member = member_of(chat, user_id, state.bot.id) or Member("left")
        return member_json(user, member, chat.type)

    def _readable_chat(self, params: Params) -> Chat:
        chat = chat_of(self.state, params)
        if chat.is_group and chat.bot_status in ("left", "kicked"):
            raise chat.blocked_error()
        return chat

    # ----- forum topics ----------------------------------------------------------------

    async def create_forum_topic(self, params: Params) -> JSON:
        """Open a topic as the bot; the `forum_topic_created` message starts it."""
        chat = self._forum(params)
        if not has_right(bot_member(chat), "can_manage_topics"):
            raise bad_request("not enough rights to create a topic")
        name = clean_name(params.text("name") or "")
        if not name:
            raise bad_request("title must be non-empty")
        color = params.integer("icon_color") or ICON_COLORS[0]
        if color not in ICON_COLORS:
            # tdlib only range-checks the colour; the spec lists the six allowed values,
            # and the stand-in refuses others in tdlib's words rather than guess.
            raise bad_request("invalid icon color specified")
        self.state.flood.admit(chat.id, chat.is_group)
        emoji = params.text("icon_custom_emoji_id") or None
        topic = open_topic(self.state, chat, self.state.bot, name, color, emoji)
        return topic.to_api()

    async def edit_forum_topic(self, params: Params) -> bool:
        """Rename a topic or change its icon; omitted or empty `name` keeps the name."""
        chat, topic = self._topic(params, "not enough rights to edit the topic")
        raw_name = params.text("name") or ""
        name = clean_name(raw_name)
        if raw_name and not name:
            raise bad_request("title must be non-empty")
        edit_icon = "icon_custom_emoji_id" in params.raw
        if not name and not edit_icon:
            return True  # nothing asked for: tdlib answers at once, without the server
        edited: JSON = {}
        if name and name != topic.name:
            edited["name"] = name
        emoji = params.text("icon_custom_emoji_id") or None
        if edit_icon and emoji != topic.icon_custom_emoji_id:
            edited["icon_custom_emoji_id"] = emoji or ""  # "" when the icon was removed
        if not edited:
            raise bad_request(TOPIC_NOT_MODIFIED)
        topic.name = edited.get("name", topic.name)
        if "icon_custom_emoji_id" in edited:
            topic.icon_custom_emoji_id = emoji
        topic_service(self.state, chat, self.state.bot, topic, "forum_topic_edited", edited)
        return True

    async def close_forum_topic(self, params: Params) -> bool:
        """Close a topic: only administrators who can manage topics may write in it."""
        return self._set_closed(params, closed=True)

    async def reopen_forum_topic(self, params: Params) -> bool:
        """Reopen a closed topic."""
        return self._set_closed(params, closed=False)

    def _set_closed(self, params: Params, *, closed: bool) -> bool:
        chat, topic = self._topic(params, "not enough rights to close or open the topic")
        if topic.closed == closed:
            raise bad_request(TOPIC_NOT_MODIFIED)
        topic.closed = closed
        kind = "forum_topic_closed" if closed else "forum_topic_reopened"
        topic_service(self.state, chat, self.state.bot, topic, kind, {})
        return True

    async def delete_forum_topic(self, params: Params) -> bool:
        """Delete a topic and all its messages; later sends to it fail."""
        chat, topic = self._topic(
            params, "not enough rights to delete the topic", right="can_delete_messages"
        )
        delete_topic(self.state, chat, topic.thread_id)
        return True

    def _forum(self, params: Params) -> Chat:
        chat = writable_chat(self.state, params)
        if not chat.is_forum:
            raise bad_request(NOT_A_FORUM)
        return chat

    def _topic(
        self, params: Params, refusal: str, *, right: str = "can_manage_topics"
    ) -> tuple[Chat, Topic]:
        """The forum and the topic `message_thread_id` names, if the bot may change it."""
        chat = self._forum(params)
        thread_id = params.integer("message_thread_id")
        if thread_id is None or thread_id <= 0:
            raise bad_request("invalid message thread identifier specified")
        topic = chat.topics.get(thread_id)
        if topic is None:
            raise bad_request(TOPIC_ID_INVALID)
        own = topic.creator_id == self.state.bot.id
        if not own and not has_right(bot_member(chat), right):
            raise bad_request(refusal)
        return chat, topic
