"""The Bot API budget shared by every process of one bot (issue 15 #7).

Telegram limits a *bot*: about 30 messages a second overall and a short burst then one a
second per chat, however many `stepwise serve` replicas send them. Each process's own
`SlidingWindowRateLimiter` only sees its own calls, so N replicas could send N times the
budget and collect 429s. `SharedRateLimiter` keeps the same budgets in PostgreSQL
(`storage.ratelimit.postgres`): each call is admitted in one transaction that locks its budgets'
rows, decides with the same pure functions as the in-process limiter (`window_wait`,
`pacer_wait`, `pacer_charge` in `bot.ratelimit`), marks itself in flight and commits; its
answer is recorded in a second one. Selected only when `STEPWISE_DB` is a PostgreSQL URL
(the replicas share it already; no new service); `make run` on SQLite keeps the
in-process limiter.

A call in flight counts until its answer, as in process; a process killed with calls in
flight would hold their marks forever, so a mark older than `flight_ttl_s` counts as
answered then. The clock must be shared too: wall time (`time.time`), as replicas of one
bot run on NTP-synchronised machines (the safety margin absorbs a few ms of skew).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import psycopg

from bot.ratelimit import (
    CHAT_BURST,
    CHAT_INTERVAL_S,
    PACING_MARGIN,
    SlidingWindowRateLimiter,
    _group_key,
    pacer_charge,
    pacer_wait,
    window_wait,
)
from storage.db import StorageUnavailable
from storage.ratelimit.postgres import PgRateStates, States

log = logging.getLogger(__name__)

# After the database failed, this process limits itself alone for this long, then tries it
# again (each try costs a connection attempt of up to a second).
RETRY_SHARED_S = 5.0

Slot = list[Any]  # [ticket, admitted at, answered at or None]


@dataclass(frozen=True)
class Budgets:
    overall_limit: int = 30
    overall_period: float = 1.0 * (1 + PACING_MARGIN)
    group_limit: int = 20
    group_period: float = 60.0 * (1 + PACING_MARGIN)
    chat_burst: int = CHAT_BURST
    chat_interval: float = CHAT_INTERVAL_S * (1 + PACING_MARGIN)
    # A mark this old belongs to a call that has surely ended: PTB bounds one call by its
    # timeouts (pool 1 + connect 5 + write 5 + read 5 s). Longer, and a replica killed with
    # a call in flight holds its chat for that long (the crash soak saw answers a minute
    # late, 60 s before).
    flight_ttl: float = 20.0


@dataclass(frozen=True)
class Keys:
    """The rows one call spends: the bot's overall window, its group's, its chat's pacer."""

    overall: str
    group: str | None
    chat: str | None

    def all(self) -> list[str]:
        return [k for k in (self.overall, self.group, self.chat) if k is not None]


def _end(slot: Slot, now: float, ttl: float) -> float:
    _, start, end = slot
    if end is not None:
        return float(end)
    return float(start) + ttl if now - float(start) >= ttl else math.inf


def admit(states: States, keys: Keys, budgets: Budgets, now: float, ticket: str) -> float:
    """0 when the call may go now (its marks are added to `states`), else how long to wait
    (`inf`: until some call in flight is answered — poll). Pure, on the locked states."""
    waits: list[float] = []
    if keys.chat is not None:
        chat = states[keys.chat]
        busy = chat.get("busy")
        if busy is not None and now - float(busy[1]) < budgets.flight_ttl:
            waits.append(math.inf)  # one call per chat at a time, as in process
        else:
            tat = chat.get("tat")
            waits.append(
                pacer_wait(
                    -math.inf if tat is None else tat,
                    now,
                    budgets.chat_burst,
                    budgets.chat_interval,
                )
            )
    windows = [(keys.overall, budgets.overall_limit, budgets.overall_period)]
    if keys.group is not None:
        windows.append((keys.group, budgets.group_limit, budgets.group_period))
    for key, limit, period in windows:
        state = states[key]
        ttl = budgets.flight_ttl
        slots = [s for s in state.get("slots", []) if now - _end(s, now, ttl) < period]
        state["slots"] = slots
        waits.append(window_wait((_end(s, now, ttl) for s in slots), now, limit, period))
    wait = max(waits, default=0.0)
    if wait > 0:
        return wait
    if keys.chat is not None:
        states[keys.chat]["busy"] = [ticket, now]
    for key, _, _ in windows:
        states[key]["slots"].append([ticket, now, None])
    return 0.0


def answered(states: States, keys: Keys, budgets: Budgets, now: float, ticket: str) -> None:
    """The call's answer arrived at `now`: its slots count from now, its chat is charged."""
    for key in (keys.overall, keys.group):
        if key is not None:
            for slot in states[key].get("slots", []):
                if slot[0] == ticket:
                    slot[2] = now
    if keys.chat is not None:
        chat = states[keys.chat]
        tat = chat.get("tat")
        chat["tat"] = pacer_charge(-math.inf if tat is None else tat, now, budgets.chat_interval)
        busy = chat.get("busy")
        if busy is not None and busy[0] == ticket:
            chat["busy"] = None


class SharedRateLimiter(SlidingWindowRateLimiter):
    """`SlidingWindowRateLimiter` whose budgets are shared through PostgreSQL (see above);
    the retry and 429 pause logic are the in-process limiter's."""

    def __init__(
        self,
        url: str | None = None,
        *,
        states: PgRateStates | None = None,
        prefix: str = "telegram",
        budgets: Budgets | None = None,
        poll_s: float = 0.05,
        max_retries: int = 3,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(max_retries=max_retries, clock=clock)
        if url is None and states is None:
            raise ValueError("a shared rate limiter needs a database URL or states")
        self._url = url
        self._states = states
        self._owns_states = states is None
        self._prefix = prefix
        self._budgets = budgets or Budgets()
        self._poll_s = poll_s
        self._sleep = sleep
        self._shared_again_at = -math.inf

    async def initialize(self) -> None:
        if self._states is None and self._url is not None:
            self._states = await PgRateStates.open(self._url, timeout_s=1.0)

    async def shutdown(self) -> None:
        if self._owns_states and self._states is not None:
            await self._states.close()
            self._states = None

    def keys(self, chat_id: Any, message: bool) -> Keys:
        group = _group_key(chat_id) if message else None
        return Keys(
            overall=f"{self._prefix}:overall",
            group=None if group is None else f"{self._prefix}:group:{group}",
            chat=f"{self._prefix}:chat:{chat_id}" if message else None,
        )

    async def _admit(self, chat_id: Any, message: bool) -> Callable[[], Awaitable[None]]:
        """The shared budget; while the database cannot be reached, this process's own
        (the in-process limiter's), so the bot can still tell customers it has trouble.
        The database is tried again `RETRY_SHARED_S` after a failure."""
        if chat_id is None:  # not chat-bound (getUpdates, getMe): not limited, as in process
            return _nothing
        if self._clock() >= self._shared_again_at:
            try:
                return await self._admit_shared(chat_id, message)
            except (psycopg.Error, OSError, StorageUnavailable) as exc:
                self._lost(exc)
        return await super()._admit(chat_id, message)

    async def _admit_shared(self, chat_id: Any, message: bool) -> Callable[[], Awaitable[None]]:
        if self._states is None:
            await self.initialize()
        states = self._states
        assert states is not None
        keys, budgets, ticket = self.keys(chat_id, message), self._budgets, secrets.token_hex(8)
        while True:
            decide = partial(admit, keys=keys, budgets=budgets, now=self._clock(), ticket=ticket)
            wait = await states.transact(keys.all(), decide)
            if wait == 0:
                break
            await self._sleep(self._poll_s if math.isinf(wait) else wait)

        async def release() -> None:
            decide = partial(answered, keys=keys, budgets=budgets, now=self._clock(), ticket=ticket)
            try:
                await states.transact(keys.all(), decide)
            except (psycopg.Error, OSError, StorageUnavailable) as exc:
                self._lost(exc)  # its marks expire after `flight_ttl`

        return release

    def _lost(self, exc: BaseException) -> None:
        if self._clock() >= self._shared_again_at:
            log.warning("shared rate limit unavailable (%s): this process limits itself", exc)
        self._shared_again_at = self._clock() + RETRY_SHARED_S
        if self._owns_states and self._states is not None:
            states, self._states = self._states, None
            asyncio.get_running_loop().create_task(_close_quietly(states))


async def _close_quietly(states: PgRateStates) -> None:
    with contextlib.suppress(Exception):
        await states.close()


async def _nothing() -> None:
    return None
