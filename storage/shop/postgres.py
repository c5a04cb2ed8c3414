"""The demo shop kept in PostgreSQL: the same orders, policies and ledger of changes.

Behaves as `storage.shop.sqlite.SqliteShop` because it IS the same shop (`storage.shop.core.
LedgerShop`: same seed file and validation, same reads, rules, ledger and outcomes, same
`latency_s` window after the commit); this module only opens transactions, on a pool of
its own. What SQLite gets from `BEGIN IMMEDIATE` (one writer at a time) PostgreSQL gets
from locks taken in the transaction, so any number of processes can share the shop:

* a change holds a transaction-scoped advisory lock on its idempotency key, so a second
  call with the key waits for the first to commit and then replays its outcome;
* it reads the order `FOR UPDATE`, so two keys racing for one order see each other's
  result (the second is refused: already cancelled, already returned, refund over what
  is left) instead of both acting;
* seeding holds an advisory lock on the `seeded` marker's key, so processes starting
  together seed once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection

from storage.pg import DEFAULT_LOCK_TIMEOUT_S, Pool, open_pool, pg_sql, records
from storage.pg import message as pg_message
from storage.shop.core import Clock, LedgerShop, utc_now
from storage.shop.ledger import Row, ShopTx
from storage.shop.seed import DEFAULT_SEED_PATH

T = TypeVar("T")
SHOP_POOL_SIZE = 4


class _PgTx:
    """`ShopTx` on one pooled connection, translating `?` to psycopg's `%s`."""

    row_lock = " FOR UPDATE"

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn

    async def fetchone(self, sql: str, params: tuple[Any, ...] = ()) -> Row | None:
        cur = self._conn.cursor(row_factory=records)
        await cur.execute(pg_sql(sql), params)
        return await cur.fetchone()

    async def fetchall(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
        cur = self._conn.cursor(row_factory=records)
        await cur.execute(pg_sql(sql), params)
        return list(await cur.fetchall())

    async def execute(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        cur = await self._conn.execute(pg_sql(sql), params)
        return cur.rowcount

    async def executemany(self, sql: str, params: list[tuple[Any, ...]]) -> None:
        async with self._conn.cursor() as many:
            await many.executemany(pg_sql(sql), params)

    async def lock(self, name: str) -> None:
        await self._conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (name,))


class PgShop(LedgerShop):
    """`ShopBackend` over PostgreSQL. Use `await PgShop.open(url)`, then `await close()`."""

    _db_errors = (psycopg.Error,)

    def __init__(self, pool: Pool, *, latency_s: float = 0.0, clock: Clock = utc_now) -> None:
        super().__init__(latency_s=latency_s, clock=clock)
        self._pool = pool

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        seed_path: str | Path | None = None,
        latency_s: float = 0.0,
        busy_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        clock: Clock = utc_now,
    ) -> PgShop:
        """Connect (migrating first) and seed the shop on its first start (see SqliteShop)."""
        if latency_s < 0:
            raise ValueError("latency_s must not be negative")
        pool = await open_pool(
            url, lock_timeout_s=busy_timeout_s, max_size=SHOP_POOL_SIZE, name="stepwise-shop"
        )
        try:
            shop = cls(pool, latency_s=latency_s, clock=clock)
            await shop._seed_once(Path(seed_path) if seed_path is not None else DEFAULT_SEED_PATH)
        except BaseException:
            await pool.close()
            raise
        return shop

    async def close(self) -> None:
        await self._pool.close()

    async def _transaction(self, body: Callable[[ShopTx], Awaitable[T]], *, write: bool) -> T:
        """A read on an autocommit connection; a write in one transaction, rolled back on
        any failure (the locks it took go with it)."""
        async with self._pool.connection() as conn:
            if not write:
                return await body(_PgTx(conn))
            async with conn.transaction():
                return await body(_PgTx(conn))

    def _describe(self, exc: BaseException) -> str:
        return pg_message(exc)


__all__ = ["PgShop"]
