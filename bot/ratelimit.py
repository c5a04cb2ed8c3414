"""Flood control that keeps the bot under Telegram's limits instead of bouncing off them.

PTB's `AIORateLimiter` uses a leaky bucket, which lets a burst of up to twice the rate
through in one second; Telegram (and our stand-in) count in a sliding window and answer
such bursts with 429. This limiter counts the same way: at most `overall_max_rate`
chat-bound calls in any `overall_period` (with a small safety margin for network jitter),
at most `group_max_rate` messages per group chat per `group_period`, each call counted from
when its answer arrived. Per chat (private chats too) it follows Telegram's "about one
message per second, short bursts tolerated": a burst of `chat_burst` messages, then one
per `chat_interval` (`ChatPacer`). Chat actions ("typing…") count only overall. A 429
that still happens pauses *all* calls for `retry_after`, then the call is retried, and
`on_flood` hears of it (the staff alert of a burst of 429s, `bot.alerts`) unless the call
was made under `UNCOUNTED_429` (that alert's own post: it cannot feed itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from contextvars import ContextVar
from typing import Any

from telegram.error import RetryAfter
from telegram.ext import BaseRateLimiter

from bot import metrics

log = logging.getLogger(__name__)

JSONResult = bool | dict[str, Any] | list[dict[str, Any]]

# Set while the staff alerts post (`bot.alerts`): their 429s are not told to `on_flood`.
UNCOUNTED_429: ContextVar[bool] = ContextVar("stepwise_uncounted_429", default=False)


# -- the decisions, pure: the in-process limiter below and the shared one
# (`bot.shared_ratelimit`) both decide with these ------------------------------------------


def window_wait(ends: Iterable[float], now: float, limit: int, period: float) -> float:
    """How long until a sliding window of `limit` calls per `period` admits one more: 0 now,
    `inf` when every counted call is still in flight (its answer ends it). `ends`: when each
    admitted call's answer arrived (in flight: `inf`); one counts while `now - end < period`.
    """
    live = [end for end in ends if now - end < period]
    if len(live) < limit:
        return 0.0
    oldest = min(live)
    return math.inf if math.isinf(oldest) else oldest + period - now


def pacer_wait(tat: float, now: float, burst: int, interval: float) -> float:
    """How long until a chat's token bucket (GCRA, `tat` = when it is full) has a token."""
    return max(0.0, tat - (burst - 1) * interval - now)


def pacer_charge(tat: float, now: float, interval: float) -> float:
    """The bucket's `tat` after a call charged at `now` (its answer)."""
    return max(now, tat) + interval


class _Slot:
    """One admitted call. It counts from when its answer arrived (in flight: forever)."""

    __slots__ = ("end",)

    def __init__(self) -> None:
        self.end = math.inf


class SlidingWindow:
    """Admits at most `limit` calls in any `period` seconds, first come first served.

    A call's slot is anchored at the moment its *answer* arrives, not when it was sent:
    the server counts a call when it reaches it, which is somewhere in between, so only
    the answer time is sure to be no earlier than the server's. (Anchoring at send time
    let a call delayed on the way open the next window early — a 429.)
    """

    def __init__(self, limit: int, period: float, clock: Callable[[], float]) -> None:
        self.limit = limit
        self.period = period
        self._clock = clock
        self._slots: list[_Slot] = []
        self._lock = asyncio.Lock()
        self._released = asyncio.Event()

    async def acquire(self) -> _Slot:
        async with self._lock:
            while True:
                now = self._clock()
                self._slots = [s for s in self._slots if now - s.end < self.period]
                wait = window_wait((s.end for s in self._slots), now, self.limit, self.period)
                if wait == 0:
                    slot = _Slot()
                    self._slots.append(slot)
                    return slot
                if math.isinf(wait):  # all in flight: wait for an answer
                    self._released.clear()
                    await self._released.wait()
                else:
                    await asyncio.sleep(wait)

    def release(self, slot: _Slot) -> None:
        slot.end = self._clock()
        self._released.set()

    @property
    def idle(self) -> bool:
        now = self._clock()
        return not self._lock.locked() and all(now - s.end >= self.period for s in self._slots)


class ChatPacer:
    """One chat's budget, kept from the bot's side: `burst` messages at once, then one per
    `interval` seconds — a token bucket, in its GCRA form (`tat`: when the bucket is full).

    The server counts a call when it arrives, somewhere between sending and the answer, so
    a call is charged at its *answer* (the latest the server can have counted it) and the
    next one waits until the server's bucket must have a token again, even if this call
    reached it late. Calls to one chat go one at a time (the one in flight holds the
    pacer), so the server sees them in the order they were charged.
    """

    def __init__(self, burst: int, interval: float, clock: Callable[[], float]) -> None:
        self.burst = burst
        self.interval = interval
        self._clock = clock
        self._tat = -math.inf  # theoretical arrival time: the bucket is full from here on
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        """Hold the chat until `release`. A caller cancelled while it waits for a token
        (a progress edit made moot, a stopping bot) lets go of the chat, or every later
        call to it would wait forever."""
        await self._lock.acquire()
        try:
            wait = pacer_wait(self._tat, self._clock(), self.burst, self.interval)
            if wait > 0:
                await asyncio.sleep(wait)
        except BaseException:
            self._lock.release()  # nothing was sent: nothing to charge
            raise

    def release(self) -> None:
        self._tat = pacer_charge(self._tat, self._clock(), self.interval)
        self._lock.release()

    @property
    def idle(self) -> bool:
        """Nothing in flight and the bucket full again: forgetting it changes nothing."""
        return not self._lock.locked() and self._clock() >= self._tat


# Telegram's per-chat guidance as numbers (the stand-in's `FloodLimits` defaults): a burst
# of 3, then one message per second.
CHAT_BURST = 3
CHAT_INTERVAL_S = 1.0
# Every period and interval is stretched by this much: the server's clock and ours see a
# call at slightly different moments (network jitter, and across replicas clock skew).
PACING_MARGIN = 0.02
# What a chat's budget is spent on: new messages and edits, not "typing…" or answers.
_MESSAGE_PREFIXES = ("send", "edit", "copy", "forward")
_NOT_MESSAGES = frozenset({"sendchataction"})
_FIRST_SWEEP = 64  # idle chats are forgotten when the table doubles (amortised O(1))


def counts_as_message(endpoint: str) -> bool:
    """Does a call to `endpoint` spend a chat's message budget (sendMessage, editMessage…)?"""
    name = endpoint.lower()
    return name.startswith(_MESSAGE_PREFIXES) and name not in _NOT_MESSAGES


class SlidingWindowRateLimiter(BaseRateLimiter[int]):
    def __init__(
        self,
        overall_max_rate: int = 30,
        overall_period: float = 1.0,
        group_max_rate: int = 20,
        group_period: float = 60.0,
        chat_burst: int = CHAT_BURST,
        chat_interval: float = CHAT_INTERVAL_S,
        max_retries: int = 3,
        margin: float = PACING_MARGIN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._overall = SlidingWindow(overall_max_rate, overall_period * (1 + margin), clock)
        self._group_limit = group_max_rate
        self._group_period = group_period * (1 + margin)
        self._groups: dict[int | str, SlidingWindow] = {}
        self._chat_burst = chat_burst
        self._chat_interval = chat_interval * (1 + margin)
        self._chats: dict[int | str, ChatPacer] = {}
        self._sweep_at = _FIRST_SWEEP
        self._max_retries = max_retries
        self._resume_at = 0.0
        # Told of every 429 (sync, cheap), except those of calls under `UNCOUNTED_429`.
        self.on_flood: Callable[[], None] | None = None

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
        message = chat_id is not None and counts_as_message(endpoint)
        for attempt in range(max_retries + 1):
            waiting = time.monotonic()
            await self._wait_for_resume()
            release = await self._admit(chat_id, message)
            metrics.LIMITER_WAIT.observe(time.monotonic() - waiting)
            try:
                result = await callback(*args, **kwargs)
            except RetryAfter as exc:
                metrics.count_telegram_call(endpoint, exc)
                metrics.TELEGRAM_RETRY_AFTER.inc(_seconds(exc))
                if self.on_flood is not None and not UNCOUNTED_429.get():
                    self.on_flood()
                if attempt == max_retries:
                    raise
                pause = _seconds(exc) + 0.1
                log.info("flood control on %s: pausing %.1fs", endpoint, pause)
                self._resume_at = max(self._resume_at, self._clock() + pause)
            except Exception as exc:
                metrics.count_telegram_call(endpoint, exc)
                raise
            else:
                metrics.count_telegram_call(endpoint, None)
                return result
            finally:
                await release()
        raise AssertionError("unreachable")

    async def _admit(self, chat_id: Any, message: bool) -> Callable[[], Awaitable[None]]:
        """Wait until a call to `chat_id` may go; returns what to call when its answer (or
        its failure) arrived. The per-chat pacer first, then the group's window, then the
        bot's overall window (`bot.shared_ratelimit` decides the same across processes)."""
        held: list[tuple[SlidingWindow, _Slot]] = []
        pacer = self._pacer(chat_id) if message else None
        if pacer is not None:
            await pacer.acquire()

        async def release() -> None:
            for window, slot in held:
                window.release(slot)
            if pacer is not None:
                pacer.release()

        try:
            if message:
                group = _group_key(chat_id)
                if group is not None:
                    window = self._group(group)
                    held.append((window, await window.acquire()))
            if chat_id is not None:
                held.append((self._overall, await self._overall.acquire()))
        except BaseException:
            await release()
            raise
        return release

    def _pacer(self, chat_id: Any) -> ChatPacer:
        key = chat_id if isinstance(chat_id, int | str) else str(chat_id)
        pacer = self._chats.get(key)
        if pacer is None:
            if len(self._chats) >= self._sweep_at:  # keep memory flat with many chats
                for stale in [k for k, p in self._chats.items() if p.idle]:
                    del self._chats[stale]
                self._sweep_at = max(_FIRST_SWEEP, 2 * len(self._chats))
            pacer = self._chats[key] = ChatPacer(self._chat_burst, self._chat_interval, self._clock)
        return pacer

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
