"""Telegram-style flood control: a burst-then-steady budget per chat, windows per group and bot.

Telegram does not publish exact limits, only guidance: in a single chat avoid sending more
than about one message per second (short bursts are tolerated, then you get 429), in a
group no more than 20 messages per minute, and about 30 messages per second overall. It
answers excess with 429 and `retry_after`. The stand-in models a chat as a token bucket —
a burst of `per_chat` messages at once, then one every `per_chat_interval` seconds — and
groups and the bot as sliding windows. The numbers are one `FloodLimits` value, and its
defaults ARE the stand-in's realistic limits (the bot paces itself to exactly these), so
tests can also provoke flood control with a handful of calls.

Sends and edits count; answerCallbackQuery, sendChatAction and deletions do not (methods.py
calls `admit` only for the former). Only accepted calls consume budget: a request answered
with 429 is not counted again.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import too_many_requests

_ROUNDING = 1e-9  # a bot pacing at exactly the interval must not lose to float arithmetic


@dataclass(frozen=True)
class FloodLimits:
    """Telegram's flood limits, as the stand-in applies them.

    Per chat: a burst of `per_chat` sends/edits, then one per `per_chat_interval` seconds
    sustained (burst 3, then 1/s). Per group: `per_group` per `per_group_window` seconds
    (20 a minute). Per bot: `overall` per `overall_window` seconds (30/s).
    """

    per_chat: int = 3
    per_chat_interval: float = 1.0
    per_group: int = 20
    per_group_window: float = 60.0
    overall: int = 30
    overall_window: float = 1.0


@dataclass
class _Bucket:
    """A chat's budget: `capacity` messages at once, refilled one per `interval` seconds."""

    capacity: int
    interval: float
    tokens: float
    last: float

    def retry_after(self, now: float) -> int | None:
        """Seconds until one more message fits, or None if it fits now."""
        self._refill(now)
        if self.tokens + _ROUNDING >= 1:
            return None
        return max(1, math.ceil((1 - self.tokens) * self.interval))

    def take(self, now: float) -> None:
        self._refill(now)
        self.tokens = max(0.0, self.tokens - 1)

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.last)
        self.tokens = min(float(self.capacity), self.tokens + elapsed / self.interval)
        self.last = now


@dataclass
class _Window:
    limit: int
    seconds: float
    stamps: deque[float] = field(default_factory=deque)

    def retry_after(self, now: float) -> int | None:
        """Seconds until one more call fits, or None if it fits now."""
        while self.stamps and self.stamps[0] <= now - self.seconds:
            self.stamps.popleft()
        if len(self.stamps) < self.limit:
            return None
        return max(1, math.ceil(self.stamps[0] + self.seconds - now))

    def take(self, now: float) -> None:
        self.stamps.append(now)


class FloodControl:
    """Admits or refuses sending calls; counts every refusal for the tests to inspect."""

    def __init__(self, limits: FloodLimits, clock: Callable[[], float]) -> None:
        self.limits = limits
        self._clock = clock
        self._overall = _Window(limits.overall, limits.overall_window)
        self._chats: dict[int, _Bucket] = {}
        self._groups: dict[int, _Window] = {}
        self.refused: Counter[int] = Counter()

    def admit(self, chat_id: int, is_group: bool) -> None:
        """Count a message/edit to `chat_id`, or raise Telegram's 429 without counting it."""
        now = self._clock()
        limits: list[_Bucket | _Window] = [self._overall, self._chat(chat_id, now)]
        if is_group:
            limits.append(self._group(chat_id))
        waits = [wait for wait in (limit.retry_after(now) for limit in limits) if wait is not None]
        if waits:
            self.refused[chat_id] += 1
            raise too_many_requests(max(waits))
        for limit in limits:
            limit.take(now)

    def _chat(self, chat_id: int, now: float) -> _Bucket:
        if chat_id not in self._chats:
            capacity = self.limits.per_chat
            self._chats[chat_id] = _Bucket(
                capacity, self.limits.per_chat_interval, float(capacity), now
            )
        return self._chats[chat_id]

    def _group(self, chat_id: int) -> _Window:
        if chat_id not in self._groups:
            self._groups[chat_id] = _Window(self.limits.per_group, self.limits.per_group_window)
        return self._groups[chat_id]
