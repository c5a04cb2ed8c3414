"""The durable inbox: every Telegram update stored before it is acknowledged, and leases.

Telegram forgets an update once it is acknowledged (the next `getUpdates` offset passes it,
or the webhook answered 200). So an update is written here first, unique by `update_id`
(a second delivery of the same update stores nothing and is not processed again), and only
then acknowledged; it is processed from here and marked processed when its handling has
finished. The row is claimed by the process that stored it (`owner`, `lease_until`, renewed
while it works): when that process dies, another one (or its own restart) claims the rows
whose lease ran out and processes them. Processed rows are kept `keep` long (a webhook
may deliver an update again after a lost 200) and then pruned.

`leases` holds named leases between processes: `poller` is the one process allowed to
long-poll Telegram (two pollers make Telegram answer `409 Conflict` to each other).

Times are Unix seconds from the caller's clock (injected); processes on several machines
need synchronised clocks (NTP), well within the few seconds a lease lasts.

Both backends implement `Inbox`: SQLite here (its own connection and write queue, like the
demo shop), PostgreSQL in `storage.inbox.postgres`; `storage.store.open_inbox` opens either.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import aiosqlite

from storage.db import DEFAULT_BUSY_TIMEOUT_S, connect, fetch, run_transaction
from storage.writequeue import WriteQueue


@dataclass(frozen=True)
class Received:
    """An update as received: its id and its JSON."""

    update_id: int
    body: str


def store_params(
    updates: Sequence[Received], owner: str, now: float, until: float
) -> list[dict[str, Any]]:
    """One row of parameters per update for the backends' insert (claimed by `owner`)."""
    return [
        {"update_id": u.update_id, "body": u.body, "now": now, "owner": owner, "until": until}
        for u in updates
    ]


@dataclass(frozen=True)
class Lease:
    name: str
    owner: str
    expires_at: float


class Inbox(Protocol):
    async def store(
        self, updates: Sequence[Received], owner: str, now: float, until: float
    ) -> list[int]:
        """Store `updates` in ONE transaction, claimed by `owner` until `until`; the ids of
        those that were new (an update already stored is left as it is)."""
        ...

    async def processed(self, update_id: int, now: float) -> None:
        """The update's handling has finished: never process it again."""
        ...

    async def renew(self, owner: str, update_ids: Sequence[int], until: float) -> None:
        """Extend `owner`'s claim on the updates it is handling, and on all it parked."""
        ...

    async def park(self, owner: str, chat_id: int, update_ids: Sequence[int]) -> None:
        """Leave `owner`'s updates `update_ids` of chat `chat_id` in the inbox, unhandled,
        until `unpark` takes them: the chat has its cap of updates in hand. Their claim is
        renewed with `owner`'s others; if `owner` dies they are taken as any others."""
        ...

    async def unpark(self, owner: str, chat_id: int, limit: int) -> list[Received]:
        """Take back up to `limit` of `owner`'s parked updates of `chat_id`, oldest first."""
        ...

    async def pending_owners(self) -> list[tuple[str | None, float | None]]:
        """(owner, lease_until) of every claim on an unprocessed update, distinct."""
        ...

    async def claim_stale(
        self, owner: str, now: float, until: float, dead: Sequence[str] = ()
    ) -> list[Received]:
        """Take the unprocessed updates whose claim ran out (or whose owner is known dead),
        atomically: two processes never take the same one. Oldest first. `owner`'s own
        are included: an update whose mark failed is taken up again once its claim ran
        out (the caller skips those it is still handling)."""
        ...

    async def prune(self, before: float) -> int:
        """Forget updates processed before `before`; how many."""
        ...

    async def take_lease(self, name: str, owner: str, now: float, until: float) -> bool:
        """Take (or renew) lease `name` for `owner` until `until`, if it is free, expired or
        already `owner`'s; whether `owner` holds it now. One conditional write."""
        ...

    async def lease(self, name: str) -> Lease | None: ...

    async def backlog(self) -> tuple[int, float | None]:
        """How many stored updates are not processed yet, and the oldest one's
        `received_at` (None: none). For readiness and metrics; one read."""
        ...

    async def release_lease(self, name: str, owner: str) -> None:
        """Give lease `name` up (if `owner` holds it): a standby takes over at once."""
        ...

    async def release_claims(self, owner: str) -> None:
        """Give up `owner`'s claims on the updates it did not finish (a shutdown that ran
        out of time): any process takes them at its next sweep, not after the lease."""
        ...

    async def close(self) -> None: ...


# -- the run an update starts --------------------------------------------------------------
#
# What makes "processed, never twice" hold across a crash between a run being recorded and
# its update being marked processed: a run started while handling an update gets an id
# derived from that update (`run_id_for_update`), and an update is only (re)processed after
# checking that no run with that id exists. The run's first commit (`run_planned`) is the
# durable hand-over: from then on the run is recovery's to finish, never the inbox's to
# start again. The handling puts the id in `RUN_ID_FOR_UPDATE` (a one-slot list: tasks the
# handlers start copy the context, not the list, so the id is taken once across all of
# them); the runtime gives the agent `new_run_id`, which takes it or draws a random id.

RUN_ID_FOR_UPDATE: ContextVar[list[str] | None] = ContextVar(
    "stepwise_run_id_for_update", default=None
)


def run_id_for_update(bot_id: int, update_id: int) -> str:
    """The id of the run an update starts: hex, as every run id (buttons carry it), 28
    digits (a random id has 12: never this shape), the bot's id too, so another bot's
    updates on the same database never collide."""
    return f"{bot_id % 16**12:012x}{update_id % 16**16:016x}"


def new_run_id() -> str:
    """The run id for the update being handled (the first run it starts), else random."""
    slot = RUN_ID_FOR_UPDATE.get()
    if slot:
        return slot.pop()  # a second run of the same handling gets a random id
    return secrets.token_hex(6)


# -- SQLite --------------------------------------------------------------------------------

_STORE = (
    "INSERT INTO inbox (update_id, body, received_at, owner, lease_until)"
    " VALUES (:update_id, :body, :now, :owner, :until) ON CONFLICT (update_id) DO NOTHING"
)
_PROCESSED = (
    "UPDATE inbox SET processed_at = :now, owner = NULL, lease_until = NULL"
    " WHERE update_id = :update_id"
)
_RENEW = (
    "UPDATE inbox SET lease_until = :until WHERE owner = :owner AND processed_at IS NULL"
    " AND (update_id IN (SELECT value FROM json_each(:ids)) OR parked_chat IS NOT NULL)"
)
_PARK = (
    "UPDATE inbox SET parked_chat = :chat_id WHERE owner = :owner AND processed_at IS NULL"
    " AND update_id IN (SELECT value FROM json_each(:ids))"
)
_UNPARK = (
    "UPDATE inbox SET parked_chat = NULL WHERE update_id IN ("
    " SELECT update_id FROM inbox WHERE owner = :owner AND parked_chat = :chat_id"
    " AND processed_at IS NULL ORDER BY update_id LIMIT :limit)"
    " RETURNING update_id, body"
)
_PENDING_OWNERS = "SELECT DISTINCT owner, lease_until FROM inbox WHERE processed_at IS NULL"
_CLAIM_STALE = (
    "UPDATE inbox SET owner = :owner, lease_until = :until, parked_chat = NULL"
    " WHERE processed_at IS NULL AND (owner IS NULL"
    " OR lease_until IS NULL OR lease_until < :now"
    " OR owner IN (SELECT value FROM json_each(:dead)))"
    " RETURNING update_id, body"
)
_PRUNE = "DELETE FROM inbox WHERE processed_at IS NOT NULL AND processed_at < :before"
# Unclaimed (owner NULL): `claim_stale` takes it in any process at once.
RELEASE_CLAIMS = (
    "UPDATE inbox SET owner = NULL, lease_until = NULL, parked_chat = NULL"
    " WHERE owner = :owner AND processed_at IS NULL"
)
_TAKE_LEASE = (
    "INSERT INTO leases (name, owner, expires_at) VALUES (:name, :owner, :until)"
    " ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at"
    " WHERE leases.owner = excluded.owner OR leases.expires_at < :now"
)
_LEASE = "SELECT name, owner, expires_at FROM leases WHERE name = ?"
BACKLOG = "SELECT count(*) AS n, min(received_at) AS oldest FROM inbox WHERE processed_at IS NULL"
_RELEASE_LEASE = "DELETE FROM leases WHERE name = :name AND owner = :owner"


def _store_rows(rows: list[dict[str, Any]], conn: sqlite3.Connection) -> list[int]:
    new = []
    for row in rows:
        if conn.execute(_STORE, row).rowcount:
            new.append(int(row["update_id"]))
    return new


def _changes(sql: str, params: dict[str, Any], conn: sqlite3.Connection) -> int:
    return int(conn.execute(sql, params).rowcount)


def _returning(sql: str, params: dict[str, Any], conn: sqlite3.Connection) -> list[Any]:
    return list(conn.execute(sql, params).fetchall())


class SqliteInbox:
    """`Inbox` on the SQLite file of the runs, on a connection of its own."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        self._writes = WriteQueue(partial(run_transaction, conn))

    @classmethod
    async def open(
        cls, path: str | Path, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
    ) -> SqliteInbox:
        return cls(await connect(path, busy_timeout_s=busy_timeout_s))

    async def close(self) -> None:
        await self._writes.drain()
        await self._conn.close()

    async def store(
        self, updates: Sequence[Received], owner: str, now: float, until: float
    ) -> list[int]:
        rows = store_params(updates, owner, now, until)
        new: list[int] = await self._writes.submit(partial(_store_rows, rows))
        return new

    async def processed(self, update_id: int, now: float) -> None:
        await self._writes.submit(
            partial(_changes, _PROCESSED, {"update_id": update_id, "now": now})
        )

    async def renew(self, owner: str, update_ids: Sequence[int], until: float) -> None:
        params = {"owner": owner, "until": until, "ids": json.dumps(list(update_ids))}
        await self._writes.submit(partial(_changes, _RENEW, params))

    async def park(self, owner: str, chat_id: int, update_ids: Sequence[int]) -> None:
        params = {"owner": owner, "chat_id": chat_id, "ids": json.dumps(list(update_ids))}
        await self._writes.submit(partial(_changes, _PARK, params))

    async def unpark(self, owner: str, chat_id: int, limit: int) -> list[Received]:
        params = {"owner": owner, "chat_id": chat_id, "limit": limit}
        rows = await self._writes.submit(partial(_returning, _UNPARK, params))
        return sorted(
            (Received(int(r["update_id"]), str(r["body"])) for r in rows),
            key=lambda r: r.update_id,
        )

    async def pending_owners(self) -> list[tuple[str | None, float | None]]:
        rows = await fetch(self._conn, _PENDING_OWNERS)
        return [(r["owner"], r["lease_until"]) for r in rows]

    async def claim_stale(
        self, owner: str, now: float, until: float, dead: Sequence[str] = ()
    ) -> list[Received]:
        params = {"owner": owner, "now": now, "until": until, "dead": json.dumps(list(dead))}
        rows = await self._writes.submit(partial(_returning, _CLAIM_STALE, params))
        return sorted(
            (Received(int(r["update_id"]), str(r["body"])) for r in rows),
            key=lambda r: r.update_id,
        )

    async def prune(self, before: float) -> int:
        pruned: int = await self._writes.submit(partial(_changes, _PRUNE, {"before": before}))
        return pruned

    async def take_lease(self, name: str, owner: str, now: float, until: float) -> bool:
        params = {"name": name, "owner": owner, "now": now, "until": until}
        return bool(await self._writes.submit(partial(_changes, _TAKE_LEASE, params)))

    async def lease(self, name: str) -> Lease | None:
        rows = await fetch(self._conn, _LEASE, (name,))
        if not rows:
            return None
        return Lease(str(rows[0]["name"]), str(rows[0]["owner"]), float(rows[0]["expires_at"]))

    async def release_lease(self, name: str, owner: str) -> None:
        await self._writes.submit(partial(_changes, _RELEASE_LEASE, {"name": name, "owner": owner}))

    async def release_claims(self, owner: str) -> None:
        await self._writes.submit(partial(_changes, RELEASE_CLAIMS, {"owner": owner}))

    async def backlog(self) -> tuple[int, float | None]:
        rows = await fetch(self._conn, BACKLOG)
        oldest = rows[0]["oldest"]
        return int(rows[0]["n"]), None if oldest is None else float(oldest)
