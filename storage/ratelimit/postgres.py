"""Rate-limit budgets shared by every process of a bot, in PostgreSQL (`rate_limits`).

One row per budget (the bot's overall window, a group's window, a chat's pacer), its state
as JSON. `transact` locks the rows it is given (`FOR UPDATE`, in key order, so two
processes never deadlock), lets a pure function decide on their states and writes back
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
        it leaves changed are written back before the locks are released."""
        ordered = sorted(set(keys))
        async with self._lock, self._conn.transaction():
            before = await self._locked(ordered)
            if len(before) < len(ordered):  # a budget's first use: make its row, lock again
                await self._conn.execute(
                    "INSERT INTO rate_limits (key, state)"
                    " SELECT k, '{}' FROM unnest(%s::text[]) AS k ON CONFLICT (key) DO NOTHING",
                    (ordered,),
                )
                before = await self._locked(ordered)
            states = {key: json.loads(text) for key, text in before.items()}
            result = decide(states)
            changed = [
                (text, key)
                for key, state in states.items()
                if (text := json.dumps(state, separators=(",", ":"))) != before[key]
            ]
            if changed:
                async with self._conn.cursor() as cur:
                    await cur.executemany(
                        "UPDATE rate_limits SET state = %s WHERE key = %s", changed
                    )
        return result

    async def _locked(self, keys: list[str]) -> dict[str, str]:
        cursor = await self._conn.execute(
            "SELECT key, state FROM rate_limits WHERE key = ANY(%s) ORDER BY key FOR UPDATE",
            (keys,),
        )
        return {str(key): str(state) for key, state in await cursor.fetchall()}

    async def close(self) -> None:
        await self._conn.close()
