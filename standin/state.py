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
from .formatting import command_entities
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

    def _next(self) -> int:
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

    def ensure_chat(self, chat_id: int, user: User | None, title: str | None = None) -> Chat:
        """Create a chat on first contact: private when it is the user's own id."""
        chat = self.chats.get(chat_id)
        if chat is None:
            chat = Chat(id=chat_id, type=self._chat_type(chat_id, user))
            self.chats[chat_id] = chat
        if chat.is_group:
            chat.title = title or chat.title or f"Group {chat_id}"
        elif user is not None:
            chat.first_name, chat.last_name = user.first_name, user.last_name
            chat.username = user.username
        if user is not None:
            chat.last_user_id = user.id
        return chat

    @staticmethod
    def _chat_type(chat_id: int, user: User | None) -> str:
        if user is not None and user.id == chat_id:
            return "private"
        return "supergroup" if chat_id <= _SUPERGROUP_BELOW else "group"

    def chat(self, chat_id: int) -> Chat:
        """A chat the test created; LookupError otherwise."""
        try:
            return self.chats[chat_id]
        except KeyError:
            raise LookupError(f"unknown chat {chat_id}") from None

    def chat_by_username(self, username: str) -> Chat | None:
        """Resolve the "@username" form of chat_id."""
        wanted = username.removeprefix("@").lower()
        for chat in self.chats.values():
            if chat.username and chat.username.lower() == wanted:
                return chat
        return None

    # ----- messages --------------------------------------------------------------------

    def add_message(self, chat: Chat, sender: User, **fields: Any) -> StoredMessage:
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
        data: JSON = {
            "message_id": message.message_id,
            "from": message.sender.to_api(),
            "chat": self.chats[message.chat_id].to_api(),
            "date": message.date,
        }
        if message.edit_date is not None:
            data["edit_date"] = message.edit_date
        data.update(message.media)
        data.update(_text_fields(message))
        if message.reply_to is not None and not nested:
            target = self.messages.get((message.chat_id, message.reply_to))
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
            sender_id=message.sender.id,
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

    def enqueue(self, kind: str, payload: JSON) -> Update:
        """Queue an update with the next update_id."""
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

    def _allowed(self, update: Update) -> bool:
        if self.allowed_updates is None:
            return update.kind not in _OPT_IN_UPDATES
        return update.kind in self.allowed_updates

    def deliverable(self, limit: int) -> list[Update]:
        """Pending updates the bot asked for; unwanted kinds are dropped, as Telegram does."""
        self.updates = [u for u in self.updates if self._allowed(u)]
        return self.updates[:limit]

    def has_deliverable(self) -> bool:
        """Whether a waiting getUpdates could return now."""
        return any(self._allowed(u) for u in self.updates)

    # ----- test-side actions -----------------------------------------------------------

    def inject_message(
        self,
        chat_id: int,
        user: User,
        *,
        text: str | None,
        media: JSON,
        caption: str | None,
        reply_to: int | None,
        title: str | None,
    ) -> JSON:
        """A user writes into a chat: store it and queue the `message` update."""
        chat = self.ensure_chat(chat_id, user, title)
        if reply_to is not None and self.find_message(chat_id, reply_to) is None:
            raise LookupError(f"message {reply_to} not found in chat {chat_id}")
        message = self.add_message(
            chat, user, text=text, caption=caption, media=media, reply_to=reply_to
        )
        message.entities = command_entities(text or caption or "")
        payload = self.message_json(message)
        self.enqueue("message", payload)
        return payload

    def new_file(self, kind: str, extension: str) -> JSON:
        """Register a file the bot may later fetch with getFile."""
        number = self._next()
        file_id = f"standin-{kind}-{number:06d}"
        record = {
            "file_id": file_id,
            "file_unique_id": f"u{kind[:2]}{number:06d}",
            "file_size": 1024,
            "file_path": f"{kind}s/file_{number}.{extension}",
        }
        self.files[file_id] = record
        return record

    def new_media(self, kind: str) -> JSON:
        """Message fields for an injected sticker, photo or voice note, with real file ids."""
        if kind == "sticker":
            file = self.new_file("sticker", "webp")
            sticker = {"type": "regular", "width": 512, "height": 512, "emoji": "🙂"}
            flags = {"is_animated": False, "is_video": False}
            return {"sticker": {**_file_fields(file), **sticker, **flags}}
        if kind == "photo":
            sizes = [(90, self.new_file("photo", "jpg")), (800, self.new_file("photo", "jpg"))]
            photo = [{**_file_fields(f), "width": side, "height": side} for side, f in sizes]
            return {"photo": photo}
        file = self.new_file("voice", "oga")
        return {"voice": {**_file_fields(file), "duration": 3, "mime_type": "audio/ogg"}}

    def press_button(
        self, chat_id: int, message_id: int, data: str, user: User, *, forge: bool
    ) -> str:
        """A user taps an inline button: queue the callback_query update, return its id."""
        chat = self.chat(chat_id)
        message = self.find_message(chat_id, message_id)
        if not forge:
            _check_pressable(message, chat_id, message_id, data)
        if message is None:  # only when forged: Telegram's InaccessibleMessage
            shown: JSON = {"chat": chat.to_api(), "message_id": message_id, "date": 0}
        else:
            shown = self.message_json(message)
        query_id = str(self.bot.id * 1_000_000 + self._next())
        self.callback_queries[query_id] = CallbackQuery(
            query_id, chat_id, message_id, user.id, data, self.clock()
        )
        payload = {
            "id": query_id,
            "from": user.to_api(),
            "message": shown,
            "chat_instance": chat.instance,
            "data": data,
        }
        self.enqueue("callback_query", payload)
        return query_id

    def set_blocked(self, chat_id: int, blocked: bool, *, notify: bool) -> None:
        """Block/unblock the bot in a chat; Telegram tells the bot via my_chat_member."""
        chat = self.chat(chat_id)
        if chat.blocked == blocked:
            return
        chat.blocked = blocked
        if notify and chat.last_user_id is not None:
            self.enqueue("my_chat_member", self._member_change(chat, blocked))

    def _member_change(self, chat: Chat, blocked: bool) -> JSON:
        bot = self.bot.to_api()
        member: JSON = {"user": bot, "status": "member"}
        kicked: JSON = {"user": bot, "status": "kicked", "until_date": 0}
        assert chat.last_user_id is not None
        return {
            "chat": chat.to_api(),
            "from": self.users[chat.last_user_id].to_api(),
            "date": self.date(),
            "old_chat_member": member if blocked else kicked,
            "new_chat_member": kicked if blocked else member,
        }

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


def _file_fields(file: JSON) -> JSON:
    keys = ("file_id", "file_unique_id", "file_size")
    return {key: file[key] for key in keys}


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
