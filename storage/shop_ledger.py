"""The demo shop's ledger of changes, and reading an order: the pieces of one transaction.

Every change the shop makes (cancel, return, refund, address) is written to `shop_ledger`
under the executor's idempotency key (`run_id:step_id`) in the same transaction as the
change itself (`record`). Before acting, a transaction looks its key up (`replayed`): a key
already there returns the first outcome instead of acting again, which is what makes a
retried or recovered high-risk step happen exactly once. A key reused for another tool,
order or user is a caller bug (`IdempotencyConflict`), never a replay.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

import aiosqlite

from agent_core.shop import IdempotencyConflict, Order, Tracking
from storage.shop_seed import ORDER_COLUMNS

# The outcomes that changed something (cancel's and the other changes' words for it).
CHANGED: Final = frozenset({"cancelled", "done"})

SELECT_ORDER: Final = f"SELECT {', '.join(ORDER_COLUMNS)} FROM shop_orders WHERE id = ?"


@dataclass(frozen=True)
class LedgerEntry:
    key: str
    tool: str
    order_id: str
    user_id: int


async def fetchone(
    conn: aiosqlite.Connection, sql: str, params: tuple[Any, ...] = ()
) -> sqlite3.Row | None:
    async with conn.execute(sql, params) as cur:
        row: sqlite3.Row | None = await cur.fetchone()
    return row


async def replayed(conn: aiosqlite.Connection, entry: LedgerEntry) -> dict[str, Any] | None:
    """The stored outcome of `entry.key`, or None when the key is new."""
    row = await fetchone(
        conn,
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


async def record(conn: aiosqlite.Connection, entry: LedgerEntry, result: str) -> None:
    """Write the ledger row of a change (inside the change's own transaction)."""
    await conn.execute(
        "INSERT INTO shop_ledger (idempotency_key, tool, order_id, user_id, result, at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (entry.key, entry.tool, entry.order_id, entry.user_id, result, _now()),
    )


async def load_order(conn: aiosqlite.Connection, order_id: str) -> Order | None:
    row = await fetchone(conn, SELECT_ORDER, (order_id,))
    return order_from_row(row) if row is not None else None


def order_from_row(row: sqlite3.Row) -> Order:
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
