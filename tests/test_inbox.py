"""The durable inbox and the leases (issue 15, items 2 and 3) on both backends, and the
SQLite connection that heals when its file vanished or went read-only (item 5)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path

import aiosqlite
import pytest

from agent_core.models import EventKind, Language, Run, RunEvent
from bot.inbox import owner_is_dead
from bot.polling import may_poll_degraded
from storage.db import (
    StorageUnavailable,
    connect,
    execute_statements,
    heal,
    needs_reopening,
    run_transaction,
    writable,
)
from storage.inbox.sqlite import (
    RUN_ID_FOR_UPDATE,
    Inbox,
    Lease,
    Received,
    new_run_id,
    run_id_for_update,
)
from storage.runs.sqlite import SqliteRunStore
from storage.store import open_inbox
from tests.storage_backends import Backend


@pytest.fixture
async def inbox(store_backend: Backend) -> AsyncIterator[Inbox]:
    opened = await open_inbox(store_backend.url)
    try:
        yield opened
    finally:
        await opened.close()


def _updates(*ids: int) -> list[Received]:
    return [Received(i, f'{{"update_id": {i}}}') for i in ids]


# -- the inbox -----------------------------------------------------------------------------


async def test_an_update_is_stored_once_and_a_redelivery_is_not_new(
    inbox: Inbox, store_backend: Backend
) -> None:
    assert await inbox.store(_updates(1, 2), "a", 100.0, 103.0) == [1, 2]
    assert await inbox.store(_updates(2, 3), "a", 101.0, 104.0) == [3]
    assert store_backend.count_rows("inbox") == 3
    observer = store_backend.observer()
    try:
        rows = observer.execute("SELECT update_id, body FROM inbox ORDER BY update_id").fetchall()
    finally:
        observer.close()
    assert [tuple(r) for r in rows] == [(1, '{"update_id": 1}'), (2, '{"update_id": 2}'), (3, '{"update_id": 3}')]  # fmt: skip


async def test_only_unprocessed_updates_whose_claim_ran_out_are_taken_over(inbox: Inbox) -> None:
    await inbox.store(_updates(1, 2, 3), "a", 100.0, 103.0)
    await inbox.processed(2, 101.0)
    assert await inbox.claim_stale("b", 102.0, 105.0) == []  # a's claim still runs
    taken = await inbox.claim_stale("b", 104.0, 107.0)
    assert [r.update_id for r in taken] == [1, 3]
    assert taken[0].body == '{"update_id": 1}'
    assert await inbox.claim_stale("c", 106.0, 109.0) == []  # b holds them now
    assert sorted(await inbox.pending_owners()) == [("b", 107.0)]
    # One's own, once its claim ran out (a mark that failed): taken up again.
    assert [r.update_id for r in await inbox.claim_stale("b", 108.0, 111.0)] == [1, 3]


async def test_a_dead_owner_s_updates_are_taken_before_its_claim_runs_out(inbox: Inbox) -> None:
    await inbox.store(_updates(1), "dead", 100.0, 200.0)
    await inbox.store(_updates(2), "alive", 100.0, 200.0)
    taken = await inbox.claim_stale("b", 101.0, 104.0, dead=["dead"])
    assert [r.update_id for r in taken] == [1]


async def test_renewing_keeps_the_updates_one_is_handling(inbox: Inbox) -> None:
    await inbox.store(_updates(1, 2, 3), "a", 100.0, 103.0)
    await inbox.processed(1, 101.0)
    await inbox.renew("a", [1, 2], 110.0)
    await inbox.renew("b", [3], 110.0)  # not b's to renew
    assert [r.update_id for r in await inbox.claim_stale("b", 105.0, 108.0)] == [3]
    assert [r.update_id for r in await inbox.claim_stale("c", 111.0, 114.0)] == [2, 3]
    await inbox.renew("a", [], 120.0)  # nothing in hand: a no-op


async def test_parked_updates_stay_claimed_and_come_back_oldest_first_per_chat(
    inbox: Inbox,
) -> None:
    """A chat over its queue cap: its updates wait in the inbox, renewed with the owner's
    claims (no sweep takes them while it lives), and come back a few at a time, in order,
    for that chat only."""
    await inbox.store(_updates(1, 2, 3, 4, 5), "a", 100.0, 103.0)
    await inbox.park("a", 7, [2, 4, 5])
    await inbox.park("a", 8, [3])
    await inbox.park("b", 7, [1])  # not b's: nothing parked
    await inbox.renew("a", [1], 110.0)  # renews what "a" handles and everything it parked
    assert await inbox.claim_stale("c", 105.0, 108.0) == []
    assert [r.update_id for r in await inbox.unpark("a", 7, 2)] == [2, 4]
    assert await inbox.unpark("b", 7, 5) == []  # another owner's parked updates are not its own
    assert [r.update_id for r in await inbox.unpark("a", 7, 5)] == [5]
    assert await inbox.unpark("a", 7, 5) == []
    assert [r.update_id for r in await inbox.unpark("a", 8, 5)] == [3]


async def test_a_dead_owners_parked_updates_are_taken_over_and_no_longer_parked(
    inbox: Inbox,
) -> None:
    await inbox.store(_updates(1, 2), "dead", 100.0, 103.0)
    await inbox.park("dead", 7, [1, 2])
    taken = await inbox.claim_stale("b", 104.0, 107.0)
    assert [r.update_id for r in taken] == [1, 2]
    assert await inbox.unpark("dead", 7, 5) == [] and await inbox.unpark("b", 7, 5) == []
    await inbox.store(_updates(3), "b", 104.0, 107.0)
    await inbox.park("b", 7, [3])
    await inbox.release_claims("b")  # a stop gives them up, parked or not
    assert [r.update_id for r in await inbox.claim_stale("c", 105.0, 108.0)] == [1, 2, 3]


async def test_two_processes_sweeping_at_once_never_take_the_same_update(
    store_backend: Backend,
) -> None:
    first, second = await open_inbox(store_backend.url), await open_inbox(store_backend.url)
    try:
        await first.store(_updates(*range(1, 41)), "dead", 100.0, 101.0)
        a, b = await asyncio.gather(
            first.claim_stale("a", 200.0, 203.0), second.claim_stale("b", 200.0, 203.0)
        )
        ids_a, ids_b = {r.update_id for r in a}, {r.update_id for r in b}
        assert ids_a.isdisjoint(ids_b)
        assert ids_a | ids_b == set(range(1, 41))
    finally:
        await first.close()
        await second.close()


async def test_pruning_forgets_only_updates_processed_long_enough_ago(
    inbox: Inbox, store_backend: Backend
) -> None:
    await inbox.store(_updates(1, 2, 3), "a", 100.0, 103.0)
    await inbox.processed(1, 100.0)
    await inbox.processed(2, 500.0)
    assert await inbox.prune(before=200.0) == 1
    assert store_backend.count_rows("inbox") == 2
    assert await inbox.store(_updates(2), "a", 600.0, 603.0) == []  # still known: not new


# -- leases --------------------------------------------------------------------------------


async def test_a_lease_is_held_by_one_owner_until_it_expires_or_is_released(
    inbox: Inbox,
) -> None:
    assert await inbox.take_lease("poller", "a", 100.0, 103.0)
    assert await inbox.take_lease("poller", "a", 101.0, 104.0)  # renewed
    assert not await inbox.take_lease("poller", "b", 103.5, 106.5)
    assert await inbox.lease("poller") == Lease("poller", "a", 104.0)
    assert await inbox.take_lease("poller", "b", 104.5, 107.5)  # a's ran out
    assert not await inbox.take_lease("poller", "a", 105.0, 108.0)  # a lost it
    await inbox.release_lease("poller", "a")  # not a's to release
    assert await inbox.lease("poller") == Lease("poller", "b", 107.5)
    await inbox.release_lease("poller", "b")
    assert await inbox.lease("poller") is None
    assert await inbox.take_lease("poller", "a", 105.5, 108.5)


async def test_two_processes_racing_for_a_free_lease_one_wins(store_backend: Backend) -> None:
    first, second = await open_inbox(store_backend.url), await open_inbox(store_backend.url)
    try:
        won = await asyncio.gather(
            *(
                inbox.take_lease("poller", owner, 100.0, 103.0)
                for inbox, owner in ((first, "a"), (second, "b"))
            )
        )
        assert sorted(won) == [False, True]
    finally:
        await first.close()
        await second.close()


def test_polling_without_a_writable_lease_only_when_nobody_else_holds_it() -> None:
    live = Lease("poller", "other", 110.0)
    assert may_poll_degraded(None, "me", 100.0, dead=False)
    assert may_poll_degraded(Lease("poller", "me", 90.0), "me", 100.0, dead=False)
    assert may_poll_degraded(Lease("poller", "other", 99.0), "me", 100.0, dead=False)
    assert not may_poll_degraded(live, "me", 100.0, dead=False)
    assert may_poll_degraded(live, "me", 100.0, dead=True)


def test_only_a_gone_process_of_this_machine_is_judged_dead() -> None:
    gone = os.fork()
    if gone == 0:
        os._exit(0)
    os.waitpid(gone, 0)
    assert owner_is_dead(f"host-a:{gone}:abc", here="host-a")
    assert not owner_is_dead(f"host-a:{os.getpid()}:abc", here="host-a")
    assert not owner_is_dead(f"host-b:{gone}:abc", here="host-a")  # another machine's
    assert not owner_is_dead("something else", here="host-a")


# -- the run an update starts --------------------------------------------------------------


def test_a_run_started_for_an_update_has_an_id_derived_from_it_once() -> None:
    derived = run_id_for_update(123456789, 42)
    assert len(derived) == 28 and int(derived, 16)  # hex, never a random id's 12 digits
    assert derived != run_id_for_update(123456789, 43) != run_id_for_update(987654321, 42)

    def handling() -> list[str]:
        RUN_ID_FOR_UPDATE.set([derived])
        # Two tasks started by the handling (each with a copy of its context): one run
        # gets the derived id, the other a random one.
        return [contextvars.copy_context().run(new_run_id) for _ in range(2)]

    first, second = contextvars.copy_context().run(handling)
    assert first == derived
    assert second != derived and len(second) == 12
    assert len(new_run_id()) == 12  # outside a handling: random


# -- healing (SQLite) ----------------------------------------------------------------------


def _run(n: int) -> Run:
    return Run(
        id=f"r{n}",
        trace_id=f"t{n}",
        user_id=n,
        chat_id=n,
        request_text="where is A1001",
        language=Language.EN,
    )


async def _record(store: SqliteRunStore, run: Run) -> None:
    await store.record(run, RunEvent(kind=EventKind.RUN_PLANNED, run_id=run.id, trace_id="t"))


async def test_healing_reopens_every_connection_to_the_file_and_they_keep_working(
    tmp_path: Path,
) -> None:
    """Within a process, connections to one file share its read-only state: a heal swaps
    them all (the real read-only disk: tests/reliability/test_database_trouble.py)."""
    db = tmp_path / "bot.db"
    store = await SqliteRunStore.open(db)
    other = await connect(db)  # another connection of this process to the same file
    try:
        await _record(store, _run(1))
        before = (store._conn._conn, other._conn)
        assert await heal(other)
        assert store._conn._conn is not before[0] and other._conn is not before[1]
        await _record(store, _run(2))
        assert [r[0] for r in await other.execute_fetchall("SELECT id FROM runs")] == ["r1", "r2"]
        assert (await store.load_run("r2")) is not None  # rows still read by column name
    finally:
        await other.close()
        await store.close()


def _handles_to(path: Path) -> int:
    """File descriptors of this process open on `path` itself (not its -wal or -shm)."""
    fds = Path("/proc/self/fd")
    count = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):  # an fd closed while we look
            count += os.readlink(fd) == str(path)
    return count


async def _failed_write(conn: aiosqlite.Connection) -> object:
    """A write that fails while stepping; its exception (kept, as the write asking for a
    heal keeps it while the heal runs) holds the failed cursor through its traceback."""
    twice = [("INSERT INTO leases (name, owner, expires_at) VALUES ('x', 'me', 1)", ())]
    await run_transaction(conn, [partial(execute_statements, twice)])
    with pytest.raises(sqlite3.IntegrityError) as failed:
        await run_transaction(conn, [partial(execute_statements, twice)])
    return failed.value


async def _read_stopped_mid_result(conn: aiosqlite.Connection) -> object:
    """A read whose cursor has its first row and is not closed yet (another coroutine's,
    between two hops to the database thread)."""
    cursor = await conn.execute("SELECT name FROM sqlite_master")
    assert await cursor.fetchone() is not None
    return cursor


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
@pytest.mark.parametrize("leave_statement", [_failed_write, _read_stopped_mid_result])
async def test_a_heal_closes_the_old_connection_even_with_a_statement_left_on_it(
    tmp_path: Path, leave_statement: Callable[[aiosqlite.Connection], Awaitable[object]]
) -> None:
    """sqlite3's close() leaves a connection open while a statement of it is not finalized
    (a cursor still alive); that connection keeps the file's shared state, read-only if it
    was opened so, and every connection the heal opens next is read-only again (the bot
    that never healed: tests/reliability/test_database_trouble.py). The heal closes such
    cursors first: afterwards the file is open once, by the new connection."""
    db = tmp_path / "bot.db"
    conn = await connect(db)
    try:
        left = await leave_statement(conn)
        assert _handles_to(db) == 1
        assert await heal(conn)
        assert _handles_to(db) == 1, "the connection replaced by the heal is still open"
        await _works(conn)  # and the new one works
        del left
    finally:
        await conn.close()


async def _works(conn: aiosqlite.Connection) -> None:
    row = [("INSERT INTO leases (name, owner, expires_at) VALUES ('y', 'me', 1)", ())]
    await run_transaction(conn, [partial(execute_statements, row)])
    assert ("y",) in [tuple(r) for r in await conn.execute_fetchall("SELECT name FROM leases")]


async def test_nothing_is_reopened_while_the_file_system_is_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "bot.db"
    conn = await connect(db)
    try:
        assert writable(str(db))
        monkeypatch.setattr("storage.db.writable", lambda path: False)
        assert not await heal(conn)
        old = conn._conn
        assert conn._conn is old
    finally:
        await conn.close()


def test_only_a_stale_connection_s_errors_ask_for_reopening(tmp_path: Path) -> None:
    ro = sqlite3.connect(f"file:{tmp_path / 'x.db'}?mode=rwc", uri=True)
    ro.execute("CREATE TABLE t (x)")
    ro.close()
    ro = sqlite3.connect(f"file:{tmp_path / 'x.db'}?mode=ro", uri=True)
    try:
        with pytest.raises(sqlite3.OperationalError) as readonly:
            ro.execute("INSERT INTO t VALUES (1)")
        assert needs_reopening(readonly.value)
        with pytest.raises(sqlite3.OperationalError) as missing:
            ro.execute("SELECT * FROM nowhere")
        assert not needs_reopening(missing.value)
    finally:
        ro.close()


async def test_a_postgres_connection_that_vanished_is_replaced(postgres_backend: Backend) -> None:
    """The server ends the inbox's connections (a restart, a failover): at most the write in
    flight fails (`StorageUnavailable`, nothing acknowledged); the pool replaces them."""
    from tests.storage_backends import PostgresBackend

    assert isinstance(postgres_backend, PostgresBackend)
    inbox = await open_inbox(postgres_backend.url)
    try:
        await inbox.store(_updates(1), "a", 100.0, 103.0)
        observer = postgres_backend.observer()
        try:
            ended = observer.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = ? AND pid != pg_backend_pid()",
                (postgres_backend.schema,),
            ).fetchone()[0]
        finally:
            observer.close()
        assert ended >= 1
        stored: list[int] = []
        for _ in range(3):  # one broken connection per failed attempt, at most the pool's
            try:
                stored = await inbox.store(_updates(2), "a", 101.0, 104.0)
                break
            except StorageUnavailable:
                continue
        assert stored == [2]
    finally:
        await inbox.close()
