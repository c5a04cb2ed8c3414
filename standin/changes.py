"""One "something changed" signal for everything that waits on the stand-in.

Long polls, `wait_for` in tests and the HTTP wait endpoints all wait on the same
asyncio.Condition and re-check their own predicate whenever anything happens (a bot
call completes, a test injects a message, the server stops). Nothing sleeps in a loop,
so waiters wake as soon as their condition holds and tests stay fast and deterministic.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class ChangeSignal:
    """An asyncio.Condition notified on every state change."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._condition = asyncio.Condition()
        self._pending: set[asyncio.Task[None]] = set()

    def _current(self) -> asyncio.Condition:
        """The condition for the running loop (a StandIn may outlive one test's loop)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._condition = loop, asyncio.Condition()
        return self._condition

    async def notify(self) -> None:
        """Wake every waiter so it re-checks its predicate."""
        condition = self._current()
        async with condition:
            condition.notify_all()

    def poke(self) -> None:
        """notify() from synchronous code; a no-op when no event loop is running."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self.notify())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def wait_until(self, predicate: Callable[[], bool], within: float | None) -> bool:
        """Wait until `predicate()` holds; False if `within` seconds pass first."""
        condition = self._current()
        async with condition:
            try:
                async with asyncio.timeout(within):
                    await condition.wait_for(predicate)
            except TimeoutError:
                return predicate()
        return True
