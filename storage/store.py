"""The store as the rest of the code sees it, and which backend a `STEPWISE_DB` value opens.

Two backends implement the same protocols: SQLite (`storage.runs.sqlite`, `storage.shop.sqlite`: a file,
the embedded default, nothing to run) and PostgreSQL (`storage.runs.postgres`,
`storage.shop.postgres`: `STEPWISE_DB=postgresql://…`, for several processes or machines on one
database). The runtime opens them here; bot/, console/ and stepwise/ see only `RunStore`
(and `DemoShop`), never a backend class.

The PostgreSQL modules are imported only when a URL names PostgreSQL (not at the top, for
start-up time only, as `stepwise.cli` does for the web stack): psycopg and its pool cost
every one-shot command about 0.1 s otherwise, and most installations never use them.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

import aiosqlite

from agent_core.agent import RunStore as AgentRunStore
from agent_core.models import EventKind, PromptRef
from storage.db import DEFAULT_BUSY_TIMEOUT_S, MIGRATIONS, StorageUnavailable, connect
from storage.handoffs import Handoffs
from storage.history import History
from storage.inbox.sqlite import Inbox, SqliteInbox
from storage.leases import Lease
from storage.runs.sqlite import SqliteRunStore
from storage.shop.sqlite import SqliteShop
from storage.shop.tools import ShopBackend


class SessionRevocations(Protocol):
    """Signed-out console sessions, kept with the runs so a sign-out survives a restart."""

    async def revoke(self, nonce: str, expires_at: int, now: int) -> None: ...

    async def is_revoked(self, nonce: str, now: int) -> bool: ...


class RunStore(AgentRunStore, Protocol):
    """What the agent needs (`agent_core.agent.RunStore`), plus what the adapters use:
    staff reads (`history`), facts learned after a transition, the message a prompt was
    delivered on, console sign-outs, and closing."""

    history: History
    handoffs: Handoffs
    # This process's side of the run leases (`storage.leases`).
    lease: Lease

    @property
    def revocations(self) -> SessionRevocations: ...

    async def owed_deliveries(self, since: datetime) -> list[str]:
        """Take the runs whose answer or prompt was committed but not delivered (their
        lease, kept for the delivery, lapsed), changed after `since`."""
        ...

    async def renew_leases(self, run_ids: Collection[str], *, heartbeat: bool = True) -> None:
        """Extend this process's leases on `run_ids`, and its heartbeat."""
        ...

    async def live_owners(self) -> list[str]:
        """Other processes live on this database (their heartbeats)."""
        ...

    async def add_event(self, run_id: str, kind: EventKind, message: str | None = None) -> None: ...

    async def bind_prompt(
        self, run_id: str, nonce: str, prompt: PromptRef, message: str | None = None
    ) -> None: ...

    async def bind_choices(self, run_id: str, nonce: str, prompt: PromptRef) -> None: ...

    async def close(self) -> None: ...


class DemoShop(ShopBackend, Protocol):
    """The demo shop's backend as the runtime and the tests use it."""

    async def cancellation_count(self, order_id: str | None = None) -> int: ...

    async def ledger_count(self, tool: str | None = None, order_id: str | None = None) -> int: ...

    async def close(self) -> None: ...


URL_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str | Path) -> bool:
    """True for `postgresql://…` and `postgres://…`: anything else is a SQLite file."""
    return isinstance(target, str) and target.startswith(URL_SCHEMES)


async def open_store(
    target: str | Path,
    *,
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    lease: Lease | None = None,
) -> RunStore:
    """The run store `target` names: a `postgresql://` URL, or a SQLite file path.

    `lease`: this process's id and lease length (a fresh process id by default)."""
    if isinstance(target, str) and is_postgres_url(target):
        from storage.runs.postgres import PgRunStore

        return await PgRunStore.open(target, busy_timeout_s=busy_timeout_s, lease=lease)
    return await SqliteRunStore.open(target, busy_timeout_s=busy_timeout_s, lease=lease)


async def open_shop(
    target: str | Path,
    *,
    seed_path: str | Path | None = None,
    latency_s: float = 0.0,
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
) -> DemoShop:
    """The demo shop in the same database as the runs (seeded on its first start)."""
    if isinstance(target, str) and is_postgres_url(target):
        from storage.shop.postgres import PgShop

        return await PgShop.open(
            target, seed_path=seed_path, latency_s=latency_s, busy_timeout_s=busy_timeout_s
        )
    return await SqliteShop.open(
        target, seed_path=seed_path, latency_s=latency_s, busy_timeout_s=busy_timeout_s
    )


async def open_inbox(
    target: str | Path, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
) -> Inbox:
    """The durable inbox of Telegram updates and the leases, in the same database."""
    if isinstance(target, str) and is_postgres_url(target):
        from storage.inbox.postgres import PgInbox

        return await PgInbox.open(target, busy_timeout_s=busy_timeout_s)
    return await SqliteInbox.open(target, busy_timeout_s=busy_timeout_s)


@dataclass(frozen=True)
class Migrated:
    backend: str
    before: int  # schema version found (0: a new database)
    after: int  # schema version now (more than this stepwise knows: a newer one migrated it)
    known: int  # the number of migrations this stepwise knows


async def migrate_database(
    target: str | Path, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
) -> Migrated:
    """Bring `target`'s schema up to date, explicitly (`stepwise migrate`).

    Opening a store migrates too; this is for operators who migrate before a deploy.
    """
    if isinstance(target, str) and is_postgres_url(target):
        from storage.pg import migrate_url

        before, after, known = await migrate_url(target, timeout_s=busy_timeout_s)
        return Migrated("postgresql", before, after, known)
    before = await sqlite_version(target)
    await (await connect(target, busy_timeout_s=busy_timeout_s)).close()
    return Migrated("sqlite", before, max(before, len(MIGRATIONS)), len(MIGRATIONS))


async def sqlite_version(target: str | Path) -> int:
    """A SQLite file's schema version without changing it (0 for a new file)."""
    if not await asyncio.to_thread(Path(target).exists):
        return 0
    try:
        async with (
            aiosqlite.connect(str(target)) as conn,
            conn.execute("PRAGMA user_version") as cur,
        ):
            row = await cur.fetchone()
    except sqlite3.Error as exc:
        raise StorageUnavailable(f"cannot read database {target}: {exc}") from exc
    return int(row[0]) if row else 0
