"""The demo shop kept in SQLite: orders, policies, and one ledger of every change.

`SqliteShop` is the `storage.shop.tools.ShopBackend` the bot runs against. It shares the
runs database file (the shop tables come from `storage.db`'s migrations) but opens its own
connection. On the first start it loads a JSON seed (`storage.shop.seed`).

What each operation reads, decides and writes is `storage.shop.core.LedgerShop`, shared
with PostgreSQL (`storage.shop.postgres`); this module only opens SQLite transactions: every
write is one `BEGIN IMMEDIATE` ... `COMMIT`, which also keeps every other writer out, so
the ledger's key lock and the order's row lock need nothing more here. SQLite errors
surface as `ShopUnavailable` (a `storage.db.StorageUnavailable`) after the transaction was
rolled back.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from storage.db import DEFAULT_BUSY_TIMEOUT_S, connect
from storage.shop.core import Clock, LedgerShop, ShopUnavailable, utc_now
from storage.shop.ledger import Row, ShopTx
from storage.shop.seed import (
    DEFAULT_SEED_PATH,
    SEEDED_KEY,
    SeedOrder,
    SeedPolicy,
    ShopSeed,
    load_seed,
)

T = TypeVar("T")


class _SqliteTx:
    """`ShopTx` on the shop's one connection (inside `BEGIN IMMEDIATE` for a write)."""

    row_lock = ""  # BEGIN IMMEDIATE already excludes every other writer

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def fetchone(self, sql: str, params: tuple[Any, ...] = ()) -> Row | None:
        async with self._conn.execute(sql, params) as cur:
            row: sqlite3.Row | None = await cur.fetchone()
        return row

    async def fetchall(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
        async with self._conn.execute(sql, params) as cur:
            rows = await cur.fetchall()
        return list(rows)

    async def execute(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        cur = await self._conn.execute(sql, params)
        return cur.rowcount

    async def executemany(self, sql: str, params: list[tuple[Any, ...]]) -> None:
        await self._conn.executemany(sql, params)

    async def lock(self, name: str) -> None:
        """Nothing to do: one writer at a time is what BEGIN IMMEDIATE gives."""


class SqliteShop(LedgerShop):
    """`ShopBackend` over SQLite. Use `await SqliteShop.open(path)`, then `await close()`.

    See `LedgerShop` for `latency_s` and `clock`.
    """

    _db_errors = (sqlite3.Error,)

    def __init__(
        self,
        conn: aiosqlite.Connection,
        *,
        latency_s: float = 0.0,
        clock: Clock = utc_now,
    ) -> None:
        super().__init__(latency_s=latency_s, clock=clock)
        self._conn = conn
        self._tx = _SqliteTx(conn)
        # One connection, one transaction at a time: concurrent calls queue here instead of
        # running their statements inside each other's transactions.
        self._lock = asyncio.Lock()

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        seed_path: str | Path | None = None,
        latency_s: float = 0.0,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        clock: Clock = utc_now,
    ) -> SqliteShop:
        """Open (and migrate) the database at `path`; seed it on its first start.

        `seed_path` overrides the bundled `storage/shop/seed.json` (the app passes
        `STEPWISE_SHOP_SEED`). The seed is only read when the database is not seeded yet.
        """
        if latency_s < 0:
            raise ValueError("latency_s must not be negative")
        conn = await connect(path, busy_timeout_s=busy_timeout_s)
        try:
            shop = cls(conn, latency_s=latency_s, clock=clock)
            await shop._seed_once(Path(seed_path) if seed_path is not None else DEFAULT_SEED_PATH)
        except BaseException:
            await conn.close()
            raise
        return shop

    async def close(self) -> None:
        await self._conn.close()

    async def _transaction(self, body: Callable[[ShopTx], Awaitable[T]], *, write: bool) -> T:
        """A read runs as it is; a write in one BEGIN IMMEDIATE transaction, rolled back on
        any failure."""
        async with self._lock:
            if not write:
                return await body(self._tx)
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = await body(self._tx)
                await self._conn.execute("COMMIT")
            except BaseException:
                await self._rollback_quietly()
                raise
            return result

    async def _rollback_quietly(self) -> None:
        # SQLite may already have rolled back by itself (e.g. after SQLITE_FULL).
        if self._conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                await self._conn.execute("ROLLBACK")


__all__ = [
    "DEFAULT_SEED_PATH",
    "SEEDED_KEY",
    "SeedOrder",
    "SeedPolicy",
    "ShopSeed",
    "ShopUnavailable",
    "SqliteShop",
    "load_seed",
]
