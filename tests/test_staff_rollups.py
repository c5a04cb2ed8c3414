"""The staff's counts (`/stats`, the console overview): runs by status come from an hourly
roll-up kept by triggers (migration 10 on SQLite, 4 on PostgreSQL), failed attempts from
the partial index `events_failures` (the failure roll-up is dropped by migration 18 on
SQLite, 12 on PostgreSQL). Both must equal a plain count over the rows, whatever wrote or
deleted them and whenever `since` falls: on an hour, inside one, before the history, after
it. Both backends (tests/storage_backends.py)."""

from __future__ import annotations

import random
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import storage.db
import storage.pg
from agent_core.models import ErrorType
from storage.db import MIGRATIONS
from storage.pg_schema import PG_MIGRATIONS
from storage.tables import ts
from tests.fakes import STATUS, fail, make_run
from tests.storage_backends import Backend, Observer
from tests.test_storage import executor_for

START = datetime(2026, 11, 20, 7, 0, tzinfo=UTC)
STATUSES = ("completed", "failed", "paused", "cancelled", "running")
ERRORS = (("timeout", "get_order_status"), ("not_found", "cancel_order"), ("internal", None))


def _write_history(
    db: Observer, rng: random.Random, runs: int, first: int = 0
) -> list[tuple[str, str, str]]:
    """`runs` runs at random instants over 30 hours, with failure events; returns them
    (numbered from `first`)."""
    written = []
    for n in range(first, first + runs):
        at = ts(START + timedelta(seconds=rng.randrange(30 * 3600)))
        status = rng.choice(STATUSES)
        run_id = f"r{n:05d}"
        db.execute(
            "INSERT INTO runs (id, trace_id, user_id, chat_id, request_text, language, status,"
            " max_attempts, created_at, updated_at) VALUES (?, 't', 1, 1, 'x', 'en', ?, 3, ?, ?)",
            (run_id, status, at, at),
        )
        for _ in range(rng.randrange(3)):
            error, tool = rng.choice(ERRORS)
            failed_at = ts(START + timedelta(seconds=rng.randrange(30 * 3600)))
            db.execute(
                "INSERT INTO events (run_id, trace_id, kind, tool, error_type, at)"
                " VALUES (?, 't', 'step_retrying', ?, ?, ?)",
                (run_id, tool, error, failed_at),
            )
        written.append((run_id, status, at))
    return written


def _plain_status_counts(db: Observer, since: datetime) -> dict[str, int]:
    rows = db.execute(
        "SELECT status, count(*) FROM runs WHERE created_at >= ? GROUP BY status", (ts(since),)
    ).fetchall()
    return {str(s): int(n) for s, n in rows}


def _plain_failure_counts(db: Observer, since: datetime) -> Counter[tuple[str, str | None]]:
    rows = db.execute(
        "SELECT error_type, tool, count(*) FROM events"
        " WHERE error_type IS NOT NULL AND at >= ? GROUP BY error_type, tool",
        (ts(since),),
    ).fetchall()
    return Counter({(str(e), t): int(n) for e, t, n in rows})


SINCES = (
    START - timedelta(days=1),  # before everything
    START,  # on the first hour
    START + timedelta(hours=5, minutes=17, seconds=3),  # inside an hour
    START + timedelta(hours=12),  # on an hour in the middle
    START + timedelta(hours=29, minutes=59),  # the last minutes
    START + timedelta(days=2),  # after everything
)


async def _assert_counts_match(store: Any, db: Observer) -> None:
    for since in SINCES:
        assert await store.history.status_counts(since) == _plain_status_counts(db, since)
        counted = await store.history.failure_counts(since)
        assert Counter({(c.error_type, c.tool): c.count for c in counted}) == (
            _plain_failure_counts(db, since)
        ), since
        assert [c.count for c in counted] == sorted((c.count for c in counted), reverse=True)


async def test_counts_from_rollups_equal_plain_counts(store_backend: Backend) -> None:
    store = await store_backend.open_store()
    db = store_backend.observer()
    try:
        rng = random.Random(5)
        runs = _write_history(db, rng, 400)
        await _assert_counts_match(store, db)

        # Status changes (the journal's UPDATEs), a moved creation time, a deleted run:
        # the roll-up follows each, in the writing transaction.
        for run_id, _, _ in rng.sample(runs, 120):
            db.execute("UPDATE runs SET status = ? WHERE id = ?", (rng.choice(STATUSES), run_id))
        moved = runs[7][0]
        db.execute(
            "UPDATE runs SET created_at = ? WHERE id = ?",
            (ts(START + timedelta(hours=20, minutes=30)), moved),
        )
        db.execute("UPDATE runs SET status = status WHERE id = ?", (runs[8][0],))  # no change
        db.execute("DELETE FROM runs WHERE id = ?", (runs[9][0],))  # cascades to its events
        await _assert_counts_match(store, db)

        # Failure events deleted and written one by one, by hand: counted as they are now.
        failures = db.execute(
            "SELECT seq FROM events WHERE error_type IS NOT NULL ORDER BY seq"
        ).fetchall()
        for (seq,) in failures[::9]:
            db.execute("DELETE FROM events WHERE seq = ?", (seq,))
        for run_id, _, at in runs[20:40]:
            db.execute(
                "INSERT INTO events (run_id, trace_id, kind, tool, error_type, at)"
                " VALUES (?, 't', 'step_failed', NULL, 'internal', ?)",
                (run_id, at),
            )
        assert len(failures) > 300
        await _assert_counts_match(store, db)
    finally:
        db.close()
        await store.close()


async def test_counts_of_runs_the_executor_wrote(store_backend: Backend) -> None:
    """The journal's own writes (upsert at plan, status updates) keep the roll-up exact."""
    store = await store_backend.open_store()
    db = store_backend.observer()
    try:
        for number in range(6):
            failing = [fail(ErrorType.NOT_FOUND)] if number % 3 == 0 else [{"status": "shipped"}]
            executor, _ = executor_for(store, status=failing)
            run = make_run([STATUS])
            run.id = f"exec{number}"
            await executor.start(run)
        since = datetime.now(UTC) - timedelta(hours=2)
        assert await store.history.status_counts(since) == {"completed": 4, "failed": 2}
        assert await store.history.status_counts(since) == _plain_status_counts(db, since)
        rolled = db.execute(
            "SELECT status, sum(n) FROM run_counts_hourly GROUP BY status HAVING sum(n) > 0"
        )
        assert dict(rolled.fetchall()) == {"completed": 4, "failed": 2}
        counted = await store.history.failure_counts(since)
        assert [(c.error_type, c.tool, c.count) for c in counted] == [
            ("not_found", "get_order_status", 2)
        ]
    finally:
        db.close()
        await store.close()


async def test_failure_counts_read_the_partial_index_of_failures(store_backend: Backend) -> None:
    """Failures are counted from `events_failure_kinds`, never by reading the event log:
    the count is linear in the window's failures, not in the history's events."""
    store = await store_backend.open_store()
    store_backend.bulk_runs(3000)  # 3,300 events, 300 of them failures
    db = store_backend.observer()
    try:
        db.execute("ANALYZE")
        since = datetime(2025, 1, 1, 12, tzinfo=UTC)
        plan = await store.history.explain_failure_counts(since)
        assert "events_failure_kinds" in plan, plan
        assert not re.search(r"^\s*SCAN events|Seq Scan on events", plan, re.MULTILINE), plan
        counted = await store.history.failure_counts(since)
        assert [(c.error_type, c.tool, c.count) for c in counted] == [
            # runs 1440, 1450 … 2990: every 10th run fails once, they are 30 s apart
            ("timeout", "get_order_status", 156)
        ]
        assert Counter({(c.error_type, c.tool): c.count for c in counted}) == (
            _plain_failure_counts(db, since)
        )
    finally:
        db.close()
        await store.close()


async def test_migrating_drops_the_failure_rollup_and_keeps_the_counts(
    store_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database that had the failure roll-up (SQLite 17, PostgreSQL 11) loses its table
    and both triggers on `events`; the failures written before are counted all the same."""
    postgres = store_backend.name == "postgresql"
    if postgres:
        monkeypatch.setattr(storage.pg, "PG_MIGRATIONS", PG_MIGRATIONS[:11])
    else:
        monkeypatch.setattr(storage.db, "MIGRATIONS", MIGRATIONS[:17])
    old = await store_backend.open_store()
    db = store_backend.observer()
    try:
        rng = random.Random(8)
        _write_history(db, rng, 60)
        assert _rollup_objects(db, postgres) == {
            "failure_counts_hourly",
            "events_count_failure",
            "events_uncount_failure",
        }
        await old.close()
        monkeypatch.undo()

        store = await store_backend.open_store()
        try:
            assert _rollup_objects(db, postgres) == set()
            assert await store.history.schema_version() == (
                (len(PG_MIGRATIONS), len(PG_MIGRATIONS))
                if postgres
                else (len(MIGRATIONS), len(MIGRATIONS))
            )
            _write_history(db, rng, 20, first=60)  # nothing left on `events` to trip over
            await _assert_counts_match(store, db)
            assert await store.history.failure_counts(START - timedelta(days=1))
        finally:
            await store.close()
    finally:
        db.close()


def _rollup_objects(db: Observer, postgres: bool) -> set[str]:
    """The failure roll-up's table and triggers that exist."""
    if postgres:
        sql = (
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_name = 'failure_counts_hourly'"
            " UNION ALL SELECT tgname FROM pg_trigger"
            " WHERE tgrelid = 'events'::regclass AND NOT tgisinternal"
        )
    else:
        sql = (
            "SELECT name FROM sqlite_master WHERE name = 'failure_counts_hourly'"
            " OR (type = 'trigger' AND tbl_name = 'events')"
        )
    return {str(r[0]) for r in db.execute(sql).fetchall()}
