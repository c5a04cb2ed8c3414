"""Forum topics as Telegram keeps them: opened, renamed, closed, reopened and deleted.

Every change to a topic is also a service message inside it (`forum_topic_created`,
`forum_topic_edited`, `forum_topic_closed`, `forum_topic_reopened`), and the bot
receives those as `message` updates even when it made the change itself
(tdlib/telegram-bot-api `need_skip_update_message` skips the bot's own outgoing messages
except these). A topic's id is the id of the message that created it. Deleting a topic
deletes its messages; its id stays known as deleted, so sends to it fail.

These primitives serve both the Bot API methods (standin/forum.py) and the test-side
events (a person opening a topic), so both produce the same messages and updates.
"""

from __future__ import annotations

from typing import Any

from .records import Chat, StoredMessage, Topic, User
from .state import BotState

JSON = dict[str, Any]

# The six colours the spec allows for `icon_color`; Telegram's default is the first.
ICON_COLORS = (0x6FB9F0, 0xFFD67E, 0xCB86DB, 0x8EEE98, 0xFF93B2, 0xFB6F5F)
# tdlib cuts longer names to 128 characters rather than refusing them (`clean_name`).
MAX_NAME = 128


def clean_name(name: str) -> str:
    """A topic name as Telegram stores it: trimmed and at most 128 characters."""
    return name.strip()[:MAX_NAME].strip()


def open_topic(
    state: BotState,
    chat: Chat,
    creator: User,
    name: str,
    icon_color: int = ICON_COLORS[0],
    icon_custom_emoji_id: str | None = None,
) -> Topic:
    """Create a topic in a forum: store its `forum_topic_created` message, queue it."""
    created: JSON = {"name": name, "icon_color": icon_color}
    if icon_custom_emoji_id:
        created["icon_custom_emoji_id"] = icon_custom_emoji_id
    message = state.add_message(chat, creator, service={"forum_topic_created": created})
    message.thread_id = message.message_id
    topic = Topic(message.message_id, name, icon_color, creator.id, False, icon_custom_emoji_id)
    chat.topics[topic.thread_id] = topic
    _queue(state, message)
    return topic


def topic_service(
    state: BotState, chat: Chat, sender: User, topic: Topic, kind: str, value: JSON
) -> StoredMessage:
    """A service message about `topic` (edited, closed, reopened) inside it, queued."""
    message = state.add_message(chat, sender, service={kind: value})
    message.thread_id = topic.thread_id
    _queue(state, message)
    return message


def delete_topic(state: BotState, chat: Chat, thread_id: int) -> None:
    """Delete a topic with all its messages; its id is remembered as deleted."""
    for (chat_id, _), message in state.messages.items():
        if chat_id == chat.id and message.thread_id == thread_id:
            message.deleted = True
    chat.topics.pop(thread_id, None)
    chat.deleted_topics.add(thread_id)


def _queue(state: BotState, message: StoredMessage) -> None:
    state.enqueue("message", state.message_json(message))
