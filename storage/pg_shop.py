"""The demo shop kept in PostgreSQL: the same orders, policies and cancellation ledger.

Behaves as `storage.shop.SqliteShop` (same seed file and validation, same outcomes, same
`latency_s` window after the commit), on a pool of its own. What SQLite gets from
`BEGIN IMMEDIATE` (one writer at a time) PostgreSQL gets from locks taken in the
transaction, so any number of processes can share the shop:

* a cancellation holds a transaction-scoped advisory lock on its idempotency key, so a
  second call with the key waits for the first to commit and then replays its outcome;
* it reads the order `FOR UPDATE`, so two keys racing for one order see each other's
  result (the second is refused: already cancelled) instead of both cancelling;
* seeding holds an exclusive lock on `shop_meta`, so processes starting together seed once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import psycopg
from psycopg import AsyncConnection

from agent_core.shop import (
    CANCELLABLE_STATUSES,
    CancelOutcome,
    CancelResult,
    IdempotencyConflict,
    Order,
    Policy,
    PolicyLang,
)
from storage.pg import DEFAULT_LOCK_TIMEOUT_S, Pool, open_pool, records
from storage.pg import message as pg_message
from storage.shop import (
    DEFAULT_SEED_PATH,
    SEEDED_KEY,
    ShopUnavailable,
    _matches,
    _now,
    load_seed,
)
from storage.shop_ledger import canonical as _canonical
from storage.shop_ledger import order_from_row as _order

T = TypeVar("T")
SHOP_POOL_SIZE = 4

_ORDER = "SELECT id, owner_user_id, status, eta, items FROM shop_orders WHERE id = %s"


class PgShop:
    """`ShopBackend` over PostgreSQL. Use `await PgShop.open(url)`, then `await close()`."""

    def __init__(self, pool: Pool, *, latency_s: float = 0.0) -> None:
        self._pool = pool
        self._latency_s = latency_s

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        seed_path: str | Path | None = None,
        latency_s: float = 0.0,
        busy_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    ) -> PgShop:
        """Connect (migrating first) and seed the shop on its first start (see SqliteShop)."""
        if latency_s < 0:
            raise ValueError("latency_s must not be negative")
        pool = await open_pool(
            url, lock_timeout_s=busy_timeout_s, max_size=SHOP_POOL_SIZE, name="stepwise-shop"
        )
        shop = cls(pool, latency_s=latency_s)
        try:
            await shop._seed_once(Path(seed_path) if seed_path is not None else DEFAULT_SEED_PATH)
        except BaseException:
            await pool.close()
            raise
        return shop

    async def close(self) -> None:
        await self._pool.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- ShopBackend --

    async def get_order(self, order_id: str) -> Order | None:
        rows = await self._read(_ORDER, (_canonical(order_id),), f"read order {order_id}")
        await self._simulate_latency()
        return _order(rows[0]) if rows else None

    async def search_policies(self, query: str, lang: PolicyLang) -> list[Policy]:
        """As `SqliteShop.search_policies`: keyword matches, `lang` first, in seed order."""
        rows = await self._read(
            "SELECT id, keywords, title, text, lang FROM shop_policies ORDER BY id",
            (),
            "read policies",
        )
        await self._simulate_latency()
        needle = query.strip().casefold()
        if not needle:
            return []
        matches = [
            Policy(title=row["title"], text=row["text"], lang=row["lang"])
            for row in rows
            if _matches(needle, json.loads(row["keywords"]))
        ]
        preferred = [p for p in matches if p.lang == lang]
        return preferred or matches

    async def cancel_order(
        self, order_id: str, user_id: int, idempotency_key: str
    ) -> CancelOutcome:
        """Cancel `order_id` for `user_id`, at most once per `idempotency_key` (one
        transaction; a known key replays its stored outcome; refusals write nothing)."""
        order_id = _canonical(order_id)

        async def body(conn: AsyncConnection[Any]) -> CancelOutcome:
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (idempotency_key,)
            )
            cur = conn.cursor(row_factory=records)
            await cur.execute(
                "SELECT order_id, user_id, result FROM shop_cancellations"
                " WHERE idempotency_key = %s",
                (idempotency_key,),
            )
            ledger = await cur.fetchone()
            if ledger is not None:
                if ledger["order_id"] != order_id or ledger["user_id"] != user_id:
                    raise IdempotencyConflict(
                        f"idempotency key {idempotency_key!r} was already used for another "
                        "order or user"
                    )
                stored = CancelOutcome.model_validate_json(ledger["result"])
                return stored.model_copy(update={"result": CancelResult.REPLAYED})
            await cur.execute(_ORDER + " FOR UPDATE", (order_id,))
            row = await cur.fetchone()
            if row is None:
                return CancelOutcome(result=CancelResult.NOT_FOUND)
            order = _order(row)
            if order.owner_user_id != user_id:
                return CancelOutcome(result=CancelResult.FORBIDDEN)
            if order.status not in CANCELLABLE_STATUSES:
                return CancelOutcome(result=CancelResult.REFUSED, order=order)
            await cur.execute(
                "UPDATE shop_orders SET status = 'cancelled' WHERE id = %s", (order_id,)
            )
            outcome = CancelOutcome(
                result=CancelResult.CANCELLED,
                order=order.model_copy(update={"status": "cancelled"}),
            )
            await cur.execute(
                "INSERT INTO shop_cancellations (idempotency_key, order_id, user_id, result, at)"
                " VALUES (%s, %s, %s, %s, %s)",
                (idempotency_key, order_id, user_id, outcome.model_dump_json(), _now()),
            )
            return outcome

        # Shielded: a caller's timeout must not interrupt the transaction half-way.
        outcome = await asyncio.shield(self._write(body, f"cancel order {order_id}"))
        await self._simulate_latency()
        return outcome

    # -- extras for tests and the reliability suite --

    async def cancellation_count(self, order_id: str | None = None) -> int:
        """How many cancellations the ledger holds (for one order, or in total)."""
        if order_id is None:
            rows = await self._read(
                "SELECT count(*) FROM shop_cancellations", (), "count cancellations"
            )
        else:
            rows = await self._read(
                "SELECT count(*) FROM shop_cancellations WHERE order_id = %s",
                (_canonical(order_id),),
                "count cancellations",
            )
        return int(rows[0][0]) if rows else 0

    # -- internals --

    async def _seed_once(self, seed_path: Path) -> None:
        rows = await self._read(
            "SELECT 1 FROM shop_meta WHERE key = %s", (SEEDED_KEY,), "read shop metadata"
        )
        if rows:
            return  # a seeded database never needs the seed file
        seed = load_seed(seed_path)  # validated before any write

        async def body(conn: AsyncConnection[Any]) -> None:
            await conn.execute("LOCK TABLE shop_meta IN EXCLUSIVE MODE")
            cur = await conn.execute("SELECT 1 FROM shop_meta WHERE key = %s", (SEEDED_KEY,))
            if await cur.fetchone() is not None:
                return  # another process seeded meanwhile
            async with conn.cursor() as many:
                await many.executemany(
                    "INSERT INTO shop_orders (id, owner_user_id, status, eta, items)"
                    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET"
                    " owner_user_id = excluded.owner_user_id, status = excluded.status,"
                    " eta = excluded.eta, items = excluded.items",
                    [
                        (
                            o.id,
                            o.owner_user_id,
                            o.status,
                            o.eta,
                            json.dumps(o.items, ensure_ascii=False),
                        )
                        for o in seed.orders
                    ],
                )
                await many.executemany(
                    "INSERT INTO shop_policies (keywords, title, text, lang)"
                    " VALUES (%s, %s, %s, %s)",
                    [
                        (json.dumps(p.keywords, ensure_ascii=False), p.title, p.text, p.lang)
                        for p in seed.policies
                    ],
                )
            marker = {
                "seed": str(seed_path),
                "orders": len(seed.orders),
                "policies": len(seed.policies),
                "at": _now(),
            }
            await conn.execute(
                "INSERT INTO shop_meta (key, value) VALUES (%s, %s)",
                (SEEDED_KEY, json.dumps(marker, ensure_ascii=False)),
            )

        await asyncio.shield(self._write(body, "seed the shop"))

    async def _read(self, sql: str, params: tuple[Any, ...], what: str) -> list[Any]:
        try:
            async with self._pool.connection() as conn:
                cur = conn.cursor(row_factory=records)
                await cur.execute(sql, params)
                return await cur.fetchall()
        except psycopg.Error as exc:
            raise ShopUnavailable(f"cannot {what}: {pg_message(exc)}") from exc

    async def _write(self, body: Callable[[AsyncConnection[Any]], Awaitable[T]], what: str) -> T:
        """Run `body` in one transaction; any failure rolls all of it back."""
        try:
            async with self._pool.connection() as conn, conn.transaction():
                return await body(conn)
        except psycopg.Error as exc:
            raise ShopUnavailable(f"cannot {what}: {pg_message(exc)}") from exc

    async def _simulate_latency(self) -> None:
        if self._latency_s > 0:
            await asyncio.sleep(self._latency_s)


__all__ = ["PgShop"]
