"""The staff's counts (`/stats`, the console overview) come from hourly roll-ups kept by
triggers (migration 10 on SQLite, 4 on PostgreSQL). They must equal a plain count over the
rows, whatever wrote them and whenever `since` falls: on an hour, inside one, before the
history, after it. Both backends (tests/storage_backends.py)."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from agent_core.models import ErrorType
from storage.tables import ts
from tests.fakes import STATUS, fail, make_run
from tests.storage_backends import Backend, Observer
from tests.test_storage import executor_for

START = datetime(2026, 11, 20, 7, 0, tzinfo=UTC)
STATUSES = ("completed", "failed", "paused", "cancelled", "running")
ERRORS = (("timeout", "get_order_status"), ("not_found", "cancel_order"), ("internal", None))


def _write_history(db: Observer, rng: random.Random, runs: int) -> list[tuple[str, str, str]]:
    """`runs` runs at random instants over 30 hours, with failure events; returns them."""
    written = []
    for n in range(runs):
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
