"""Flood control that keeps the bot under Telegram's limits instead of bouncing off them.

PTB's `AIORateLimiter` uses a leaky bucket, which lets a burst of up to twice the rate
through in one second; Telegram (and our stand-in) count in a sliding window and answer
such bursts with 429. This limiter counts the same way: at most `overall_max_rate`
chat-bound calls in any `overall_period` (with a small safety margin for network jitter),
at most `group_max_rate` per group chat per `group_period`. A 429 that still happens
pauses *all* calls for `retry_after`, then the call is retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from telegram.error import RetryAfter
from telegram.ext import BaseRateLimiter

log = logging.getLogger(__name__)

JSONResult = bool | dict[str, Any] | list[dict[str, Any]]


class SlidingWindow:
    """Admits at most `limit` events in any `period` seconds, first come first served."""

    def __init__(self, limit: int, period: float, clock: Callable[[], float]) -> None:
        self.limit = limit
        self.period = period
        self._clock = clock
        self._times: deque[float] = deque()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        async with self._lock:
            while True:
                now = self._clock()
                while self._times and now - self._times[0] >= self.period:
                    self._times.popleft()
                if len(self._times) < self.limit:
                    self._times.append(now)
                    return
                await asyncio.sleep(self._times[0] + self.period - now)

    @property
    def idle(self) -> bool:
        now = self._clock()
        return not self._lock.locked() and all(now - t >= self.period for t in self._times)


class SlidingWindowRateLimiter(BaseRateLimiter[int]):
    def __init__(
        self,
        overall_max_rate: int = 30,
        overall_period: float = 1.0,
        group_max_rate: int = 20,
        group_period: float = 60.0,
        max_retries: int = 3,
        margin: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._overall = SlidingWindow(overall_max_rate, overall_period * (1 + margin), clock)
        self._group_limit = group_max_rate
        self._group_period = group_period * (1 + margin)
        self._groups: dict[int | str, SlidingWindow] = {}
        self._max_retries = max_retries
        self._resume_at = 0.0

    async def initialize(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, JSONResult]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> JSONResult:
        max_retries = rate_limit_args if rate_limit_args is not None else self._max_retries
        chat_id = data.get("chat_id")
        for attempt in range(max_retries + 1):
            await self._wait_for_resume()
            if chat_id is not None:
                group = _group_key(chat_id)
                if group is not None:
                    await self._group(group).acquire()
                await self._overall.acquire()
            try:
                return await callback(*args, **kwargs)
            except RetryAfter as exc:
                if attempt == max_retries:
                    raise
                pause = _seconds(exc) + 0.1
                log.info("flood control on %s: pausing %.1fs", endpoint, pause)
                self._resume_at = max(self._resume_at, self._clock() + pause)
        raise AssertionError("unreachable")

    async def _wait_for_resume(self) -> None:
        delay = self._resume_at - self._clock()
        if delay > 0:
            await asyncio.sleep(delay)

    def _group(self, key: int | str) -> SlidingWindow:
        for stale in [k for k, w in self._groups.items() if w.idle and k != key]:
            del self._groups[stale]  # keep memory flat with many groups
        window = self._groups.get(key)
        if window is None:
            window = self._groups[key] = SlidingWindow(
                self._group_limit, self._group_period, self._clock
            )
        return window


def _group_key(chat_id: Any) -> int | str | None:
    """Group and channel ids are negative (or @usernames); private chats are not limited."""
    if isinstance(chat_id, str) and not chat_id.lstrip("-").isdigit():
        return chat_id
    with contextlib.suppress(TypeError, ValueError):
        number = int(chat_id)
        return number if number < 0 else None
    return None


def _seconds(exc: RetryAfter) -> float:
    value: Any = exc._retry_after  # a timedelta in PTB v22 (the public attribute warns)
    return float(value.total_seconds()) if hasattr(value, "total_seconds") else float(value)
