"""Group commit: concurrent writes share transactions, each caller waits for its own.

One connection, many coroutines. Every write is ONE hop to aiosqlite's thread (`BEGIN
IMMEDIATE` ... `COMMIT` inside it), so transactions cannot interleave; this queue lets the
writes that arrive while a commit is in flight share the next one, so 50 concurrent runs
share commits instead of queueing for one each.

The queue knows nothing of runs or SQL: it is given operations (functions run on the
database thread inside a transaction) and a `Transact` that runs a list of them as one
transaction. Production passes `storage.db.run_transaction` bound to the connection;
tests pass a fake they can hold and release. It knows nothing of the database either:
an operation is whatever `transact` runs (a function of a `sqlite3.Connection` for SQLite,
a coroutine function of a psycopg connection for PostgreSQL, `storage.pg`), and which
failures are the database's own (an outage, fail the whole batch) rather than one
operation's is told by `Faults` (SQLite's by default).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from storage.db import StorageUnavailable

Op = TypeVar("Op")
# Runs `operations` as ONE transaction (all or nothing) and returns their results in order.
Transact = Callable[[Sequence[Op]], Awaitable[list[Any]]]


@dataclass(frozen=True)
class Faults:
    """How a backend's failures read: the database's own errors, and which are outages.

    An outage (locked, read-only, full, connection lost) would fail every operation of a
    batch again, so a failed batch is only split when its error is not one.
    """

    database_errors: tuple[type[Exception], ...]
    outages: tuple[type[Exception], ...]
    # One line for a database error (the driver's message by default).
    describe: Callable[[BaseException], str] = str


SQLITE_FAULTS = Faults(database_errors=(sqlite3.Error,), outages=(sqlite3.OperationalError,))


class WriteQueue(Generic[Op]):
    """Submit operations; each returns its result once its transaction has committed.

    With nothing in flight a caller commits its operation itself, at once. Operations that
    arrive while a commit is in flight are queued and committed together by a flusher task.
    A failing operation fails only its own caller when it can be told apart from the others
    (see `_flush`); every failure reaches its caller as `StorageUnavailable`.
    """

    def __init__(self, transact: Transact[Op], faults: Faults = SQLITE_FAULTS) -> None:
        self._transact = transact
        self._faults = faults
        self._queue: list[tuple[Op, asyncio.Future[Any]]] = []
        self._flusher: asyncio.Future[None] | None = None
        self._busy = False  # a transaction is in flight: queue, don't start another
        self._idle = asyncio.Event()
        self._idle.set()

    async def submit(self, operation: Op) -> Any:
        """Run `operation` in a (possibly shared) transaction; its result once committed."""
        if self._busy:
            done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._queue.append((operation, done))
            return await done
        self._set_busy(True)
        try:
            return await self._alone(operation)
        finally:
            if self._queue:
                self._flusher = asyncio.ensure_future(self._flush())  # it clears _busy
            else:
                self._set_busy(False)

    async def drain(self) -> None:
        """Wait until every write submitted so far has committed or failed.

        Failures belong to their callers, so none is raised here (closing a store must not
        fail because some customer's write did).
        """
        await self._idle.wait()

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        if busy:
            self._idle.clear()
        else:
            self._idle.set()

    async def _alone(self, operation: Op) -> Any:
        try:
            (result,) = await self._transact((operation,))
        except Exception as exc:
            raise unavailable(exc, self._faults) from exc
        return result

    async def _flush(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    results = await self._transact([op for op, _ in batch])
                except Exception as exc:
                    if len(batch) > 1 and not isinstance(exc, self._faults.outages):
                        # One operation's own fault (text SQLite cannot encode, a violated
                        # constraint), not the database's: the batch was rolled back, so
                        # give every operation its own transaction and fail only that one.
                        # (An OperationalError — locked, read-only, full — would fail them
                        # all again, after waiting out the busy timeout once per operation.)
                        await self._one_by_one(batch)
                    else:
                        _fail(batch, unavailable(exc, self._faults))
                    continue
                except BaseException as exc:
                    _fail(batch, StorageUnavailable(f"write interrupted: {exc!r}"))
                    raise
                for (_, done), result in zip(batch, results, strict=True):
                    if not done.done():
                        done.set_result(result)
        finally:
            self._flusher = None
            self._set_busy(False)

    async def _one_by_one(self, batch: Sequence[tuple[Op, asyncio.Future[Any]]]) -> None:
        for operation, done in batch:
            try:
                result = await self._alone(operation)
            except StorageUnavailable as exc:
                if not done.done():
                    done.set_exception(exc)
            else:
                if not done.done():
                    done.set_result(result)


def unavailable(exc: Exception, faults: Faults = SQLITE_FAULTS) -> StorageUnavailable:
    """A failed write as callers see it: the database's own message where it has one."""
    if isinstance(exc, faults.database_errors):
        return StorageUnavailable(f"write failed: {faults.describe(exc)}")
    return StorageUnavailable(f"write failed: {exc!r}")  # not the database's own (encoding)


def _fail(batch: Sequence[tuple[Any, asyncio.Future[Any]]], error: Exception) -> None:
    for _, done in batch:
        if not done.done():
            done.set_exception(error)
