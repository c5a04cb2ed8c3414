"""The demo shop's ledger of changes, and reading an order: the pieces of one transaction.

Every change the shop makes (cancel, return, refund, address) is written to `shop_ledger`
under the executor's idempotency key (`run_id:step_id`) in the same transaction as the
change itself (`record`). Before acting, a transaction looks its key up (`replayed`): a key
already there returns the first outcome instead of acting again, which is what makes a
retried or recovered high-risk step happen exactly once. A key reused for another tool,
order or user is a caller bug (`IdempotencyConflict`), never a replay.

Written once for both backends against `ShopTx`, one open transaction in SQLite's `?`
spelling: SQLite's `BEGIN IMMEDIATE` already serialises writers, PostgreSQL's transaction
takes the locks `ShopTx.lock` and `ShopTx.row_lock` name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final, Protocol

from storage.shop.seed import ORDER_COLUMNS
from storage.shop.tools import IdempotencyConflict, Order, Tracking

# The outcomes that changed something (cancel's and the other changes' words for it).
CHANGED: Final = frozenset({"cancelled", "done"})

SELECT_ORDER: Final = f"SELECT {', '.join(ORDER_COLUMNS)} FROM shop_orders WHERE id = ?"


class Row(Protocol):
    """A row readable by column name and by position (`sqlite3.Row`, `storage.pg.Record`)."""

    def __getitem__(self, key: int | str, /) -> Any: ...


class ShopTx(Protocol):
    """One open transaction (or, for reads, one connection) of a shop backend.

    Statements use `?` placeholders on both backends.
    """

    # Appended to the read of the order a change acts on: "" where the transaction already
    # excludes other writers (SQLite), " FOR UPDATE" where it must lock the row itself.
    row_lock: str

    async def fetchone(self, sql: str, params: tuple[Any, ...] = ()) -> Row | None: ...

    async def fetchall(self, sql: str, params: tuple[Any, ...] = ()) -> list[Row]: ...

    async def execute(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        """Run one statement; the number of rows it changed."""
        ...

    async def executemany(self, sql: str, params: list[tuple[Any, ...]]) -> None: ...

    async def lock(self, name: str) -> None:
        """Hold a lock on `name` until the transaction ends (a no-op where writers are
        serialised anyway): two calls with one idempotency key wait for each other."""
        ...


@dataclass(frozen=True)
class LedgerEntry:
    key: str
    tool: str
    order_id: str
    user_id: int


async def replayed(tx: ShopTx, entry: LedgerEntry) -> dict[str, Any] | None:
    """The stored outcome of `entry.key`, or None when the key is new."""
    row = await tx.fetchone(
        "SELECT tool, order_id, user_id, result FROM shop_ledger WHERE idempotency_key = ?",
        (entry.key,),
    )
    if row is None:
        return None
    if (row["tool"], row["order_id"], row["user_id"]) != (
        entry.tool,
        entry.order_id,
        entry.user_id,
    ):
        raise IdempotencyConflict(
            f"idempotency key {entry.key!r} was already used for another change, order or user"
        )
    stored: dict[str, Any] = json.loads(row["result"])
    return stored


async def record(tx: ShopTx, entry: LedgerEntry, result: str) -> None:
    """Write the ledger row of a change (inside the change's own transaction)."""
    await tx.execute(
        "INSERT INTO shop_ledger (idempotency_key, tool, order_id, user_id, result, at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (entry.key, entry.tool, entry.order_id, entry.user_id, result, _now()),
    )


async def load_order(tx: ShopTx, order_id: str, *, for_change: bool = False) -> Order | None:
    """The order; `for_change`: locked against other writers until the transaction ends."""
    row = await tx.fetchone(SELECT_ORDER + (tx.row_lock if for_change else ""), (order_id,))
    return order_from_row(row) if row is not None else None


def order_from_row(row: Row) -> Order:
    delivered = row["delivered_at"]
    return Order(
        id=row["id"],
        owner_user_id=row["owner_user_id"],
        status=row["status"],
        eta=row["eta"],
        items=json.loads(row["items"]),
        amount_paid=Decimal(row["amount_paid"]) if row["amount_paid"] is not None else None,
        delivered_at=datetime.fromisoformat(delivered) if delivered is not None else None,
        address=row["address"],
        tracking=Tracking.model_validate_json(row["tracking"]) if row["tracking"] else None,
    )


def canonical(order_id: str) -> str:
    return order_id.strip().upper()


def _now() -> str:
    return datetime.now(UTC).isoformat()
