"""Look at a database without changing it (`stepwise doctor`): is it there, which schema
version is it at, does it take a write, and (PostgreSQL) what time its clock says.

Unlike opening a store, nothing here migrates or seeds: a write is tried in a transaction
that is rolled back (a table created and a row inserted, so a read-only database, a full
disk or a role without the rights `stepwise` needs is found), and a SQLite file that does
not exist yet is not created.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import aiosqlite
import psycopg

from storage.db import DEFAULT_BUSY_TIMEOUT_S, MIGRATIONS, StorageUnavailable
from storage.store import is_postgres_url

PROBE_TABLE = "stepwise_doctor_probe"


@dataclass(frozen=True)
class ClockReading:
    """The database's `now()` and the local clock just before and after asking."""

    server: datetime
    local_before: float
    local_after: float

    def offset_s(self) -> float:
        """How far the server's clock is ahead of ours (negative: behind)."""
        return self.server.timestamp() - (self.local_before + self.local_after) / 2

    def uncertainty_s(self) -> float:
        return (self.local_after - self.local_before) / 2


@dataclass(frozen=True)
class DatabaseProbe:
    backend: str  # "sqlite" or "postgresql"
    where: str  # the file, or the URL without its password
    exists: bool  # False: a SQLite file not created yet
    version: int  # schema version found (0: never migrated)
    known: int  # the migrations this stepwise knows
    write_error: str | None  # None: a write (rolled back) worked
    clock: ClockReading | None  # PostgreSQL only


async def probe_database(
    target: str | Path, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
) -> DatabaseProbe:
    """Probe `target` (a SQLite path or a postgresql:// URL). `StorageUnavailable` (one line,
    no password) when it cannot be reached at all."""
    if isinstance(target, str) and is_postgres_url(target):
        return await _probe_postgres(target, busy_timeout_s)
    return await _probe_sqlite(Path(target), busy_timeout_s)


async def _probe_sqlite(path: Path, busy_timeout_s: float) -> DatabaseProbe:
    known = len(MIGRATIONS)
    if not await asyncio.to_thread(path.exists):
        return DatabaseProbe("sqlite", str(path), False, 0, known, None, None)
    try:
        conn = await aiosqlite.connect(str(path), timeout=busy_timeout_s, isolation_level=None)
    except sqlite3.Error as exc:
        raise StorageUnavailable(f"cannot open database {path}: {exc}") from exc
    try:
        try:
            async with conn.execute("PRAGMA user_version") as cur:
                row = await cur.fetchone()
        except sqlite3.Error as exc:
            raise StorageUnavailable(f"cannot read database {path}: {exc}") from exc
        version = int(row[0]) if row else 0
        write_error = None
        try:
            await conn.execute("BEGIN IMMEDIATE")
            try:
                await conn.execute(f"CREATE TABLE {PROBE_TABLE} (x INTEGER)")
                await conn.execute(f"INSERT INTO {PROBE_TABLE} VALUES (1)")
            finally:
                if conn.in_transaction:
                    await conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            write_error = str(exc)
    finally:
        await conn.close()
    return DatabaseProbe("sqlite", str(path), True, version, known, write_error, None)


async def _probe_postgres(url: str, busy_timeout_s: float) -> DatabaseProbe:
    from storage.pg import connect, describe, message, schema_version
    from storage.pg_schema import PG_MIGRATIONS

    conn = await connect(url, timeout_s=busy_timeout_s)
    try:
        try:
            await conn.execute(f"SET lock_timeout = {max(1, int(busy_timeout_s * 1000))}")
            version = await schema_version(conn)
            before = time.time()
            cur = await conn.execute("SELECT now()")
            row = await cur.fetchone()
            after = time.time()
        except psycopg.Error as exc:
            raise StorageUnavailable(f"cannot read {describe(url)}: {message(exc)}") from exc
        clock = ClockReading(row[0], before, after) if row else None
        write_error = None
        try:
            async with conn.transaction(force_rollback=True):
                await conn.execute(f"CREATE TABLE {PROBE_TABLE} (x INTEGER)")
                await conn.execute(f"INSERT INTO {PROBE_TABLE} VALUES (1)")
        except psycopg.Error as exc:
            write_error = message(exc)
    finally:
        await conn.close()
    return DatabaseProbe(
        "postgresql", describe(url), True, version, len(PG_MIGRATIONS), write_error, clock
    )
