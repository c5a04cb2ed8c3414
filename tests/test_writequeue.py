"""The group-commit write queue on its own, over a database it is given: SQLite in memory,
or a PostgreSQL schema of its own through the store's real `storage.pg.run_transaction`
(`store_backend`: every test runs on both, with each backend's `Faults`).

`HeldDatabase.transact` keeps `run_transaction`'s contract (all operations in one
transaction, rolled back on any error) and waits at a gate the test opens, so a commit can
be held "in flight" while other writes arrive. `settle()` lets every task already created
run up to its first await: one pass of the event loop, which is FIFO, so it involves no
wall-clock time.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any

import psycopg
import pytest
from psycopg import AsyncConnection

from storage import pg
from storage.db import StorageUnavailable
from storage.writequeue import SQLITE_FAULTS, Faults, WriteQueue
from tests.storage_backends import Backend


class HeldDatabase:
    """SQLite in memory; `HeldPostgres` is the same over PostgreSQL."""

    faults: Faults = SQLITE_FAULTS
    integrity_error: type[Exception] = sqlite3.IntegrityError
    unique_failure = "write failed: UNIQUE"  # how a duplicate reads to the caller

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.execute("CREATE TABLE t (v TEXT NOT NULL UNIQUE)")
        self.batches: list[int] = []  # size of every transaction attempted, in order
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Event()  # a transaction is waiting at the gate
        self.outage: Exception | None = None  # the database itself fails every transaction

    async def transact(self, operations: Sequence[Any]) -> list[Any]:
        self.batches.append(len(operations))
        self.entered.set()
        await self.gate.wait()
        if self.outage is not None:
            raise self.outage
        return await self._transact(operations)

    async def _transact(self, operations: Sequence[Any]) -> list[Any]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            results = [operation(self.conn) for operation in operations]
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return results

    def rows(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT v FROM t ORDER BY v")]

    def insert(self, value: str) -> Any:
        def operation(conn: sqlite3.Connection) -> str:
            conn.execute("INSERT INTO t (v) VALUES (?)", (value,))
            return f"wrote {value}"

        return operation

    def failing(self, error: Exception) -> Any:
        def operation(conn: sqlite3.Connection) -> None:
            raise error

        return operation

    def outage_error(self) -> Exception:
        return sqlite3.OperationalError("database is locked")

    async def close(self) -> None:
        self.conn.close()


class HeldPostgres(HeldDatabase):
    faults = pg.PG_FAULTS
    integrity_error = psycopg.errors.UniqueViolation
    unique_failure = "write failed: duplicate key value violates unique constraint"

    def __init__(self, pool: pg.Pool, url: str) -> None:
        super().__init__()
        self.pool = pool
        self.url = url

    @classmethod
    async def open(cls, url: str) -> HeldPostgres:
        pool = await pg.open_pool(url, max_size=2)
        async with pool.connection() as conn:
            await conn.execute("CREATE TABLE t (v TEXT NOT NULL UNIQUE)")
        return cls(pool, url)

    async def _transact(self, operations: Sequence[Any]) -> list[Any]:
        return await pg.run_transaction(self.pool, operations)

    def rows(self) -> list[str]:
        with psycopg.connect(self.url) as conn:
            return [r[0] for r in conn.execute("SELECT v FROM t ORDER BY v")]

    def insert(self, value: str) -> Any:
        async def operation(conn: AsyncConnection[Any]) -> str:
            await conn.execute("INSERT INTO t (v) VALUES (%s)", (value,))
            return f"wrote {value}"

        return operation

    def failing(self, error: Exception) -> Any:
        async def operation(conn: AsyncConnection[Any]) -> None:
            raise error

        return operation

    def outage_error(self) -> Exception:
        return psycopg.OperationalError("database is locked")

    async def close(self) -> None:
        await self.pool.close()


@pytest.fixture
async def db(store_backend: Backend) -> AsyncIterator[HeldDatabase]:
    held = (
        HeldDatabase()
        if store_backend.name == "sqlite"
        else await HeldPostgres.open(store_backend.url)
    )
    yield held
    await held.close()


def queue_for(db: HeldDatabase) -> WriteQueue[Any]:
    return WriteQueue(db.transact, db.faults)


async def settle() -> None:
    await asyncio.sleep(0)


def start(queue: WriteQueue[Any], *operations: Any) -> list[asyncio.Task[Any]]:
    return [asyncio.ensure_future(queue.submit(op)) for op in operations]


async def hold_first(db: HeldDatabase, queue: WriteQueue[Any]) -> asyncio.Task[Any]:
    """Submit one write and keep its transaction in flight until `db.gate` opens."""
    db.gate.clear()
    (first,) = start(queue, db.insert("a"))
    await db.entered.wait()
    return first


async def results(tasks: Sequence[Awaitable[Any]]) -> list[Any]:
    return list(await asyncio.gather(*tasks, return_exceptions=True))


async def test_a_write_with_nothing_in_flight_commits_at_once_and_returns_its_result(
    db: HeldDatabase,
) -> None:
    queue = queue_for(db)
    assert await queue.submit(db.insert("a")) == "wrote a"
    assert db.batches == [1] and db.rows() == ["a"]


async def test_writes_arriving_during_a_commit_share_the_next_transaction(db: HeldDatabase) -> None:
    queue = queue_for(db)
    first = await hold_first(db, queue)
    queued = start(queue, db.insert("b"), db.insert("c"), db.insert("d"))
    await settle()
    assert db.batches == [1]  # nothing else started while "a" is in flight
    db.gate.set()
    assert await results([first, *queued]) == ["wrote a", "wrote b", "wrote c", "wrote d"]
    assert db.batches == [1, 3]  # b, c and d in one transaction
    assert db.rows() == ["a", "b", "c", "d"]


async def test_one_bad_write_in_a_batch_fails_only_its_own_caller(db: HeldDatabase) -> None:
    queue = queue_for(db)
    first = await hold_first(db, queue)
    queued = start(queue, db.insert("b"), db.insert("a"), db.insert("c"))  # "a" again: UNIQUE fails
    await settle()
    db.gate.set()
    outcomes = await results([first, *queued])
    assert outcomes[:2] == ["wrote a", "wrote b"] and outcomes[3] == "wrote c"
    bad = outcomes[2]
    assert isinstance(bad, StorageUnavailable) and db.unique_failure in str(bad)
    assert isinstance(bad.__cause__, db.integrity_error)
    # The shared transaction was rolled back, then each write got its own.
    assert db.batches == [1, 3, 1, 1, 1]
    assert db.rows() == ["a", "b", "c"]


async def test_a_failing_write_alone_reaches_its_caller_as_storage_unavailable(
    db: HeldDatabase,
) -> None:
    queue = queue_for(db)
    await queue.submit(db.insert("a"))
    with pytest.raises(StorageUnavailable, match=db.unique_failure) as caught:
        await queue.submit(db.insert("a"))
    assert isinstance(caught.value.__cause__, db.integrity_error)

    not_the_database = db.failing(ValueError("cannot encode"))
    with pytest.raises(StorageUnavailable, match=r"write failed: ValueError\('cannot encode'\)"):
        await queue.submit(not_the_database)
    assert await queue.submit(db.insert("b")) == "wrote b"  # the queue goes on
    assert db.rows() == ["a", "b"]


async def test_a_database_outage_fails_the_whole_batch_without_retrying_each_write(
    db: HeldDatabase,
) -> None:
    queue = queue_for(db)
    first = await hold_first(db, queue)
    queued = start(queue, db.insert("b"), db.insert("c"))
    await settle()
    db.outage = db.outage_error()
    db.gate.set()
    outcomes = await results([first, *queued])
    assert all(isinstance(o, StorageUnavailable) for o in outcomes)
    assert all("database is locked" in str(o) for o in outcomes)
    assert db.batches == [1, 2]  # each write would only wait out the lock again
    db.outage = None
    assert await queue.submit(db.insert("d")) == "wrote d"  # and the queue recovers


async def test_drain_waits_for_the_write_in_flight_and_everything_queued(db: HeldDatabase) -> None:
    queue = queue_for(db)
    await queue.drain()  # idle: returns at once
    first = await hold_first(db, queue)
    queued = start(queue, db.insert("b"), db.insert("a"))  # the second one fails
    draining = asyncio.ensure_future(queue.drain())
    await settle()
    assert not draining.done()
    db.gate.set()
    await draining  # a caller's failure is not the drain's
    assert all(task.done() for task in (first, *queued))
    assert isinstance(queued[1].exception(), StorageUnavailable)
    assert db.rows() == ["a", "b"]
