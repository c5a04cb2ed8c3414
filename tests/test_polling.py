"""One poller at a time (issue 15, item 2), in process: two `Poller`s on one SQLite inbox,
a fake Bot API that records who polled when.

The safety property: a holder that can no longer renew its lease (cut off from the
database) has stopped polling — its long poll in flight cancelled — before the other
process may take the lease; so Telegram never sees two pollers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.polling import Poller
from storage.db import StorageUnavailable
from storage.inbox.sqlite import Inbox, Lease
from storage.store import open_inbox
from tests.harness import until

LEASE_S = 1.5


@dataclass
class Polls:
    """Every getUpdates: (who, started, ended), on the monotonic clock."""

    calls: list[tuple[str, float, float]] = field(default_factory=list)


class FakeBot:
    """Long polls that last `poll_s` (or until cancelled) and return nothing."""

    def __init__(self, name: str, polls: Polls, poll_s: float = 0.2) -> None:
        self.name, self.polls, self.poll_s = name, polls, poll_s

    async def get_updates(self, **_: Any) -> tuple[()]:
        started = time.monotonic()
        try:
            await asyncio.sleep(self.poll_s)
        finally:
            self.polls.calls.append((self.name, started, time.monotonic()))
        return ()

    async def delete_webhook(self, **_: Any) -> bool:
        return True


class CutOff:
    """An inbox that can be cut off from the database: every call then fails."""

    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox
        self.cut = False

    def _check(self) -> None:
        if self.cut:
            raise StorageUnavailable("connection lost")

    async def take_lease(self, name: str, owner: str, now: float, until: float) -> bool:
        self._check()
        return await self.inbox.take_lease(name, owner, now, until)

    async def lease(self, name: str) -> Lease | None:
        self._check()
        return await self.inbox.lease(name)

    async def release_lease(self, name: str, owner: str) -> None:
        self._check()
        await self.inbox.release_lease(name, owner)


@dataclass
class FakeIntake:
    inbox: Any
    owner: str
    lease_s: float = LEASE_S

    async def receive(self, updates: Sequence[Any]) -> bool:
        return True


async def test_a_holder_cut_off_from_the_database_stops_polling_before_another_takes_over(
    tmp_path: Path,
) -> None:
    polls = Polls()
    inboxes = [await open_inbox(tmp_path / "bot.db") for _ in range(2)]
    cut = [CutOff(inbox) for inbox in inboxes]
    pollers = [
        Poller(FakeBot(name, polls), FakeIntake(c, f"elsewhere-{name}:1:x"), [])  # type: ignore[arg-type]
        for name, c in zip("ab", cut, strict=True)
    ]
    tasks = [asyncio.ensure_future(p.run()) for p in pollers]
    try:
        await until(lambda: any(p.holding() for p in pollers), what="one poller holding")
        await until(lambda: polls.calls, what="a poll")
        holder = next(i for i, p in enumerate(pollers) if p.holding())
        other = 1 - holder
        assert not pollers[other].holding()
        holder_name, other_name = "ab"[holder], "ab"[other]
        assert {who for who, _, _ in polls.calls} == {holder_name}

        cut[holder].cut = True
        cut_at = time.monotonic()
        await until(lambda: pollers[other].holding(), within=10, what="the standby taking over")
        await until(
            lambda: any(who == other_name for who, _, _ in polls.calls), what="its first poll"
        )
        took_over = min(start for who, start, _ in polls.calls if who == other_name)
        last_of_holder = max(end for who, _, end in polls.calls if who == holder_name)
        assert last_of_holder < took_over, "two pollers at once"
        assert not pollers[holder].holding()
        assert LEASE_S * 2 / 3 <= took_over - cut_at <= LEASE_S * 2  # expiry, then a try
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for inbox in inboxes:
            await inbox.close()


async def test_a_graceful_stop_hands_polling_over_at_the_next_try(tmp_path: Path) -> None:
    polls = Polls()
    inboxes = [await open_inbox(tmp_path / "bot.db") for _ in range(2)]
    pollers = [
        Poller(FakeBot(name, polls), FakeIntake(inbox, f"elsewhere-{name}:1:x"), [])  # type: ignore[arg-type]
        for name, inbox in zip("ab", inboxes, strict=True)
    ]
    first = asyncio.ensure_future(pollers[0].run())
    await until(pollers[0].holding, what="the first holding")
    second = asyncio.ensure_future(pollers[1].run())
    try:
        await until(lambda: pollers[1]._waiting_for is not None, what="the second waiting")
        first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first
        await pollers[0].release()
        released = time.monotonic()
        await until(pollers[1].holding, within=5, what="the second taking over")
        assert time.monotonic() - released <= LEASE_S  # not the lease's expiry: one try
    finally:
        second.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await second
        for inbox in inboxes:
            await inbox.close()
