"""The demo shop kept in SQLite: orders, policies and a ledger of cancellations.

`SqliteShop` is the `agent_core.shop.ShopBackend` the bot runs against. It shares the
runs database file (the shop tables come from `storage.db`'s migrations) but opens its own
connection. On the first start it loads a JSON seed (the demo orders and policies).

Every write is one `BEGIN IMMEDIATE` ... `COMMIT` transaction, and a cancellation is keyed
by the executor's idempotency key (`run_id:step_id`): the same key never cancels twice, it
replays the first outcome instead. SQLite errors surface as `ShopUnavailable` (a
`storage.db.StorageUnavailable`) after the transaction was rolled back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any, Self, TypeVar

import aiosqlite
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from agent_core.shop import (
    CANCELLABLE_STATUSES,
    BackendUnavailable,
    CancelOutcome,
    CancelResult,
    IdempotencyConflict,
    Order,
    OrderStatus,
    Policy,
    PolicyLang,
)
from storage.db import DEFAULT_BUSY_TIMEOUT_S, StorageUnavailable, connect
from storage.tables import NamedRow

DEFAULT_SEED_PATH = Path(__file__).with_name("shop_seed.json")
SEEDED_KEY = "seeded"

T = TypeVar("T")

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class ShopUnavailable(StorageUnavailable, BackendUnavailable):
    """The shop's database cannot be used right now; nothing was half-written.

    Both a `StorageUnavailable` (what storage callers catch) and an
    `agent_core.shop.BackendUnavailable` (what the tools turn into `unavailable`).
    """


# --- the seed file -------------------------------------------------------------------


class SeedOrder(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, StringConstraints(min_length=1, max_length=32)]
    owner_user_id: int
    status: OrderStatus
    eta: str | None
    items: list[NonEmpty]

    @field_validator("id")
    @classmethod
    def _canonical_id(cls, value: str) -> str:
        # The tools strip and upper-case what they are given; any other id is unreachable.
        if value != value.strip().upper():
            raise ValueError("order ids must be upper-case without surrounding spaces")
        return value


class SeedPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keywords: list[NonEmpty] = Field(min_length=1)
    title: NonEmpty
    text: NonEmpty
    lang: PolicyLang


class ShopSeed(BaseModel):
    """The schema of `shop_seed.json`."""

    model_config = ConfigDict(extra="forbid")

    orders: list[SeedOrder]
    policies: list[SeedPolicy]

    @model_validator(mode="after")
    def _unique_order_ids(self) -> Self:
        seen: set[str] = set()
        for index, order in enumerate(self.orders):
            if order.id in seen:
                raise ValueError(f"orders.{index}.id: duplicate order id {order.id!r}")
            seen.add(order.id)
        return self


def load_seed(path: str | Path) -> ShopSeed:
    """Read and validate a seed file; a ValueError names the file and the bad field."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"shop seed {path} cannot be read: {exc}") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"shop seed {path} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from exc
    try:
        return ShopSeed.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ValueError(f"shop seed {path} is invalid: {problems}") from exc


# --- the backend ---------------------------------------------------------------------


class SqliteShop:
    """`ShopBackend` over SQLite. Use `await SqliteShop.open(path)`, then `await close()`.

    `latency_s` simulates a slow upstream: every operation sleeps that long AFTER its work
    is done (for `cancel_order`: after the COMMIT) and before returning. That opens a
    window in which the side effect is durable but the executor has not yet recorded it,
    so timeout and crash tests can hit exactly that window and prove that a retry or a
    recovery with the same idempotency key replays instead of cancelling twice.
    """

    def __init__(self, conn: aiosqlite.Connection, *, latency_s: float = 0.0) -> None:
        self._conn = conn
        self._latency_s = latency_s
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
    ) -> SqliteShop:
        """Open (and migrate) the database at `path`; seed it on its first start.

        `seed_path` overrides the bundled `storage/shop_seed.json` (the app passes
        `STEPWISE_SHOP_SEED`). The seed is only read when the database is not seeded yet.
        """
        if latency_s < 0:
            raise ValueError("latency_s must not be negative")
        conn = await connect(path, busy_timeout_s=busy_timeout_s)
        shop = cls(conn, latency_s=latency_s)
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

    # -- ShopBackend --

    async def get_order(self, order_id: str) -> Order | None:
        async with self._lock:
            try:
                row = await self._fetchone(
                    "SELECT id, owner_user_id, status, eta, items FROM shop_orders WHERE id = ?",
                    (_canonical(order_id),),
                )
            except sqlite3.Error as exc:
                raise ShopUnavailable(f"cannot read order {order_id}: {exc}") from exc
        await self._simulate_latency()
        return _order(row) if row is not None else None

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

    async def cancel_order(
        self, order_id: str, user_id: int, idempotency_key: str
    ) -> CancelOutcome:
        """Cancel `order_id` for `user_id`, at most once per `idempotency_key`.

        One transaction: a key already in the ledger replays its stored outcome; otherwise
        the order is checked (exists, belongs to `user_id`, still pending or shipping),
        set to cancelled and the ledger row written. Refusals write nothing.
        """
        order_id = _canonical(order_id)

        async def body(conn: aiosqlite.Connection) -> CancelOutcome:
            ledger = await self._fetchone(
                "SELECT order_id, user_id, result FROM shop_cancellations "
                "WHERE idempotency_key = ?",
                (idempotency_key,),
            )
            if ledger is not None:
                if ledger["order_id"] != order_id or ledger["user_id"] != user_id:
                    raise IdempotencyConflict(
                        f"idempotency key {idempotency_key!r} was already used for another "
                        "order or user"
                    )
                stored = CancelOutcome.model_validate_json(ledger["result"])
                return stored.model_copy(update={"result": CancelResult.REPLAYED})
            row = await self._fetchone(
                "SELECT id, owner_user_id, status, eta, items FROM shop_orders WHERE id = ?",
                (order_id,),
            )
            if row is None:
                return CancelOutcome(result=CancelResult.NOT_FOUND)
            order = _order(row)
            if order.owner_user_id != user_id:
                return CancelOutcome(result=CancelResult.FORBIDDEN)
            if order.status not in CANCELLABLE_STATUSES:
                return CancelOutcome(result=CancelResult.REFUSED, order=order)
            cur = await conn.execute(
                "UPDATE shop_orders SET status = 'cancelled' WHERE id = ? AND status IN (?, ?)",
                (order_id, *sorted(CANCELLABLE_STATUSES)),
            )
            if cur.rowcount != 1:  # cannot happen under BEGIN IMMEDIATE; never half-write
                raise sqlite3.OperationalError(f"order {order_id} changed during cancellation")
            outcome = CancelOutcome(
                result=CancelResult.CANCELLED,
                order=order.model_copy(update={"status": "cancelled"}),
            )
            await conn.execute(
                "INSERT INTO shop_cancellations (idempotency_key, order_id, user_id, result, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (idempotency_key, order_id, user_id, outcome.model_dump_json(), _now()),
            )
            return outcome

        # Shielded: a caller's timeout must not interrupt the transaction half-way; it runs
        # to COMMIT or ROLLBACK, and a retry with the same key then sees the outcome.
        outcome = await asyncio.shield(self._write(body, f"cancel order {order_id}"))
        await self._simulate_latency()
        return outcome

    # -- extras for tests and the reliability suite --

    async def cancellation_count(self, order_id: str | None = None) -> int:
        """How many cancellations the ledger holds (for one order, or in total)."""
        async with self._lock:
            try:
                if order_id is None:
                    row = await self._fetchone("SELECT COUNT(*) FROM shop_cancellations")
                else:
                    row = await self._fetchone(
                        "SELECT COUNT(*) FROM shop_cancellations WHERE order_id = ?",
                        (_canonical(order_id),),
                    )
            except sqlite3.Error as exc:
                raise ShopUnavailable(f"cannot count cancellations: {exc}") from exc
        return int(row[0]) if row is not None else 0

    # -- internals --

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
            await conn.executemany(
                "INSERT OR REPLACE INTO shop_orders (id, owner_user_id, status, eta, items) "
                "VALUES (?, ?, ?, ?, ?)",
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
            await conn.executemany(
                "INSERT INTO shop_policies (keywords, title, text, lang) VALUES (?, ?, ?, ?)",
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
                "INSERT INTO shop_meta (key, value) VALUES (?, ?)",
                (SEEDED_KEY, json.dumps(marker, ensure_ascii=False)),
            )

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
        async with self._conn.execute(sql, params) as cur:
            row: sqlite3.Row | None = await cur.fetchone()
        return row

    async def _fetchall(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        async with self._conn.execute(sql, params) as cur:
            rows = await cur.fetchall()
        return list(rows)

    async def _simulate_latency(self) -> None:
        if self._latency_s > 0:
            await asyncio.sleep(self._latency_s)


def _canonical(order_id: str) -> str:
    return order_id.strip().upper()


def _matches(needle: str, keywords: list[str]) -> bool:
    for keyword in keywords:
        folded = keyword.casefold()
        if folded and (folded in needle or needle in folded):
            return True
    return False


def _order(row: NamedRow) -> Order:
    return Order(
        id=row["id"],
        owner_user_id=row["owner_user_id"],
        status=row["status"],
        eta=row["eta"],
        items=json.loads(row["items"]),
    )


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
