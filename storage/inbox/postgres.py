"""The durable inbox and named leases in PostgreSQL: `storage.inbox.sqlite.SqliteInbox`'s twin.

The same tables and rules (see `storage.inbox.sqlite`), through a write queue on a small pool of
its own. What differs: taking stale updates locks the rows it takes (`FOR UPDATE SKIP
LOCKED` in the same statement), so processes sweeping at once never wait on, nor take,
the same update; the lease is one `INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from psycopg import AsyncConnection

from storage.inbox.sqlite import BACKLOG, RELEASE_CLAIMS, Lease, Received, store_params
from storage.pg import (
    DEFAULT_LOCK_TIMEOUT_S,
    PG_FAULTS,
    Pool,
    fetch,
    open_pool,
    pg_sql,
    run_transaction,
)
from storage.writequeue import WriteQueue

_STORE = pg_sql(
    "INSERT INTO inbox (update_id, body, received_at, owner, lease_until)"
    " VALUES (:update_id, :body, :now, :owner, :until) ON CONFLICT (update_id) DO NOTHING"
    " RETURNING update_id"
)
_PROCESSED = pg_sql(
    "UPDATE inbox SET processed_at = :now, owner = NULL, lease_until = NULL"
    " WHERE update_id = :update_id"
)
_RENEW = pg_sql(
    "UPDATE inbox SET lease_until = :until WHERE owner = :owner AND processed_at IS NULL"
    " AND (update_id = ANY(:ids) OR parked_chat IS NOT NULL)"
)
_PARK = pg_sql(
    "UPDATE inbox SET parked_chat = :chat_id WHERE owner = :owner AND processed_at IS NULL"
    " AND update_id = ANY(:ids)"
)
_UNPARK = pg_sql(
    "UPDATE inbox SET parked_chat = NULL WHERE update_id IN ("
    " SELECT update_id FROM inbox WHERE owner = :owner AND parked_chat = :chat_id"
    " AND processed_at IS NULL ORDER BY update_id LIMIT :limit FOR UPDATE)"
    " RETURNING update_id, body"
)
_PENDING_OWNERS = "SELECT DISTINCT owner, lease_until FROM inbox WHERE processed_at IS NULL"
_CLAIM_STALE = pg_sql(
    "UPDATE inbox SET owner = :owner, lease_until = :until, parked_chat = NULL"
    " WHERE update_id IN ("
    " SELECT update_id FROM inbox WHERE processed_at IS NULL"
    " AND (owner IS NULL OR lease_until IS NULL"
    " OR lease_until < :now OR owner = ANY(:dead))"
    " ORDER BY update_id FOR UPDATE SKIP LOCKED)"
    " RETURNING update_id, body"
)
_PRUNE = pg_sql(
    "DELETE FROM inbox WHERE processed_at IS NOT NULL AND processed_at < :before"
    " RETURNING update_id"
)
_TAKE_LEASE = pg_sql(
    "INSERT INTO leases (name, owner, expires_at) VALUES (:name, :owner, :until)"
    " ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at"
    " WHERE leases.owner = excluded.owner OR leases.expires_at < :now"
    " RETURNING owner"
)
_LEASE = "SELECT name, owner, expires_at FROM leases WHERE name = ?"
_RELEASE_LEASE = pg_sql("DELETE FROM leases WHERE name = :name AND owner = :owner")


async def _store_rows(rows: list[dict[str, Any]], conn: AsyncConnection[Any]) -> list[int]:
    new = []
    for row in rows:
        cur = await conn.execute(_STORE, row)
        if await cur.fetchone() is not None:
            new.append(int(row["update_id"]))
    return new


async def _execute(sql: str, params: dict[str, Any], conn: AsyncConnection[Any]) -> None:
    await conn.execute(sql, params)  # pipelined: its row count is not known yet


async def _returning(sql: str, params: dict[str, Any], conn: AsyncConnection[Any]) -> list[Any]:
    cur = await conn.execute(sql, params)
    return list(await cur.fetchall())


class PgInbox:
    """`storage.inbox.sqlite.Inbox` on PostgreSQL."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool
        self._writes = WriteQueue(partial(run_transaction, pool), PG_FAULTS)

    @classmethod
    async def open(cls, url: str, *, busy_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> PgInbox:
        return cls(await open_pool(url, lock_timeout_s=busy_timeout_s, max_size=2, name="inbox"))

    async def close(self) -> None:
        await self._writes.drain()
        await self._pool.close()

    async def store(
        self, updates: Sequence[Received], owner: str, now: float, until: float
    ) -> list[int]:
        rows = store_params(updates, owner, now, until)
        new: list[int] = await self._writes.submit(partial(_store_rows, rows))
        return new

    async def processed(self, update_id: int, now: float) -> None:
        await self._writes.submit(
            partial(_execute, _PROCESSED, {"update_id": update_id, "now": now})
        )

    async def renew(self, owner: str, update_ids: Sequence[int], until: float) -> None:
        params = {"owner": owner, "until": until, "ids": list(update_ids)}
        await self._writes.submit(partial(_execute, _RENEW, params))

    async def park(self, owner: str, chat_id: int, update_ids: Sequence[int]) -> None:
        params = {"owner": owner, "chat_id": chat_id, "ids": list(update_ids)}
        await self._writes.submit(partial(_execute, _PARK, params))

    async def unpark(self, owner: str, chat_id: int, limit: int) -> list[Received]:
        params = {"owner": owner, "chat_id": chat_id, "limit": limit}
        rows = await self._writes.submit(partial(_returning, _UNPARK, params))
        return sorted((Received(int(r[0]), str(r[1])) for r in rows), key=lambda r: r.update_id)

    async def pending_owners(self) -> list[tuple[str | None, float | None]]:
        rows = await fetch(self._pool, _PENDING_OWNERS)
        return [(r["owner"], r["lease_until"]) for r in rows]

    async def claim_stale(
        self, owner: str, now: float, until: float, dead: Sequence[str] = ()
    ) -> list[Received]:
        params = {"owner": owner, "now": now, "until": until, "dead": list(dead)}
        rows = await self._writes.submit(partial(_returning, _CLAIM_STALE, params))
        return sorted((Received(int(r[0]), str(r[1])) for r in rows), key=lambda r: r.update_id)

    async def prune(self, before: float) -> int:
        return len(await self._writes.submit(partial(_returning, _PRUNE, {"before": before})))

    async def take_lease(self, name: str, owner: str, now: float, until: float) -> bool:
        params = {"name": name, "owner": owner, "now": now, "until": until}
        rows = await self._writes.submit(partial(_returning, _TAKE_LEASE, params))
        return bool(rows)

    async def lease(self, name: str) -> Lease | None:
        rows = await fetch(self._pool, _LEASE, (name,))
        if not rows:
            return None
        return Lease(str(rows[0]["name"]), str(rows[0]["owner"]), float(rows[0]["expires_at"]))

    async def release_lease(self, name: str, owner: str) -> None:
        await self._writes.submit(partial(_execute, _RELEASE_LEASE, {"name": name, "owner": owner}))

    async def release_claims(self, owner: str) -> None:
        await self._writes.submit(partial(_execute, pg_sql(RELEASE_CLAIMS), {"owner": owner}))

    async def backlog(self) -> tuple[int, float | None]:
        rows = await fetch(self._pool, BACKLOG)
        oldest = rows[0]["oldest"]
        return int(rows[0]["n"]), None if oldest is None else float(oldest)
