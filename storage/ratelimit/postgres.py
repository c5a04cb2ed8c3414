"""Rate-limit budgets shared by every process of a bot, in PostgreSQL (`rate_limits`).

One row per budget (the bot's overall window, a group's window, a chat's pacer), its state
as JSON. `transact` locks the rows it is given (`FOR UPDATE`, in key order, and never
while making rows, so two processes never deadlock), lets a pure function decide on their states and writes back
what it changed, all in one transaction: two processes can never both spend the last
token. The decisions themselves live in `bot.ratelimit` / `bot.shared_ratelimit`; this
module only keeps the states.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from psycopg import AsyncConnection

from storage.pg import connect, migrate

T = TypeVar("T")
States = dict[str, dict[str, Any]]
# Rows are never deleted, so the second attempt finds them; a third is a safety margin.
_ATTEMPTS = 3


class PgRateStates:
    """The shared states on one autocommit connection (calls from one process queue)."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, url: str, *, timeout_s: float = 5.0) -> PgRateStates:
        conn = await connect(url, timeout_s=timeout_s)
        await migrate(conn)
        # This connection only keeps budgets: a commit need not wait for the disk. A
        # server crash may forget the last few ms of marks, i.e. admit a call or two early
        # once, right after the restart; waiting for fsync twice a message would instead
        # cost every message (measured: bench/shared_limiter.py).
        await conn.execute("SET synchronous_commit TO off")
        return cls(conn)

    async def transact(self, keys: Sequence[str], decide: Callable[[States], T]) -> T:
        """`decide(states)` on the locked states of `keys` ({} for a new one); the states
        it leaves changed are written back before the locks are released.

        Locks are only ever taken by the one ordered `SELECT … FOR UPDATE`, never while
        rows are made: a budget's first use ends the transaction (releasing what it
        locked), makes the missing rows in a statement of their own, and locks again.
        Making them inside the transaction deadlocked under load: holding the overall
        budget's row, a process went on to lock a chat's row that a third process had just
        made and a second one had locked while it waited for that same overall row.
        """
        ordered = sorted(set(keys))
        async with self._lock:
            for _ in range(_ATTEMPTS):
                async with self._conn.transaction():
                    before = await self._locked(ordered)
                    if len(before) == len(ordered):
                        return await self._decide(before, decide)
                missing = [key for key in ordered if key not in before]
                await self._conn.execute(
                    "INSERT INTO rate_limits (key, state)"
                    " SELECT k, '{}' FROM unnest(%s::text[]) AS k ON CONFLICT (key) DO NOTHING",
                    (missing,),
                )
        raise RuntimeError(f"rate_limits rows vanish as they are made: {missing}")

    async def _decide(self, before: dict[str, str], decide: Callable[[States], T]) -> T:
        states = {key: json.loads(text) for key, text in before.items()}
        result = decide(states)
        changed = [
            (text, key)
            for key, state in states.items()
            if (text := json.dumps(state, separators=(",", ":"))) != before[key]
        ]
        if changed:
            async with self._conn.cursor() as cur:
                await cur.executemany("UPDATE rate_limits SET state = %s WHERE key = %s", changed)
        return result

    async def _locked(self, keys: list[str]) -> dict[str, str]:
        cursor = await self._conn.execute(
            "SELECT key, state FROM rate_limits WHERE key = ANY(%s) ORDER BY key FOR UPDATE",
            (keys,),
        )
        return {str(key): str(state) for key, state in await cursor.fetchall()}

    async def close(self) -> None:
        await self._conn.close()
