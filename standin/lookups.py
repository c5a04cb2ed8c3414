"""The lookups every Bot API method starts with, failing in Telegram's words and order.

`chat_id` first ("chat_id is empty", "chat not found"), then whether the bot may write
there (403 when blocked, kicked or gone), then the forum topic (`message_thread_id`).
Shared by the message methods (methods.py) and the chat and forum methods (forum.py),
so a bot sees the same first error whichever method it called.
"""

from __future__ import annotations

from .errors import bad_request
from .members import bot_member, has_right
from .params import Params
from .records import Chat
from .state import BotState

THREAD_NOT_FOUND = "message thread not found"
TOPIC_CLOSED = "TOPIC_CLOSED"


def require_chat_id(params: Params) -> None:
    """Telegram's first check: a `chat_id` at all."""
    if not params.present("chat_id"):
        raise bad_request("chat_id is empty")


def chat_of(state: BotState, params: Params, name: str = "chat_id") -> Chat:
    """The chat `params[name]` names (an id, its text, or "@username")."""
    chat_id = params.chat_id() if name == "chat_id" else _chat_ref(params, name)
    if chat_id is None:
        raise bad_request(f"{name} is empty")
    chat = state.find_chat(chat_id)
    if chat is None:
        raise bad_request("chat not found")
    return chat


def writable_chat(state: BotState, params: Params) -> Chat:
    """The target chat, refused with Telegram's 403 when the bot may not write there."""
    chat = chat_of(state, params)
    if chat.blocked:
        raise chat.blocked_error()
    return chat


def thread_of(params: Params, chat: Chat) -> int | None:
    """`message_thread_id`: an open topic of this forum chat, as Telegram checks it.

    Telegram refuses the General topic's id and any topic that does not exist (or was
    deleted) with the same words; the stand-in also refuses a thread id outside a forum
    rather than silently dropping it, so a bot that sends one there finds out. A closed
    topic takes messages only from administrators who can manage topics.
    """
    thread_id = params.integer("message_thread_id")
    if thread_id is None or thread_id <= 0:  # Telegram reads 0 and below as "no topic"
        return None
    topic = chat.topics.get(thread_id)
    if topic is None:
        raise bad_request(THREAD_NOT_FOUND)
    if topic.closed and not has_right(bot_member(chat), "can_manage_topics"):
        raise bad_request(TOPIC_CLOSED)
    return thread_id


def _chat_ref(params: Params, name: str) -> int | str | None:
    if not params.present(name):
        return None
    number = params.integer(name)
    return number if number is not None else params.text(name)
