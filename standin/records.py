"""The stand-in's records: Telegram's objects as it stores them, and what tests read back.

Users, chats, messages, queued updates and callback queries are the Telegram side (each
renders its Bot API JSON); ShownMessage, CallbackAnswer and CallRecord are the frozen
views tests assert on; Fault is an injected failure. Plain dataclasses with no
behaviour beyond rendering themselves, so state.py (which owns and mutates them) and
the tests share one vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import ApiError, forbidden, phrase
from .markup import Button

JSON = dict[str, Any]
# How long Telegram shows a chat action ("typing…") unless a message from the bot ends it
# sooner: "5 seconds or less" (Bot API, sendChatAction).
ACTION_SHOWN_S = 5.0


@dataclass(frozen=True)
class ShownAction:
    """A sendChatAction as the chat shows it: what, when (stand-in clock) and the chat's
    next message id at that moment (a bot message from that id on ends it)."""

    action: str
    at: float
    next_message_id: int


@dataclass
class User:
    """A Telegram user (or the bot itself)."""

    id: int
    first_name: str
    is_bot: bool = False
    last_name: str | None = None
    username: str | None = None
    language_code: str | None = None

    def to_api(self) -> JSON:
        """Bot API User object."""
        data: JSON = {"id": self.id, "is_bot": self.is_bot, "first_name": self.first_name}
        for key in ("last_name", "username", "language_code"):
            value = getattr(self, key)
            if value:
                data[key] = value
        return data


@dataclass
class Topic:
    """A forum topic: its id is the id of the `forum_topic_created` message that opened it.

    `creator_id` matters for rights: Telegram lets the creator of a topic edit, close and
    reopen it without the `can_manage_topics` right.
    """

    thread_id: int
    name: str
    icon_color: int
    creator_id: int
    closed: bool = False
    icon_custom_emoji_id: str | None = None

    def to_api(self) -> JSON:
        """Bot API ForumTopic object."""
        data: JSON = {
            "message_thread_id": self.thread_id,
            "name": self.name,
            "icon_color": self.icon_color,
        }
        if self.icon_custom_emoji_id:
            data["icon_custom_emoji_id"] = self.icon_custom_emoji_id
        return data


@dataclass
class Member:
    """Someone's standing in a group: a ChatMember status and, for administrators, rights.

    `rights` holds only the rights that differ from the defaults (standin/members.py).
    """

    status: str
    rights: dict[str, bool] = field(default_factory=dict)


@dataclass
class Chat:
    """A chat the bot can talk to; only chats a test created exist ("chat not found").

    `topics` maps a forum supergroup's open and closed topics by `message_thread_id`;
    `deleted_topics` remembers the ids of deleted ones (sends to them fail, and a test
    cannot write into them). `bot_status` is the bot's ChatMember status, which
    my_chat_member updates report, and `bot_rights` its administrator rights beyond the
    defaults; `members` is everyone else whose standing the test set or the chat showed
    (a message, a join, a leave).
    """

    id: int
    type: str
    title: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    username: str | None = None
    is_forum: bool = False
    topics: dict[int, Topic] = field(default_factory=dict)
    deleted_topics: set[int] = field(default_factory=set)
    blocked: bool = False
    bot_status: str = "member"
    bot_rights: dict[str, bool] = field(default_factory=dict)
    members: dict[int, Member] = field(default_factory=dict)
    next_message_id: int = 1
    last_user_id: int | None = None
    reply_keyboard: JSON | None = None
    actions: list[str] = field(default_factory=list)
    # The newest action as the chat shows it: Telegram shows it until the bot's next
    # message or for about ACTION_SHOWN_S, whichever comes first (`StandIn.shown_action`).
    last_action: ShownAction | None = None

    @property
    def is_group(self) -> bool:
        """Groups get the extra per-minute flood limit and "kicked" instead of "blocked"."""
        return self.type in ("group", "supergroup")

    @property
    def is_channel(self) -> bool:
        """Channel posts have no `from`; the channel itself is the `sender_chat`."""
        return self.type == "channel"

    @property
    def instance(self) -> str:
        """Stable `chat_instance` for callback queries from this chat."""
        return str((self.id * 2654435761) % 2**63)

    def blocked_error(self) -> ApiError:
        """Telegram's 403 for a chat the bot may no longer write to."""
        if self.type == "private":
            return forbidden("bot was blocked by the user")
        if self.bot_status == "left":
            return forbidden(f"bot is not a member of the {self.type} chat")
        return forbidden(f"bot was kicked from the {self.type} chat")

    def to_api(self) -> JSON:
        """Bot API Chat object."""
        data: JSON = {"id": self.id, "type": self.type}
        private = self.type == "private"
        fields = ("first_name", "last_name", "username") if private else ("title", "username")
        for key in fields:
            value = getattr(self, key)
            if value:
                data[key] = value
        if self.is_forum:
            data["is_forum"] = True
        return data


@dataclass
class StoredMessage:
    """A message as it currently stands in its chat, with its edit history.

    `sender` is None for channel posts (Telegram names the channel as `sender_chat`);
    `service` holds a service message's own fields (`new_chat_members`, ...);
    `thread_id` is the forum topic the message belongs to.
    """

    chat_id: int
    message_id: int
    sender: User | None
    date: int
    text: str | None = None
    entities: tuple[JSON, ...] = ()
    caption: str | None = None
    media: JSON = field(default_factory=dict)
    reply_markup: JSON | None = None
    reply_to: int | None = None
    parse_mode: str | None = None
    edit_date: int | None = None
    history: list[str | None] = field(default_factory=list)
    deleted: bool = False
    thread_id: int | None = None
    service: JSON = field(default_factory=dict)

    def record_edit(self, date: int) -> None:
        """Keep the text as it was before an edit, and stamp the edit."""
        self.history.append(self.text)
        self.edit_date = date

    @property
    def from_bot(self) -> bool:
        """Whether the bot sent it (only those can be edited by the bot)."""
        return self.sender is not None and self.sender.is_bot

    @property
    def kind(self) -> str:
        """The service kind ("new_chat_members", ...), the media kind ("sticker",
        "photo", "voice"), or "text"."""
        return next(iter(self.service), None) or next(iter(self.media), "text")


@dataclass(frozen=True)
class ShownMessage:
    """A snapshot of one message as the chat shows it, for assertions in tests."""

    chat_id: int
    message_id: int
    from_bot: bool
    sender_id: int
    kind: str
    text: str | None
    caption: str | None
    entities: tuple[JSON, ...]
    reply_markup: JSON | None
    buttons: tuple[tuple[Button, ...], ...]
    reply_to_message_id: int | None
    parse_mode: str | None
    date: int
    edit_date: int | None
    history: tuple[str | None, ...]
    message_thread_id: int | None = None

    @property
    def edit_count(self) -> int:
        """How many successful edits (text or markup) the message has had."""
        return len(self.history)

    @property
    def callback_data(self) -> list[str]:
        """All callback_data values on the message, row by row."""
        return [b.callback_data for row in self.buttons for b in row if b.callback_data]

    def button(self, text: str) -> Button:
        """The inline button labelled `text`; KeyError lists the labels that exist."""
        for row in self.buttons:
            for candidate in row:
                if candidate.text == text:
                    return candidate
        labels = [b.text for row in self.buttons for b in row]
        raise KeyError(f"no button {text!r} on message {self.message_id}; buttons: {labels}")

    def as_dict(self) -> JSON:
        """JSON form for the /_test endpoints."""
        return {
            "chat_id": self.chat_id,
            "message_id": self.message_id,
            "from_bot": self.from_bot,
            "sender_id": self.sender_id,
            "kind": self.kind,
            "text": self.text,
            "caption": self.caption,
            "entities": list(self.entities),
            "reply_markup": self.reply_markup,
            "buttons": [[b.as_dict() for b in row] for row in self.buttons],
            "reply_to_message_id": self.reply_to_message_id,
            "parse_mode": self.parse_mode,
            "date": self.date,
            "edit_date": self.edit_date,
            "edit_count": self.edit_count,
            "history": list(self.history),
            "message_thread_id": self.message_thread_id,
        }


@dataclass(frozen=True)
class Update:
    """One queued update; the payload is frozen at the moment the event happened."""

    update_id: int
    kind: str
    payload: JSON

    def to_api(self) -> JSON:
        """Bot API Update object."""
        return {"update_id": self.update_id, self.kind: self.payload}


@dataclass(frozen=True)
class CallbackAnswer:
    """What the bot answered to a button press (the toast or alert the user saw)."""

    query_id: str
    text: str | None
    show_alert: bool
    url: str | None
    cache_time: int
    time: float

    def as_dict(self) -> JSON:
        """JSON form for the /_test endpoints."""
        return {
            "query_id": self.query_id,
            "text": self.text,
            "show_alert": self.show_alert,
            "url": self.url,
            "cache_time": self.cache_time,
            "time": self.time,
        }


@dataclass
class CallbackQuery:
    """A button press awaiting (or having received) its single answer."""

    id: str
    chat_id: int
    message_id: int
    user_id: int
    data: str
    created: float
    answer: CallbackAnswer | None = None


@dataclass
class CallRecord:
    """One Bot API call: in flight while `status` is None, then its HTTP outcome (and, when
    it succeeded, its `result`).

    `started` and `finished` are readings of the stand-in's clock (Unix seconds).
    """

    seq: int
    method: str
    params: JSON
    chat_id: int | None
    started: float
    status: int | None = None
    description: str | None = None
    finished: float | None = None
    result: Any = None  # what a successful call answered (the spec check reads it)

    @property
    def time(self) -> float:
        """When the call arrived (the same reading as `started`)."""
        return self.started

    @property
    def ok(self) -> bool:
        """Whether Telegram would have answered `"ok": true`."""
        return self.status == 200

    def as_dict(self) -> JSON:
        """JSON form for the /_test endpoints."""
        return {
            "seq": self.seq,
            "method": self.method,
            "params": self.params,
            "chat_id": self.chat_id,
            "time": self.time,
            "status": self.status,
            "ok": self.ok,
            "description": self.description,
            "duration": None if self.finished is None else self.finished - self.started,
        }


@dataclass
class Fault:
    """An injected failure for the next `remaining` matching calls of `method`.

    With `status` None the call succeeds but its answer is held back for `delay` seconds
    (the "Telegram did it, the client timed out" case); otherwise the call fails with
    `status` after `delay`, without any effect.
    """

    method: str
    remaining: int
    status: int | None = 500
    description: str | None = None
    delay: float = 0.0
    retry_after: int | None = None
    chat_id: int | None = None
    body: str | None = None

    def error(self) -> ApiError | None:
        """The failure to serve, or None for a delay-only fault."""
        if self.status is None:
            return None
        prefix = phrase(self.status)
        description = self.description or prefix
        if self.status == 429 and self.description is None:
            description = f"Too Many Requests: retry after {self.retry_after or 1}"
        return ApiError(self.status, description, retry_after=self.retry_after, body=self.body)


@dataclass(frozen=True)
class WebhookDelivery:
    """One POST of an update to the bot's webhook, and how the bot answered it.

    `status` is the bot's HTTP status, or None when the connection failed (`error` says
    how); `time` is the stand-in's clock when the attempt ended.
    """

    update_id: int
    update: JSON
    url: str
    status: int | None
    error: str | None
    time: float

    @property
    def ok(self) -> bool:
        """Whether Telegram would count the update as delivered (a 2xx answer)."""
        return self.status is not None and 200 <= self.status < 300

    def as_dict(self) -> JSON:
        """JSON form for the /_test endpoints."""
        return {
            "update_id": self.update_id,
            "update": self.update,
            "url": self.url,
            "status": self.status,
            "ok": self.ok,
            "error": self.error,
            "time": self.time,
        }
