"""What the stand-in remembers, and the primitives that change it.

The state is plain data (the records in records.py) mutated on the event loop thread
only, so it needs no locks. Bot API methods (methods.py) and the test-side controls
(controls.py) both work through the primitives here, which keeps the two views of a
chat consistent: what the bot was told it sent is exactly what `chat_messages` shows
the test.
"""

from __future__ import annotations

from typing import Any

from .clock import Clock, unix_date
from .flood import FloodControl, FloodLimits
from .markup import buttons, inline_keyboard
from .records import (
    CallbackQuery,
    CallRecord,
    Chat,
    Fault,
    ShownMessage,
    StoredMessage,
    Update,
    User,
    WebhookDelivery,
)

JSON = dict[str, Any]

# Telegram's default when allowed_updates is empty: everything except these.
_OPT_IN_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
_SUPERGROUP_BELOW = -1_000_000_000_000


class BotState:
    """Everything one bot's Telegram would know about, plus the bookkeeping tests read."""

    def __init__(
        self,
        bot: User,
        *,
        limits: FloodLimits,
        clock: Clock,
        callback_query_ttl: float | None,
        first_update_id: int,
    ) -> None:
        self.bot = bot
        self.clock = clock
        self.limits = limits
        self.callback_query_ttl = callback_query_ttl
        self.first_update_id = first_update_id
        # Polling bookkeeping survives reset(): a bot that is polling keeps polling.
        self.poll_generation = 0
        self.active_polls = 0
        self.reset()

    def reset(self) -> None:
        """Forget everything (chats, queues, logs, faults); keep the bot's identity."""
        self.flood = FloodControl(self.limits, self.clock)
        self.chats: dict[int, Chat] = {}
        self.users: dict[int, User] = {}
        self.messages: dict[tuple[int, int], StoredMessage] = {}
        self.updates: list[Update] = []
        self.next_update_id = self.first_update_id
        self.allowed_updates: frozenset[str] | None = None
        self.webhook_url = ""
        self.webhook_secret = ""
        self.webhook_max_connections = 40
        self.webhook_error: tuple[int, str] | None = None  # (date, message) of the last failure
        self.webhook_deliveries: list[WebhookDelivery] = []
        self.commands: dict[tuple[str, str], list[JSON]] = {}
        self.callback_queries: dict[str, CallbackQuery] = {}
        self.calls: list[CallRecord] = []
        self.faults: list[Fault] = []
        self.files: dict[str, JSON] = {}
        self.served_429 = 0
        self._counter = 0

    def date(self) -> int:
        """Now, as a Telegram `date` (integer Unix seconds on the stand-in's clock)."""
        return unix_date(self.clock)

    def next_number(self) -> int:
        """A fresh number for ids (files, callback queries) unique within this state."""
        self._counter += 1
        return self._counter

    # ----- chats and users -------------------------------------------------------------

    def ensure_user(self, user_id: int, **details: str | None) -> User:
        """Create or update a user; only details that are given overwrite old ones."""
        user = self.users.setdefault(user_id, User(id=user_id, first_name="Test User"))
        for key, value in details.items():
            if value is not None:
                setattr(user, key, value)
        return user

    def ensure_chat(
        self,
        chat_id: int,
        user: User | None,
        title: str | None = None,
        *,
        channel: bool = False,
    ) -> Chat:
        """Create a chat on first contact: private when it is the user's own id.

        Other ids make a group ("supergroup" from -10**12 down) or, with `channel`, a
        channel; an existing chat keeps its type.
        """
        chat = self.chats.get(chat_id)
        if chat is None:
            chat = Chat(id=chat_id, type=self._chat_type(chat_id, user, channel))
            self.chats[chat_id] = chat
        if chat.is_channel != channel:
            raise ValueError(f"chat {chat_id} is a {chat.type} chat")
        if chat.type != "private":
            chat.title = title or chat.title or f"{chat.type.title()} {chat_id}"
        elif user is not None:
            chat.first_name, chat.last_name = user.first_name, user.last_name
            chat.username = user.username
        if user is not None:
            chat.last_user_id = user.id
        return chat

    @staticmethod
    def _chat_type(chat_id: int, user: User | None, channel: bool) -> str:
        if channel:
            if chat_id > _SUPERGROUP_BELOW:
                raise ValueError(
                    f"channel ids are -100xxxxxxxxxx (from -10**12 down), not {chat_id}"
                )
            return "channel"
        if user is not None and user.id == chat_id:
            return "private"
        return "supergroup" if chat_id <= _SUPERGROUP_BELOW else "group"

    def chat(self, chat_id: int) -> Chat:
        """A chat the test created; LookupError otherwise."""
        try:
            return self.chats[chat_id]
        except KeyError:
            raise LookupError(f"unknown chat {chat_id}") from None

    def find_chat(self, chat_id: int | str) -> Chat | None:
        """A chat by id, by id as text, or by "@username", as Telegram resolves chat_id."""
        if isinstance(chat_id, int):
            return self.chats.get(chat_id)
        try:
            return self.chats.get(int(chat_id.strip()))
        except ValueError:
            return self.chat_by_username(chat_id)

    def chat_by_username(self, username: str) -> Chat | None:
        """Resolve the "@username" form of chat_id."""
        wanted = username.removeprefix("@").lower()
        for chat in self.chats.values():
            if chat.username and chat.username.lower() == wanted:
                return chat
        return None

    # ----- messages --------------------------------------------------------------------

    def add_message(self, chat: Chat, sender: User | None, **fields: Any) -> StoredMessage:
        """Append a message; ids are per chat and shared by both directions, as in Telegram."""
        message = StoredMessage(
            chat_id=chat.id,
            message_id=chat.next_message_id,
            sender=sender,
            date=self.date(),
            **fields,
        )
        chat.next_message_id += 1
        self.messages[(chat.id, message.message_id)] = message
        return message

    def find_message(self, chat_id: int, message_id: int) -> StoredMessage | None:
        """A message that still exists (not deleted)."""
        message = self.messages.get((chat_id, message_id))
        return None if message is None or message.deleted else message

    def message_json(self, message: StoredMessage, *, nested: bool = False) -> JSON:
        """Bot API Message object for the message as it stands now."""
        chat = self.chats[message.chat_id]
        data: JSON = {"message_id": message.message_id}
        if message.thread_id is not None:
            data["message_thread_id"] = message.thread_id
        if message.sender is not None:
            data["from"] = message.sender.to_api()
        else:  # a channel post: the channel speaks for itself
            data["sender_chat"] = chat.to_api()
        data["date"] = message.date
        data["chat"] = chat.to_api()
        if message.thread_id is not None:
            data["is_topic_message"] = True
        if message.edit_date is not None:
            data["edit_date"] = message.edit_date
        data.update(message.media)
        data.update(_text_fields(message))
        data.update(message.service)
        # A topic message that replies to nothing replies, for Telegram, to the message that
        # created the topic; replies nest one level only.
        reply_to = message.reply_to if message.reply_to is not None else message.thread_id
        if reply_to is not None and reply_to != message.message_id and not nested:
            target = self.messages.get((message.chat_id, reply_to))
            if target is not None:
                data["reply_to_message"] = self.message_json(target, nested=True)
        keyboard = inline_keyboard(message.reply_markup)
        if keyboard is not None:
            data["reply_markup"] = keyboard
        return data

    def shown(self, message: StoredMessage) -> ShownMessage:
        """Freeze a message into the snapshot tests assert on."""
        return ShownMessage(
            chat_id=message.chat_id,
            message_id=message.message_id,
            from_bot=message.from_bot,
            sender_id=message.chat_id if message.sender is None else message.sender.id,
            kind=message.kind,
            text=message.text,
            caption=message.caption,
            entities=message.entities,
            reply_markup=message.reply_markup,
            buttons=buttons(message.reply_markup),
            reply_to_message_id=message.reply_to,
            parse_mode=message.parse_mode,
            date=message.date,
            edit_date=message.edit_date,
            history=tuple(message.history),
            message_thread_id=message.thread_id,
        )

    def chat_messages(self, chat_id: int) -> list[ShownMessage]:
        """What the chat currently shows, oldest first, deleted messages left out."""
        found = [
            self.shown(message)
            for (cid, _), message in self.messages.items()
            if cid == chat_id and not message.deleted
        ]
        return sorted(found, key=lambda shown: shown.message_id)

    # ----- updates ---------------------------------------------------------------------

    def enqueue(self, kind: str, payload: JSON) -> Update | None:
        """Queue an update with the next update_id, if the bot currently wants its kind.

        Telegram applies `allowed_updates` when an update is created, not when it is
        delivered ("this parameter doesn't affect updates created before the call to
        getUpdates, so unwanted updates may be received for a short period of time"):
        an unwanted update is never created, and a queued one stays queued.
        """
        if not self._wanted(kind):
            return None
        update = Update(self.next_update_id, kind, payload)
        self.next_update_id += 1
        self.updates.append(update)
        return update

    def confirm(self, offset: int | None) -> None:
        """Apply getUpdates' `offset`: forget everything below it (negative: keep the tail)."""
        if not offset:
            return
        if offset > 0:
            self.updates = [u for u in self.updates if u.update_id >= offset]
        else:
            self.updates = self.updates[offset:]

    def set_allowed_updates(self, allowed: list[str] | None) -> None:
        """Telegram remembers allowed_updates across calls until it is sent again."""
        if allowed is not None:
            self.allowed_updates = frozenset(allowed) if allowed else None

    def _wanted(self, kind: str) -> bool:
        if self.allowed_updates is None:
            return kind not in _OPT_IN_UPDATES
        return kind in self.allowed_updates

    def deliverable(self, limit: int) -> list[Update]:
        """The oldest pending updates, at most `limit` of them."""
        return self.updates[:limit]

    def has_deliverable(self) -> bool:
        """Whether a waiting getUpdates could return now."""
        return bool(self.updates)

    # ----- faults and the call log -----------------------------------------------------

    def take_fault(self, method: str, chat_id: int | None) -> Fault | None:
        """Consume one injected fault matching this call, if any."""
        for fault in self.faults:
            if fault.method != method.lower():
                continue
            if fault.chat_id is not None and fault.chat_id != chat_id:
                continue
            fault.remaining -= 1
            if fault.remaining <= 0:
                self.faults.remove(fault)
            return fault
        return None

    def begin_call(self, method: str, params: JSON, chat_id: int | None) -> CallRecord:
        """Log a call as it arrives, so tests can see calls that are still in flight."""
        record = CallRecord(
            seq=len(self.calls) + 1,
            method=method,
            params=params,
            chat_id=chat_id,
            started=self.clock(),
        )
        self.calls.append(record)
        return record

    def end_call(self, record: CallRecord, status: int, description: str | None) -> None:
        """Complete a logged call with the status the client was (or would have been) sent."""
        record.status = status
        record.description = description
        record.finished = self.clock()
        if status == 429:
            self.served_429 += 1


def _text_fields(message: StoredMessage) -> JSON:
    data: JSON = {}
    if message.text is not None:
        data["text"] = message.text
        if message.entities:
            data["entities"] = list(message.entities)
    if message.caption is not None:
        data["caption"] = message.caption
        if message.entities:
            data["caption_entities"] = list(message.entities)
    return data
