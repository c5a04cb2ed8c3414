"""PostgreSQL underneath the stores: the pool, the schema's version, reads, transactions.

The driver is psycopg 3 (async): its named parameters take the same row dicts the SQLite
statements are bound to, its pipeline mode sends a whole transaction (BEGIN, every
statement of a group commit, COMMIT) in one round trip, and it is fully typed.

* `open_pool` connects once directly (so a wrong URL or a down server is one clear
  `StorageUnavailable`, not a pool timeout), migrates, then opens a small pool of
  autocommit connections; every connection waits at most `lock_timeout` for a lock, the
  counterpart of SQLite's busy timeout.
* `run_transaction` runs operations (coroutine functions of a connection) as ONE
  transaction in pipeline mode, retrying the whole of it when PostgreSQL rolled it back
  because of a deadlock or a serialization failure (nothing of it was committed).
* `fetch` reads with `?` placeholders, the spelling the shared staff queries use, into
  `Record`s, readable by column name and by position like `sqlite3.Row`.
* `PG_MIGRATIONS` (storage.pg_schema) are numbered like SQLite's, tracked in a
  `schema_version` table of the schema the connection uses (its `search_path`), applied
  under an advisory lock so that processes starting together migrate once.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import AsyncConnection, AsyncCursor, errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import RowMaker
from psycopg_pool import AsyncConnectionPool

from storage.db import StorageUnavailable
from storage.pg_schema import PG_MIGRATIONS
from storage.writequeue import Faults

DEFAULT_LOCK_TIMEOUT_S = 5.0
DEFAULT_POOL_SIZE = 8
# Whole transactions PostgreSQL aborted to break a deadlock or keep SERIALIZABLE are retried.
TRANSACTION_ATTEMPTS = 3

Pool = AsyncConnectionPool[AsyncConnection[Any]]
# Work done inside a transaction: statements sent on `conn` (pipelined), their results.
PgOperation = Callable[[AsyncConnection[Any]], Awaitable[Any]]


def describe(url: str) -> str:
    """`url` without its password, for messages (`postgresql://user@host:port/db`)."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(malformed URL)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host', '')}{port}/{parts.get('dbname', '')}"


# -- errors ------------------------------------------------------------------------------


def message(exc: BaseException) -> str:
    """One line for a database error; a lock wait that ran out reads as SQLite's does."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, errors.LockNotAvailable):
        return f"database is locked ({text})"
    return text


PG_FAULTS = Faults(
    database_errors=(psycopg.Error,),
    # Connection lost, server shutting down, lock timeout, disk full: every operation of a
    # batch would fail again. (Constraint violations, bad data: one operation's own fault.)
    outages=(psycopg.OperationalError,),
    describe=message,
)


def unavailable(exc: BaseException, what: str) -> StorageUnavailable:
    return StorageUnavailable(f"{what}: {message(exc)}")


# -- rows --------------------------------------------------------------------------------


class Record:
    """A row readable by column name and by position, like `sqlite3.Row`."""

    __slots__ = ("_names", "_values")

    def __init__(self, values: Sequence[Any], names: dict[str, int]) -> None:
        self._values = tuple(values)
        self._names = names

    def __getitem__(self, key: int | str, /) -> Any:
        if isinstance(key, str):
            return self._values[self._names[key]]
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def keys(self) -> list[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"Record({dict(zip(self._names, self._values, strict=True))!r})"


def records(cursor: AsyncCursor[Any]) -> RowMaker[Record]:
    """psycopg row factory for `Record`s."""
    names = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: Record(values, names)


_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@lru_cache(maxsize=512)
def pg_sql(sql: str) -> str:
    """SQLite's placeholders in psycopg's spelling: `?` → `%s`, `:name` → `%(name)s`.

    For statements written once for both backends; none has a `?`, a `:word` or a `%`
    inside a string literal (a `::cast` is left alone).
    """
    return _NAMED.sub(r"%(\1)s", sql.replace("%", "%%").replace("?", "%s"))


# -- opening, migrating ------------------------------------------------------------------


async def connect(url: str, *, timeout_s: float) -> AsyncConnection[Any]:
    """One autocommit connection; a failure is `StorageUnavailable` naming the server."""
    try:
        return await AsyncConnection.connect(
            url, autocommit=True, connect_timeout=max(1, round(timeout_s))
        )
    except psycopg.Error as exc:
        raise unavailable(exc, f"cannot open database {describe(url)}") from exc


async def open_pool(
    url: str,
    *,
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    max_size: int = DEFAULT_POOL_SIZE,
    name: str = "stepwise",
) -> Pool:
    """A pool on an up-to-date schema. Close it with `await pool.close()`."""
    conn = await connect(url, timeout_s=lock_timeout_s)
    try:
        await migrate(conn)
    except psycopg.Error as exc:
        raise unavailable(exc, f"cannot prepare database {describe(url)}") from exc
    finally:
        await conn.close()
    lock_timeout_ms = max(1, int(lock_timeout_s * 1000))

    async def configure(new: AsyncConnection[Any]) -> None:
        await new.execute(f"SET lock_timeout = {lock_timeout_ms}")

    pool: Pool = AsyncConnectionPool(
        url,
        kwargs={"autocommit": True},
        min_size=1,
        max_size=max_size,
        open=False,
        configure=configure,
        timeout=max(lock_timeout_s, 1.0),  # waiting for a free connection
        name=name,
    )
    try:
        await pool.open(wait=True, timeout=max(lock_timeout_s, 1.0))
    except psycopg.Error as exc:
        await pool.close()
        raise unavailable(exc, f"cannot open database {describe(url)}") from exc
    return pool


async def schema_version(conn: AsyncConnection[Any]) -> int:
    """The version this schema is at (0: never migrated)."""
    cur = await conn.execute("SELECT to_regclass('schema_version') IS NOT NULL")
    exists = await cur.fetchone()
    if not exists or not exists[0]:
        return 0
    cur = await conn.execute("SELECT coalesce(max(version), 0) FROM schema_version")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def migrate(conn: AsyncConnection[Any]) -> tuple[int, int]:
    """Apply the migrations this schema has not seen yet, in ONE transaction.

    Returns (version before, version after). The advisory lock is per schema, so two
    processes opening a fresh database together migrate it once, one after the other.
    """
    async with conn.transaction():
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtext('stepwise schema ' || current_schema()))"
        )
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        before = await schema_version(conn)
        for number, script in enumerate(PG_MIGRATIONS[before:], start=before + 1):
            await conn.execute(script)  # no parameters: several statements in one go
            await conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (number,))
    return before, max(before, len(PG_MIGRATIONS))


async def migrate_url(url: str, *, timeout_s: float) -> tuple[int, int, int]:
    """`stepwise migrate`: (version before, version after, migrations known)."""
    conn = await connect(url, timeout_s=timeout_s)
    try:
        before, after = await migrate(conn)
    except psycopg.Error as exc:
        raise unavailable(exc, f"cannot migrate {describe(url)}") from exc
    finally:
        await conn.close()
    return before, after, len(PG_MIGRATIONS)


# -- reading and writing -----------------------------------------------------------------


async def fetch(pool: Pool, sql: str, params: Sequence[Any] = ()) -> list[Record]:
    """Rows of one read written with `?` placeholders; a failure is `StorageUnavailable`."""
    try:
        async with pool.connection() as conn:
            cur = conn.cursor(row_factory=records)
            await cur.execute(pg_sql(sql), params)
            return await cur.fetchall()
    except psycopg.Error as exc:
        raise unavailable(exc, "read failed") from exc


async def run_transaction(pool: Pool, operations: Sequence[PgOperation]) -> list[Any]:
    """Run `operations` atomically, pipelined: one round trip unless one reads a result.

    Errors are the driver's own (the write queue turns them into `StorageUnavailable`).
    """
    for attempt in range(1, TRANSACTION_ATTEMPTS + 1):
        try:
            async with pool.connection() as conn, conn.pipeline(), conn.transaction():
                return [await operation(conn) for operation in operations]
        except errors.TransactionRollback:
            if attempt == TRANSACTION_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def execute_statements(statements: Sequence[tuple[str, Any]]) -> PgOperation:
    """An operation sending `statements` (already in psycopg's spelling) without waiting."""

    async def operation(conn: AsyncConnection[Any]) -> None:
        cur = conn.cursor()
        for sql, params in statements:
            await cur.execute(sql, params)

    return operation
