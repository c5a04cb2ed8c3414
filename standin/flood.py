"""Telegram-style flood control: sliding windows per chat, per group and per bot.

Telegram does not publish exact limits, only guidance (about one message per second per
chat with short bursts tolerated, 20 per minute in a group, about 30 per second overall)
and answers excess with 429 and `retry_after`. The numbers are one `FloodLimits` value so
tests can provoke flood control with a handful of calls; the defaults follow the guidance.
Only accepted calls consume budget: a request answered with 429 is not counted again.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import too_many_requests


@dataclass(frozen=True)
class FloodLimits:
    """How many messages/edits fit into which window (seconds)."""

    per_chat: int = 20
    per_chat_window: float = 1.0
    per_group: int = 20
    per_group_window: float = 60.0
    overall: int = 30
    overall_window: float = 1.0


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


class FloodControl:
    """Admits or refuses sending calls; counts every refusal for the tests to inspect."""

    def __init__(self, limits: FloodLimits, clock: Callable[[], float]) -> None:
        self.limits = limits
        self._clock = clock
        self._overall = _Window(limits.overall, limits.overall_window)
        self._chats: dict[int, _Window] = {}
        self._groups: dict[int, _Window] = {}
        self.refused: Counter[int] = Counter()

    def admit(self, chat_id: int, is_group: bool) -> None:
        """Count a message/edit to `chat_id`, or raise Telegram's 429 without counting it."""
        now = self._clock()
        windows = [self._overall, self._chat_window(chat_id)]
        if is_group:
            windows.append(self._group_window(chat_id))
        waits = [wait for wait in (w.retry_after(now) for w in windows) if wait is not None]
        if waits:
            self.refused[chat_id] += 1
            raise too_many_requests(max(waits))
        for window in windows:
            window.stamps.append(now)

    def _chat_window(self, chat_id: int) -> _Window:
        if chat_id not in self._chats:
            self._chats[chat_id] = _Window(self.limits.per_chat, self.limits.per_chat_window)
        return self._chats[chat_id]

    def _group_window(self, chat_id: int) -> _Window:
        if chat_id not in self._groups:
            self._groups[chat_id] = _Window(self.limits.per_group, self.limits.per_group_window)
        return self._groups[chat_id]
