"""The test side's eyes: what each chat shows, the call log, and waiting for the bot.

Read-only views of the stand-in's state plus waits that re-check on every change (never
a sleep). `Controls` (what a test does) builds on this, and `StandIn` inherits both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .changes import ChangeSignal
from .commands import find_commands
from .records import ACTION_SHOWN_S, CallbackAnswer, CallRecord, ShownMessage, WebhookDelivery
from .state import BotState

JSON = dict[str, Any]


class Observation:
    """What a test can see of one bot's Telegram, and how it waits for the bot."""

    # Multiplies every wait's timeout (`StandIn(patience=…)`).
    patience: float = 1.0

    def __init__(self, state: BotState, changes: ChangeSignal) -> None:
        self.state = state
        self.changes = changes

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

    def topics(self, chat_id: int) -> list[JSON]:
        """A forum's topics, oldest first: ForumTopic fields plus `closed`."""
        topics = sorted(self.state.chat(chat_id).topics.values(), key=lambda t: t.thread_id)
        return [{**topic.to_api(), "closed": topic.closed} for topic in topics]

    def callback_answers(self, query_id: str) -> list[CallbackAnswer]:
        """The accepted answer to a button press ([] while unanswered)."""
        query = self.state.callback_queries.get(query_id)
        if query is None:
            raise LookupError(f"unknown callback query {query_id!r}")
        return [] if query.answer is None else [query.answer]

    def chat_actions(self, chat_id: int) -> list[str]:
        """Every sendChatAction the bot made in the chat, in order."""
        return list(self.state.chat(chat_id).actions)

    def shown_action(self, chat_id: int) -> tuple[str, float] | None:
        """The chat action ("typing") the user sees now and for how many more seconds, or
        None. As in Telegram: shown from the bot's sendChatAction until the bot's next
        message in the chat or for ACTION_SHOWN_S, whichever comes first; never inferred
        from who wrote last."""
        chat = self.state.chats.get(chat_id)
        shown = chat.last_action if chat is not None else None
        if shown is None:
            return None
        left = shown.at + ACTION_SHOWN_S - self.state.clock()
        if left <= 0:
            return None
        for (cid, message_id), message in self.state.messages.items():
            if cid == chat_id and message_id >= shown.next_message_id and message.from_bot:
                return None
        return shown.action, left

    def reply_keyboard(self, chat_id: int) -> JSON | None:
        """The custom (reply) keyboard the chat currently shows, if any."""
        return self.state.chat(chat_id).reply_keyboard

    def commands(self, scope: JSON | None = None, language_code: str = "") -> list[JSON]:
        """The command list set with setMyCommands for exactly that scope and language
        (scopes compare as Telegram resolves them: a chat by id or by @username)."""
        return find_commands(self.state.commands, scope, language_code, self.state.find_chat)

    def pending_updates(self) -> list[JSON]:
        """Updates queued and not yet confirmed by an offset."""
        return [update.to_api() for update in self.state.updates]

    def webhook_deliveries(self) -> list[WebhookDelivery]:
        """Every attempt to POST an update to the webhook, oldest first."""
        return list(self.state.webhook_deliveries)

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
        """Wait until `predicate()` holds, re-checking on every change; TimeoutError if not
        (after `timeout` times the stand-in's `patience`)."""
        timeout *= self.patience
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
