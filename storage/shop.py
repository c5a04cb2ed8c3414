"""The demo shop kept in SQLite: orders, policies, and one ledger of every change.

`SqliteShop` is the `agent_core.shop.ShopBackend` the bot runs against. It shares the
runs database file (the shop tables come from `storage.db`'s migrations) but opens its own
connection. On the first start it loads a JSON seed (`storage.shop_seed`).

Every write is one `BEGIN IMMEDIATE` ... `COMMIT` transaction, and every change (cancel,
return, refund, address) is keyed by the executor's idempotency key (`run_id:step_id`) in
`shop_ledger`, written in the same transaction as the change: the same key never acts
twice, it replays the first outcome instead. Refusals write nothing. SQLite errors surface
as `ShopUnavailable` (a `storage.db.StorageUnavailable`) after the transaction was rolled
back.

One class of one idea (the backend's operations, each one transaction); it is long because
each change carries its own rule and writes. The ledger and order rows are in
`storage.shop_ledger`, the seed in `storage.shop_seed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import aiosqlite
from pydantic import BaseModel

from agent_core.catalog import CANCEL_ORDER, CHANGE_ADDRESS, REQUEST_REFUND, REQUEST_RETURN
from agent_core.shop import (
    CANCELLABLE_STATUSES,
    ActionOutcome,
    ActionResult,
    BackendUnavailable,
    CancelOutcome,
    CancelResult,
    Order,
    Policy,
    PolicyLang,
)
from agent_core.shop_rules import address_refusal, refund_refusal, return_refusal
from storage.db import DEFAULT_BUSY_TIMEOUT_S, StorageUnavailable, connect
from storage.shop_ledger import (
    CHANGED,
    LedgerEntry,
    canonical,
    fetchone,
    load_order,
    record,
    replayed,
)
from storage.shop_seed import (
    DEFAULT_RETURN_WINDOW_DAYS,
    DEFAULT_SEED_PATH,
    RETURN_WINDOW_KEY,
    SEEDED_KEY,
    SeedOrder,
    SeedPolicy,
    ShopSeed,
    load_seed,
    seed_statements,
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class ShopUnavailable(StorageUnavailable, BackendUnavailable):
    """The shop's database cannot be used right now; nothing was half-written.

    Both a `StorageUnavailable` (what storage callers catch) and an
    `agent_core.shop.BackendUnavailable` (what the tools turn into `unavailable`).
    """


# --- the backend ---------------------------------------------------------------------


class SqliteShop:
    """`ShopBackend` over SQLite. Use `await SqliteShop.open(path)`, then `await close()`.

    `latency_s` simulates a slow upstream: every operation sleeps that long AFTER its work
    is done (for a change: after the COMMIT) and before returning. That opens a window in
    which the side effect is durable but the executor has not yet recorded it, so timeout
    and crash tests can hit exactly that window and prove that a retry or a recovery with
    the same idempotency key replays instead of acting twice. `clock` decides the return
    window (tests pass a fixed one).
    """

    def __init__(
        self,
        conn: aiosqlite.Connection,
        *,
        latency_s: float = 0.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._conn = conn
        self._latency_s = latency_s
        self._clock = clock
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
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> SqliteShop:
        """Open (and migrate) the database at `path`; seed it on its first start.

        `seed_path` overrides the bundled `storage/shop_seed.json` (the app passes
        `STEPWISE_SHOP_SEED`). The seed is only read when the database is not seeded yet.
        """
        if latency_s < 0:
            raise ValueError("latency_s must not be negative")
        conn = await connect(path, busy_timeout_s=busy_timeout_s)
        shop = cls(conn, latency_s=latency_s, clock=clock)
        try:
            await shop._seed_once(Path(seed_path) if seed_path is not None else DEFAULT_SEED_PATH)
        except BaseException:
            await conn.close()
            raise
        return shop

    async def close(self) -> None:
        await self._conn.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- ShopBackend: reads --

    async def get_order(self, order_id: str) -> Order | None:
        async with self._lock:
            try:
                order = await load_order(self._conn, canonical(order_id))
            except sqlite3.Error as exc:
                raise ShopUnavailable(f"cannot read order {order_id}: {exc}") from exc
        await self._simulate_latency()
        return order

    async def search_policies(self, query: str, lang: PolicyLang) -> list[Policy]:
        """Policies whose keyword is in the query or contains it (case-insensitive).

        Policies in `lang` come first; only when none matches in `lang` are matches in
        the other language returned. Within a language, in seed order (by id).
        """
        async with self._lock:
            try:
                rows = await self._fetchall(
                    "SELECT id, keywords, title, text, lang FROM shop_policies ORDER BY id"
                )
            except sqlite3.Error as exc:
                raise ShopUnavailable(f"cannot read policies: {exc}") from exc
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

    # -- ShopBackend: changes, each at most once per idempotency key --

    async def cancel_order(
        self, order_id: str, user_id: int, idempotency_key: str
    ) -> CancelOutcome:
        """Cancel `order_id` for `user_id`, at most once per `idempotency_key`.

        One transaction: a key already in the ledger replays its stored outcome; otherwise
        the order is checked (exists, belongs to `user_id`, still pending or shipping),
        set to cancelled and the ledger row written. Refusals write nothing.
        """
        order_id = canonical(order_id)

        async def act(conn: aiosqlite.Connection, order: Order) -> CancelOutcome:
            if order.status not in CANCELLABLE_STATUSES:
                return CancelOutcome(result=CancelResult.REFUSED, order=order)
            cur = await conn.execute(
                "UPDATE shop_orders SET status = 'cancelled' WHERE id = ? AND status IN (?, ?)",
                (order_id, *sorted(CANCELLABLE_STATUSES)),
            )
            if cur.rowcount != 1:  # cannot happen under BEGIN IMMEDIATE; never half-write
                raise sqlite3.OperationalError(f"order {order_id} changed during cancellation")
            return CancelOutcome(
                result=CancelResult.CANCELLED,
                order=order.model_copy(update={"status": "cancelled"}),
            )

        return await self._change(
            CANCEL_ORDER.name,
            order_id,
            user_id,
            idempotency_key,
            CancelOutcome,
            act,
            missing=CancelOutcome(result=CancelResult.NOT_FOUND),
            forbidden=CancelOutcome(result=CancelResult.FORBIDDEN),
        )

    async def request_return(
        self, order_id: str, user_id: int, reason: str | None, idempotency_key: str
    ) -> ActionOutcome:
        """Open a return for a delivered order within the return window (once per order)."""
        order_id = canonical(order_id)

        async def act(conn: aiosqlite.Connection, order: Order) -> ActionOutcome:
            row = await fetchone(
                conn, "SELECT count(*) FROM shop_returns WHERE order_id = ?", (order_id,)
            )
            count = int(row[0]) if row is not None else 0
            refusal = return_refusal(
                order,
                now=self._clock(),
                window_days=await self._return_window(),
                already_requested=count > 0,
            )
            if refusal is not None:
                return ActionOutcome(result=ActionResult.REFUSED, reason=refusal)
            return_id = f"R-{order_id}-{count + 1}"
            await conn.execute(
                "INSERT INTO shop_returns (id, order_id, reason, at) VALUES (?, ?, ?, ?)",
                (return_id, order_id, reason, _now()),
            )
            data = {"order_id": order_id, "return_id": return_id}
            return ActionOutcome(result=ActionResult.DONE, data=data)

        return await self._action(REQUEST_RETURN.name, order_id, user_id, idempotency_key, act)

    async def request_refund(
        self,
        order_id: str,
        user_id: int,
        amount: Decimal,
        reason: str | None,
        idempotency_key: str,
    ) -> ActionOutcome:
        """Refund `amount` of a shipped or delivered order: at most what was paid, minus
        what earlier refunds gave back."""
        order_id = canonical(order_id)
        cents = int((amount * 100).to_integral_value())

        async def act(conn: aiosqlite.Connection, order: Order) -> ActionOutcome:
            row = await self._fetchone(
                "SELECT count(*), coalesce(sum(amount_cents), 0) FROM shop_refunds "
                "WHERE order_id = ?",
                (order_id,),
            )
            count, refunded = (int(row[0]), int(row[1])) if row is not None else (0, 0)
            refusal = refund_refusal(order, amount=amount, refunded=Decimal(refunded) / 100)
            if refusal is not None:
                return ActionOutcome(result=ActionResult.REFUSED, reason=refusal)
            refund_id = f"F-{order_id}-{count + 1}"
            await conn.execute(
                "INSERT INTO shop_refunds (id, order_id, amount_cents, reason, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (refund_id, order_id, cents, reason, _now()),
            )
            data = {"order_id": order_id, "refund_id": refund_id, "amount": f"{amount:.2f}"}
            return ActionOutcome(result=ActionResult.DONE, data=data)

        return await self._action(REQUEST_REFUND.name, order_id, user_id, idempotency_key, act)

    async def change_address(
        self, order_id: str, user_id: int, address: str, idempotency_key: str
    ) -> ActionOutcome:
        """Ship a pending order to `address` instead."""
        order_id = canonical(order_id)

        async def act(conn: aiosqlite.Connection, order: Order) -> ActionOutcome:
            refusal = address_refusal(order)
            if refusal is not None:
                return ActionOutcome(result=ActionResult.REFUSED, reason=refusal)
            await conn.execute(
                "UPDATE shop_orders SET address = ? WHERE id = ?", (address, order_id)
            )
            data = {"order_id": order_id, "address": address}
            return ActionOutcome(result=ActionResult.DONE, data=data)

        return await self._action(CHANGE_ADDRESS.name, order_id, user_id, idempotency_key, act)

    # -- extras for tests and the reliability suite --

    async def cancellation_count(self, order_id: str | None = None) -> int:
        """How many cancellations the ledger holds (for one order, or in total)."""
        return await self.ledger_count(CANCEL_ORDER.name, order_id)

    async def ledger_count(self, tool: str | None = None, order_id: str | None = None) -> int:
        """How many changes the ledger holds (of one tool, for one order, or in total)."""
        sql = "SELECT COUNT(*) FROM shop_ledger WHERE 1 = 1"
        params: list[Any] = []
        if tool is not None:
            sql += " AND tool = ?"
            params.append(tool)
        if order_id is not None:
            sql += " AND order_id = ?"
            params.append(canonical(order_id))
        async with self._lock:
            try:
                row = await self._fetchone(sql, tuple(params))
            except sqlite3.Error as exc:
                raise ShopUnavailable(f"cannot count the ledger: {exc}") from exc
        return int(row[0]) if row is not None else 0

    # -- internals --

    async def _action(
        self,
        tool: str,
        order_id: str,
        user_id: int,
        key: str,
        act: Callable[[aiosqlite.Connection, Order], Awaitable[ActionOutcome]],
    ) -> ActionOutcome:
        return await self._change(
            tool,
            order_id,
            user_id,
            key,
            ActionOutcome,
            act,
            missing=ActionOutcome(result=ActionResult.NOT_FOUND),
            forbidden=ActionOutcome(result=ActionResult.FORBIDDEN),
        )

    async def _change(
        self,
        tool: str,
        order_id: str,
        user_id: int,
        key: str,
        outcome_type: type[M],
        act: Callable[[aiosqlite.Connection, Order], Awaitable[M]],
        *,
        missing: M,
        forbidden: M,
    ) -> M:
        """One change in one transaction, at most once per idempotency key.

        A key already in the ledger replays its stored outcome (`REPLAYED`); otherwise the
        order is checked (exists, belongs to `user_id`), `act` decides and writes, and a
        successful change is recorded in the ledger before COMMIT.
        """

        entry = LedgerEntry(key=key, tool=tool, order_id=order_id, user_id=user_id)

        async def body(conn: aiosqlite.Connection) -> M:
            stored = await replayed(conn, entry)
            if stored is not None:
                return outcome_type.model_validate({**stored, "result": "replayed"})
            order = await load_order(conn, order_id)
            if order is None:
                return missing
            if order.owner_user_id != user_id:
                return forbidden
            outcome = await act(conn, order)
            if getattr(outcome, "result", None) in CHANGED:
                await record(conn, entry, outcome.model_dump_json())
            return outcome

        # Shielded: a caller's timeout must not interrupt the transaction half-way; it runs
        # to COMMIT or ROLLBACK, and a retry with the same key then sees the outcome.
        outcome = await asyncio.shield(self._write(body, f"{tool} {order_id}"))
        await self._simulate_latency()
        return outcome

    async def _return_window(self) -> int:
        row = await self._fetchone(
            "SELECT value FROM shop_meta WHERE key = ?", (RETURN_WINDOW_KEY,)
        )
        return int(row["value"]) if row is not None else DEFAULT_RETURN_WINDOW_DAYS

    async def _seed_once(self, seed_path: Path) -> None:
        # Fast path without a write lock: a seeded database never needs the seed file.
        async with self._lock:
            try:
                if await self._is_seeded():
                    return
            except sqlite3.Error as exc:
                raise ShopUnavailable(f"cannot read shop metadata: {exc}") from exc
        seed = load_seed(seed_path)  # validated before any write

        async def body(conn: aiosqlite.Connection) -> None:
            # Checked again under the write lock: another process may have seeded meanwhile.
            if await self._is_seeded():
                return
            for sql, params in seed_statements(seed, seed_path, self._clock()):
                await conn.executemany(sql, params)

        await asyncio.shield(self._write(body, "seed the shop"))

    async def _is_seeded(self) -> bool:
        row = await self._fetchone("SELECT 1 FROM shop_meta WHERE key = ?", (SEEDED_KEY,))
        return row is not None

    async def _write(self, body: Callable[[aiosqlite.Connection], Awaitable[T]], what: str) -> T:
        """Run `body` in one BEGIN IMMEDIATE transaction; roll back on any failure."""
        async with self._lock:
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise ShopUnavailable(f"cannot {what}: {exc}") from exc
            try:
                result = await body(self._conn)
                await self._conn.execute("COMMIT")
            except BaseException as exc:
                await self._rollback_quietly()
                if isinstance(exc, sqlite3.Error):
                    raise ShopUnavailable(f"cannot {what}: {exc}") from exc
                raise
            return result

    async def _rollback_quietly(self) -> None:
        # SQLite may already have rolled back by itself (e.g. after SQLITE_FULL).
        if self._conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                await self._conn.execute("ROLLBACK")

    async def _fetchone(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Row | None:
        return await fetchone(self._conn, sql, params)

    async def _fetchall(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        async with self._conn.execute(sql, params) as cur:
            rows = await cur.fetchall()
        return list(rows)

    async def _simulate_latency(self) -> None:
        if self._latency_s > 0:
            await asyncio.sleep(self._latency_s)


def _matches(needle: str, keywords: list[str]) -> bool:
    for keyword in keywords:
        folded = keyword.casefold()
        if folded and (folded in needle or needle in folded):
            return True
    return False


def _now() -> str:
    return datetime.now(UTC).isoformat()


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
