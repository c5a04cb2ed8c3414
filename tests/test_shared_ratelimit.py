"""The Bot API budget shared by two processes (two limiters, two connections) on PostgreSQL:
together they never exceed the overall, group or per-chat budget (issue 15 #7).

The clock is injected and shared; waiting advances it (no sleeps). A call's send time is
read inside the call, so every wait the limiters decided is in the figures checked.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from bot.ratelimit import SlidingWindowRateLimiter
from bot.shared_ratelimit import (
    RETRY_SHARED_S,
    Budgets,
    Keys,
    SharedRateLimiter,
    admit,
    answered,
)
from standin import StandIn
from storage.pg import connect
from storage.ratelimit.postgres import PgRateStates
from tests.harness import DEMO, TOKEN, start_bot
from tests.storage_backends import Backend

BUDGETS = Budgets(
    overall_limit=5,
    overall_period=1.0,
    group_limit=4,
    group_period=10.0,
    chat_burst=2,
    chat_interval=0.5,
    flight_ttl=60.0,
)
CHATS = (101, 202, -303)  # two private chats and a group
LATENCY = 0.01


def _keys(chat: bool = True, group: bool = False) -> Keys:
    return Keys(
        overall="t:overall",
        group="t:group:-1" if group else None,
        chat="t:chat:1" if chat else None,
    )


def test_a_chat_in_flight_or_out_of_tokens_waits_and_its_answer_charges_it() -> None:
    states: dict[str, dict[str, Any]] = {"t:overall": {}, "t:chat:1": {}}
    keys = _keys()
    assert admit(states, keys, BUDGETS, 10.0, "a") == 0
    assert math.isinf(admit(states, keys, BUDGETS, 10.0, "b"))  # one call per chat at a time
    answered(states, keys, BUDGETS, 10.1, "a")
    assert states["t:chat:1"] == {"tat": 10.6, "busy": None}
    assert admit(states, keys, BUDGETS, 10.1, "b") == 0  # the burst's second token
    answered(states, keys, BUDGETS, 10.2, "b")
    assert admit(states, keys, BUDGETS, 10.2, "c") == pytest.approx(0.4)  # 11.1 − 0.5 − 10.2
    assert [s[0] for s in states["t:overall"]["slots"]] == ["a", "b"]


def test_the_overall_window_counts_calls_in_flight_and_forgets_a_dead_process() -> None:
    states: dict[str, dict[str, Any]] = {"t:overall": {}}
    keys = _keys(chat=False)
    for n in range(5):
        assert admit(states, keys, BUDGETS, 0.0, f"c{n}") == 0
    assert math.isinf(admit(states, keys, BUDGETS, 30.0, "late"))  # all five in flight
    answered(states, keys, BUDGETS, 30.0, "c0")
    assert admit(states, keys, BUDGETS, 30.5, "late") == 0.5  # c0 counts until 31.0
    # Marks of a process that died with calls in flight count as answered after the ttl.
    assert admit(states, keys, BUDGETS, 61.0, "next") == 0


class PausingStates(PgRateStates):
    """Stops inside `transact` once, right after its first lock, until told to go on."""

    pause_next = False
    paused: asyncio.Event
    resume: asyncio.Event

    async def _locked(self, keys: list[str]) -> dict[str, str]:
        found = await super()._locked(keys)
        if self.pause_next:
            self.pause_next = False
            self.paused.set()
            await self.resume.wait()
        return found


async def test_making_a_budgets_row_never_holds_a_lock_another_process_waits_for(
    postgres_backend: Backend,
) -> None:
    """The deadlock a loaded run met, step by step. Process A spends the overall budget
    (its row exists) and a chat's (no row yet): it locks the overall row. Meanwhile a third
    process makes the chat's row and a second locks it, then waits for the overall row.
    A must not go on to lock the chat's row while it still holds the overall one."""
    overall, chat = "t:overall", "t:chat:1"
    states = await PausingStates.open(postgres_backend.url)
    states.paused, states.resume = asyncio.Event(), asyncio.Event()
    third = await connect(postgres_backend.url, timeout_s=5)
    second = await connect(postgres_backend.url, timeout_s=5)
    try:
        await states.transact([overall], lambda found: None)  # the overall row exists
        states.pause_next = True
        spend = asyncio.create_task(states.transact([chat, overall], lambda found: sorted(found)))
        await states.paused.wait()  # A has locked what exists: the overall row
        await third.execute("INSERT INTO rate_limits (key, state) VALUES (%s, '{}')", (chat,))
        async with second.transaction():
            await second.execute("SELECT 1 FROM rate_limits WHERE key = %s FOR UPDATE", (chat,))
            waits = asyncio.create_task(
                second.execute("SELECT 1 FROM rate_limits WHERE key = %s FOR UPDATE", (overall,))
            )
            states.resume.set()
            await waits  # a deadlock would fail this or `spend` (DeadlockDetected)
        assert await spend == [chat, overall]
    finally:
        states.resume.set()
        await states.close()
        await second.close()
        await third.close()


async def test_two_processes_together_keep_every_budget(postgres_backend: Backend) -> None:
    now = [1_000.0]

    def clock() -> float:
        return now[0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds
        await asyncio.sleep(0)

    sends: list[tuple[float, int, int]] = []  # (send time, chat, process)

    def limiter(states: PgRateStates) -> SharedRateLimiter:
        return SharedRateLimiter(
            states=states, prefix="test", budgets=BUDGETS, clock=clock, sleep=sleep, poll_s=0.05
        )

    first = await PgRateStates.open(postgres_backend.url)
    second = await PgRateStates.open(postgres_backend.url)
    limiters = (limiter(first), limiter(second))
    try:

        async def send(process: int, chat: int) -> bool:
            sends.append((now[0], chat, process))
            now[0] += LATENCY  # the answer arrives a little later
            await asyncio.sleep(0)
            return True

        async def customer(process: int, chat: int, messages: int) -> None:
            for _ in range(messages):
                await limiters[process].process_request(
                    send, (process, chat), {}, "sendMessage", {"chat_id": chat}, None
                )

        await asyncio.gather(
            *(customer(p, chat, 6) for p, chat in itertools.product((0, 1), CHATS))
        )
    finally:
        await first.close()
        await second.close()

    assert len(sends) == 2 * len(CHATS) * 6
    times = sorted(t for t, _, _ in sends)
    for start in times:  # any overall period holds at most overall_limit sends
        assert sum(start <= t < start + BUDGETS.overall_period for t in times) <= 5
    group = sorted(t for t, chat, _ in sends if chat < 0)
    for start in group:
        assert sum(start <= t < start + BUDGETS.group_period for t in group) <= 4
    by_chat: dict[int, list[float]] = defaultdict(list)
    for t, chat, _ in sends:
        by_chat[chat].append(t)
    for chat, chat_times in by_chat.items():
        chat_times.sort()
        for i, j in itertools.combinations(range(len(chat_times)), 2):
            # A burst of 2, then one per interval: j − i + 1 sends need (j − i − 1) intervals.
            needed = (j - i + 1 - BUDGETS.chat_burst) * BUDGETS.chat_interval
            assert chat_times[j] - chat_times[i] >= needed - 1e-9, (chat, i, j)
        # Both processes wrote to every chat: the budget was shared, not split.
        assert {p for _, c, p in sends if c == chat} == {0, 1}


async def test_the_bot_on_postgres_spends_the_shared_budget(
    standin: StandIn, tmp_path: Path, postgres_backend: Backend
) -> None:
    """`STEPWISE_DB=postgresql://…` selects the shared limiter; its rows are the bot's."""
    bot = await start_bot(standin, tmp_path / "unused.db", STEPWISE_DB=postgres_backend.url)
    try:
        assert isinstance(bot.app.bot.rate_limiter, SharedRateLimiter)
        bot.standin.inject_message(DEMO, DEMO, "where is order A1001")
        await bot.until_text(DEMO, "expected 2026-12-03")
    finally:
        await bot.stop()
    observer = postgres_backend.observer()
    try:
        rows = dict(observer.execute("SELECT key, state FROM rate_limits").fetchall())
    finally:
        observer.close()
    bot_id = TOKEN.partition(":")[0]
    assert f"bot{bot_id}:overall" in rows
    chat = json.loads(rows[f"bot{bot_id}:chat:{DEMO}"])
    assert chat["busy"] is None and chat["tat"] > 0  # charged, nothing left in flight


async def test_sqlite_keeps_the_in_process_limiter(standin: StandIn, tmp_path: Path) -> None:
    bot = await start_bot(standin, tmp_path / "stepwise.db")
    try:
        limiter = bot.app.bot.rate_limiter
        assert type(limiter) is SlidingWindowRateLimiter
    finally:
        await bot.stop()


async def test_without_the_database_each_process_limits_itself(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A database that cannot be reached must not stop the bot from telling customers it
    has trouble: the process falls back to its own budget, says so once, and tries the
    database again only `RETRY_SHARED_S` later."""
    now = [100.0]
    limiter = SharedRateLimiter(
        "postgresql://postgres@127.0.0.1:1/test", clock=lambda: now[0], max_retries=0
    )
    sent: list[int] = []

    async def send(chat: int) -> bool:
        sent.append(chat)
        return True

    with caplog.at_level("WARNING", logger="bot.shared_ratelimit"):
        for chat in (1, 2, 3):
            data = {"chat_id": chat}
            assert await limiter.process_request(send, (chat,), {}, "sendMessage", data, None)
    assert sent == [1, 2, 3]
    warnings = [r for r in caplog.records if "shared rate limit unavailable" in r.message]
    assert len(warnings) == 1  # tried once, then not again within RETRY_SHARED_S
    assert limiter._shared_again_at == 100.0 + RETRY_SHARED_S
    await limiter.shutdown()
