"""The test side of a stand-in: the user's half of the conversation, faults, observing, waiting.

These are the controls a test holds (`inject_message`, `press_button`, `fail_next`,
`chat_messages`, `wait_for`, ...). They work on the stand-in's state and change signal
only, never on HTTP, so `StandIn` (the server) inherits them and `testapi` (the same
controls as /_test endpoints) depends on them without depending on the server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .changes import ChangeSignal
from .records import CallbackAnswer, CallRecord, Fault, ShownMessage
from .state import BotState

JSON = dict[str, Any]


class Controls:
    """What a test can do to and see of one bot's Telegram."""

    def __init__(self, state: BotState, changes: ChangeSignal) -> None:
        self.state = state
        self.changes = changes

    # ----- test side: the user's half of the conversation ------------------------------

    def add_chat(
        self,
        chat_id: int,
        user_id: int | None = None,
        *,
        first_name: str | None = None,
        last_name: str | None = None,
        username: str | None = None,
        language_code: str | None = "en",
        title: str | None = None,
    ) -> JSON:
        """Make a chat known without a message (so the bot can write first)."""
        user = self.state.ensure_user(
            self._sender_id(chat_id, user_id),
            first_name=first_name,
            last_name=last_name,
            username=username,
            language_code=language_code,
        )
        return self.state.ensure_chat(chat_id, user, title).to_api()

    def inject_message(
        self,
        chat_id: int,
        user_id: int | None = None,
        text: str | None = None,
        *,
        sticker: bool = False,
        photo: bool = False,
        voice: bool = False,
        caption: str | None = None,
        language_code: str | None = "en",
        first_name: str | None = None,
        last_name: str | None = None,
        username: str | None = None,
        title: str | None = None,
        reply_to_message_id: int | None = None,
    ) -> JSON:
        """A user sends a message; returns the Message JSON the bot will receive.

        Private chats use the user's id as chat id (user_id defaults to chat_id); any
        other chat_id makes a group ("supergroup" from -10**12 down). For media, `text`
        becomes the caption. "/commands" get bot_command entities as on Telegram.
        """
        media = self._media(sticker=sticker, photo=photo, voice=voice)
        if text is None and not media:
            raise ValueError("inject_message needs text, sticker, photo or voice")
        if media and text is not None:
            if sticker:
                raise ValueError("stickers carry no text or caption")
            caption, text = caption or text, None
        user = self.state.ensure_user(
            self._sender_id(chat_id, user_id),
            first_name=first_name,
            last_name=last_name,
            username=username,
            language_code=language_code,
        )
        payload = self.state.inject_message(
            chat_id,
            user,
            text=text,
            media=media,
            caption=caption,
            reply_to=reply_to_message_id,
            title=title,
        )
        self.changes.poke()
        return payload

    def _sender_id(self, chat_id: int, user_id: int | None) -> int:
        if user_id is not None:
            return user_id
        chat = self.state.chats.get(chat_id)
        if chat is not None and chat.is_group:
            if chat.last_user_id is None:
                raise ValueError(f"chat {chat_id} is a group: pass user_id")
            return chat.last_user_id
        if chat_id < 0:
            raise ValueError(f"chat {chat_id} is a group: pass user_id")
        return chat_id

    def _media(self, *, sticker: bool, photo: bool, voice: bool) -> JSON:
        chosen = [
            kind
            for kind, wanted in (("sticker", sticker), ("photo", photo), ("voice", voice))
            if wanted
        ]
        if len(chosen) > 1:
            raise ValueError("pick one of sticker, photo, voice")
        return self.state.new_media(chosen[0]) if chosen else {}

    def press_button(
        self,
        chat_id: int,
        message_id: int,
        callback_data: str,
        user_id: int | None = None,
        *,
        forge: bool = False,
    ) -> str:
        """Tap the inline button carrying `callback_data`; returns the callback query id.

        Refuses (ValueError/LookupError) unless that button is on that message, because
        real users can only tap what is shown. `forge=True` sends any data, even for a
        message that no longer exists (the bot then sees an inaccessible message).
        """
        chat = self.state.chat(chat_id)
        user = self.state.ensure_user(self._sender_id(chat.id, user_id))
        query_id = self.state.press_button(chat_id, message_id, callback_data, user, forge=forge)
        self.changes.poke()
        return query_id

    def press_button_by_text(
        self,
        chat_id: int,
        text: str,
        *,
        message_id: int | None = None,
        user_id: int | None = None,
    ) -> str:
        """Tap the button labelled `text` (on `message_id`, or the newest message with it)."""
        candidates = [
            shown
            for shown in reversed(self.chat_messages(chat_id))
            if message_id is None or shown.message_id == message_id
        ]
        for shown in candidates:
            for row in shown.buttons:
                for button in row:
                    if button.text == text and button.callback_data is not None:
                        return self.press_button(
                            chat_id, shown.message_id, button.callback_data, user_id
                        )
        raise LookupError(f"no callback button labelled {text!r} in chat {chat_id}")

    def block_chat(self, chat_id: int, *, notify: bool = True) -> None:
        """The user blocks the bot (groups: the bot is kicked); sends then answer 403.

        With `notify`, the bot gets the my_chat_member update Telegram would send.
        """
        self.state.set_blocked(chat_id, True, notify=notify)
        self.changes.poke()

    def unblock_chat(self, chat_id: int, *, notify: bool = True) -> None:
        """Undo block_chat."""
        self.state.set_blocked(chat_id, False, notify=notify)
        self.changes.poke()

    # ----- test side: faults -----------------------------------------------------------

    def fail_next(
        self,
        method: str,
        times: int = 1,
        *,
        status: int | None = 500,
        description: str | None = None,
        delay: float = 0.0,
        retry_after: int | None = None,
        chat_id: int | None = None,
        body: str | None = None,
    ) -> None:
        """Make the next `times` calls of `method` (optionally only to `chat_id`) fail.

        The call fails with `status` and `description` (default: the status phrase)
        after `delay` seconds and has no effect. With `status=None` the call succeeds
        but its answer is delayed, to model "Telegram sent it, the client timed out".
        `body` replaces the JSON envelope (e.g. an HTML 502 page).
        """
        if times < 1:
            raise ValueError("times must be at least 1")
        self.state.faults.append(
            Fault(method.lower(), times, status, description, delay, retry_after, chat_id, body)
        )

    def clear_faults(self) -> None:
        """Drop all injected faults that have not fired yet."""
        self.state.faults.clear()

    def reset(self) -> None:
        """Forget chats, messages, updates, calls and faults (for a long-running server)."""
        self.state.reset()
        self.changes.poke()

    # ----- test side: observing --------------------------------------------------------

    def chat_messages(self, chat_id: int) -> list[ShownMessage]:
        """What the chat currently shows, oldest first (both directions, not deleted)."""
        return self.state.chat_messages(chat_id)

    def bot_messages(self, chat_id: int) -> list[ShownMessage]:
        """Only the bot's messages in the chat."""
        return [shown for shown in self.chat_messages(chat_id) if shown.from_bot]

    def last_bot_message(self, chat_id: int) -> ShownMessage | None:
        """The bot's newest message in the chat, if any."""
        sent = self.bot_messages(chat_id)
        return sent[-1] if sent else None

    def callback_answers(self, query_id: str) -> list[CallbackAnswer]:
        """The accepted answer to a button press ([] while unanswered)."""
        query = self.state.callback_queries.get(query_id)
        if query is None:
            raise LookupError(f"unknown callback query {query_id!r}")
        return [] if query.answer is None else [query.answer]

    def chat_actions(self, chat_id: int) -> list[str]:
        """Every sendChatAction the bot made in the chat, in order."""
        return list(self.state.chat(chat_id).actions)

    def reply_keyboard(self, chat_id: int) -> JSON | None:
        """The custom (reply) keyboard the chat currently shows, if any."""
        return self.state.chat(chat_id).reply_keyboard

    def commands(self, scope: JSON | None = None, language_code: str = "") -> list[JSON]:
        """The command list set with setMyCommands for that scope and language."""
        key = json.dumps(scope or {"type": "default"}, sort_keys=True), language_code
        return list(self.state.commands.get(key, []))

    def pending_updates(self) -> list[JSON]:
        """Updates queued and not yet confirmed by an offset."""
        return [update.to_api() for update in self.state.updates]

    def calls(self, method: str | None = None, chat_id: int | None = None) -> list[CallRecord]:
        """The Bot API call log (in-flight calls have status None), oldest first."""
        return [
            record
            for record in self.state.calls
            if (method is None or record.method.lower() == method.lower())
            and (chat_id is None or record.chat_id == chat_id)
        ]

    def count_calls(self, method: str | None = None, chat_id: int | None = None) -> int:
        """How many Bot API calls were made (e.g. per chat, to check rate behaviour)."""
        return len(self.calls(method, chat_id))

    @property
    def served_429(self) -> int:
        """How many 429 answers were served (flood control and injected)."""
        return self.state.served_429

    def flood_refusals(self, chat_id: int | None = None) -> int:
        """How many calls flood control refused, overall or for one chat."""
        refused = self.state.flood.refused
        return sum(refused.values()) if chat_id is None else refused[chat_id]

    @property
    def active_polls(self) -> int:
        """getUpdates calls currently waiting (lets tests know the bot is listening)."""
        return self.state.active_polls

    # ----- test side: waiting ----------------------------------------------------------

    # The waits take `timeout` (ASYNC109) on purpose: a test wants one number that both
    # bounds the wait and ends up in the TimeoutError, not an outer asyncio.timeout().
    async def wait_for(
        self,
        predicate: Callable[[], bool],
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> None:
        """Wait until `predicate()` holds, re-checking on every change; TimeoutError if not."""
        if not await self.changes.wait_until(predicate, timeout):
            recent = [f"{c.method}->{c.status}" for c in self.state.calls[-8:]]
            raise TimeoutError(f"condition not met within {timeout}s; recent calls: {recent}")

    async def wait_for_call(
        self,
        method: str,
        *,
        chat_id: int | None = None,
        count: int = 1,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> CallRecord:
        """Wait until `count` calls of `method` have completed; returns the count-th."""

        def done() -> list[CallRecord]:
            return [c for c in self.calls(method, chat_id) if c.status is not None]

        await self.wait_for(lambda: len(done()) >= count, timeout)
        return done()[count - 1]

    async def wait_for_bot_messages(
        self,
        chat_id: int,
        count: int = 1,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> list[ShownMessage]:
        """Wait until the bot has at least `count` messages showing in the chat."""
        await self.wait_for(lambda: len(self._bot_messages_if_any(chat_id)) >= count, timeout)
        return self.bot_messages(chat_id)

    def _bot_messages_if_any(self, chat_id: int) -> list[ShownMessage]:
        return self.bot_messages(chat_id) if chat_id in self.state.chats else []
