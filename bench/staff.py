"""Section 6: staff queries over a large history.

The history is written with direct SQL into the real schema (storage.db's migrations):
runs spread over 30 days with mixed statuses, 3 steps each and about 7 events per run,
shaped like what the executor writes (a skipped step, retries and failures with error
types, pauses, decisions). Then the store's own queries are timed: the newest page
(`/runs`), a filtered page (`status=failed, user_id=X`), and one run's timeline (`/run`).
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from agent_core.models import RunStatus
from bench.measure import LatencySummary, db_bytes, query, remove_db
from bench.report import Report
from storage.db import connect
from storage.runs.sqlite import SqliteRunStore
from storage.tables import ts

SECTION = "staff"
GOAL_MS = 10.0  # issue 15: every staff query, p95, at 1M stored runs, both backends
CUSTOMERS = 5_000
DAYS = 30

# (status, weight, builder name)
STATUS_MIX: tuple[tuple[str, float], ...] = (
    ("completed", 0.66),
    ("failed", 0.12),
    ("paused", 0.08),
    ("cancelled", 0.08),
    ("expired", 0.05),
    ("running", 0.01),
)

RUN_SQL = (
    "INSERT INTO runs (id, trace_id, user_id, chat_id, request_text, language, status,"
    " pause_step_id, pause_nonce, pause_tool, pause_args_hash, paused_at, attempts,"
    " max_attempts, stop_reason, answer, created_at, updated_at, finished_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
STEP_SQL = (
    "INSERT INTO steps (run_id, position, id, goal, tool, args, tag, status, observation,"
    " error_type, error_message, skip_reason, retry_count, max_retries, approval_approved,"
    " approval_by, approval_at, started_at, finished_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
EVENT_SQL = (
    "INSERT INTO events (run_id, trace_id, kind, step_id, tool, args, attempt, status,"
    " error_type, decision, delay_s, observation, message, at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class HistoryWriter:
    """Builds the rows of one run at a time, the way the executor would have written them."""

    def __init__(self, rng: random.Random, now: datetime) -> None:
        self.rng = rng
        self.now = now
        self.runs: list[tuple[Any, ...]] = []
        self.steps: list[tuple[Any, ...]] = []
        self.events: list[tuple[Any, ...]] = []

    def add_run(self, created: datetime, status: str) -> None:
        rng = self.rng
        run_id = f"{rng.getrandbits(48):012x}"
        trace = f"{rng.getrandbits(64):016x}"
        user = 100_000 + rng.randrange(CUSTOMERS)
        order = f"A{rng.randrange(1000, 99999)}"
        clock = [created]

        def tick() -> str:
            clock[0] += timedelta(milliseconds=rng.randint(5, 400))
            return ts(clock[0]) or ""

        def event(kind: str, step: str | None = None, tool: str | None = None, **kw: Any) -> None:
            self.events.append(
                (
                    run_id,
                    trace,
                    kind,
                    step,
                    tool,
                    kw.get("args"),
                    kw.get("attempt"),
                    kw.get("status"),
                    kw.get("error_type"),
                    kw.get("decision"),
                    kw.get("delay_s"),
                    kw.get("observation"),
                    kw.get("message"),
                    tick(),
                )
            )

        plan = [
            ("s1", f"Check the status of order {order}", "get_order_status", {"order_id": order}),
            (
                "s2",
                "Look up the delay compensation policy",
                "search_policy",
                {"query": "delay compensation", "lang": "en"},
            ),
            ("s3", f"Cancel order {order}", "cancel_order", {"order_id": order}),
        ]
        tags = ["order_status", "delay_compensation", "cancel"]
        observation = {
            "s1": json.dumps({"order_id": order, "status": "shipping", "eta": "2026-12-03"}),
            "s2": json.dumps([{"title": "Delay compensation", "text": "3 days late: coupon."}]),
            "s3": json.dumps({"order_id": order, "status": "cancelled"}),
        }
        step_state: dict[str, dict[str, Any]] = {sid: {"status": "pending"} for sid, *_ in plan}
        event("run_planned", status="running")

        def ok(sid: str, tool: str, args: dict[str, Any]) -> None:
            step_state[sid]["started_at"] = tick()
            event("step_started", sid, tool, args=json.dumps(args), attempt=1, status="running")
            event(
                "step_succeeded", sid, tool, attempt=1, status="done", observation=observation[sid]
            )
            step_state[sid].update(status="done", observation=observation[sid], finished_at=tick())

        def pause() -> None:
            event("step_paused", "s3", "cancel_order", status="paused", decision="pause")
            step_state["s3"].update(status="paused", pause_reason="high_risk")

        stop_reason = None
        finished: str | None = None
        pause_cols: tuple[Any, ...] = (None, None, None, None, None)
        if status == "completed":
            ok("s1", "get_order_status", plan[0][3])
            if rng.random() < 0.5:  # delivered: compensation and cancel skipped
                event("step_skipped", "s2", "search_policy", status="skipped", message="delivered")
                step_state["s2"].update(status="skipped", skip_reason="delivered")
                event("step_skipped", "s3", "cancel_order", status="skipped", message="delivered")
                step_state["s3"].update(status="skipped", skip_reason="delivered")
            else:
                ok("s2", "search_policy", plan[1][3])
                event(
                    "decision_claimed", "s3", "cancel_order", status="paused", decision="approved"
                )
                event("step_approved", "s3", "cancel_order", status="pending")
                ok("s3", "cancel_order", plan[2][3])
                step_state["s3"].update(approval=(1, user, tick()))
        elif status == "failed":
            step_state["s1"]["started_at"] = tick()
            event("step_started", "s1", "get_order_status", attempt=1, status="running")
            event(
                "step_retrying",
                "s1",
                "get_order_status",
                attempt=1,
                status="pending",
                error_type="timeout",
                decision="retry",
                delay_s=0.5,
                message="get_order_status took longer than 5.0s",
            )
            event("step_started", "s1", "get_order_status", attempt=2, status="running")
            kind = rng.choice(["timeout", "not_found", "permission_denied", "unavailable"])
            event(
                "step_failed",
                "s1",
                "get_order_status",
                attempt=2,
                status="failed",
                error_type=kind,
                decision="stop",
                message=f"scripted {kind}",
            )
            step_state["s1"].update(
                status="failed", error=(kind, f"scripted {kind}"), retry=1, finished_at=tick()
            )
            step_state["s2"]["status"] = step_state["s3"]["status"] = "pending"
            stop_reason = kind
        elif status in ("paused", "cancelled", "expired"):
            ok("s1", "get_order_status", plan[0][3])
            ok("s2", "search_policy", plan[1][3])
            pause()
            paused_at = clock[0]
            if status == "paused":
                pause_cols = (
                    "s3",
                    f"{rng.getrandbits(48):012x}",
                    "cancel_order",
                    "h",
                    ts(paused_at),
                )
            elif status == "cancelled":
                event(
                    "decision_claimed", "s3", "cancel_order", status="paused", decision="declined"
                )
                event("step_declined", "s3", "cancel_order", status="cancelled")
                step_state["s3"].update(status="cancelled", approval=(0, user, tick()))
            else:
                step_state["s3"]["status"] = "cancelled"
        else:  # running: interrupted mid-step, waiting for recovery
            step_state["s1"]["started_at"] = tick()
            event("step_started", "s1", "get_order_status", attempt=1, status="running")
            step_state["s1"]["status"] = "running"
        if status in ("completed", "failed", "cancelled", "expired"):
            event("run_finished", status=status)
            finished = ts(clock[0])

        updated = ts(clock[0])
        attempts = sum(1 for e in self.events[-12:] if e[0] == run_id and e[2] == "step_started")
        self.runs.append(
            (
                run_id,
                trace,
                user,
                user,
                f"cancel order {order}, and is there delay compensation?",
                "en",
                status,
                *pause_cols,
                attempts,
                10,
                stop_reason,
                f"Order {order} is on its way, expected 2026-12-03.",
                ts(created),
                updated,
                finished,
            )
        )
        for position, (sid, goal, tool, args) in enumerate(plan):
            st = step_state[sid]
            error = st.get("error")
            approval = st.get("approval")
            self.steps.append(
                (
                    run_id,
                    position,
                    sid,
                    goal,
                    tool,
                    json.dumps(args),
                    tags[position],
                    st["status"],
                    st.get("observation"),
                    error[0] if error else None,
                    error[1] if error else None,
                    st.get("skip_reason"),
                    st.get("retry", 0),
                    2,
                    approval[0] if approval else None,
                    approval[1] if approval else None,
                    approval[2] if approval else None,
                    st.get("started_at"),
                    st.get("finished_at"),
                )
            )

    def flush(self, conn: sqlite3.Connection) -> None:
        conn.executemany(RUN_SQL, self.runs)
        conn.executemany(STEP_SQL, self.steps)
        conn.executemany(EVENT_SQL, self.events)
        self.runs, self.steps, self.events = [], [], []


def _history(runs: int, seed: int, flush: Callable[[HistoryWriter], None]) -> None:
    """Build `runs` runs (seeded, so both backends store the same history), flushing rows
    every 5,000 runs."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    start = now - timedelta(days=DAYS)
    span = (now - start).total_seconds()
    offsets = sorted(rng.random() * span for _ in range(runs))
    statuses = [s for s, _ in STATUS_MIX]
    weights = [w for _, w in STATUS_MIX]
    writer = HistoryWriter(rng, now)
    for n, offset in enumerate(offsets, start=1):
        status = rng.choices(statuses, weights)[0]
        writer.add_run(start + timedelta(seconds=offset), status)
        if n % 5000 == 0:
            flush(writer)
    flush(writer)


async def generate(path: Path, runs: int, seed: int = 7) -> tuple[int, int]:
    """Write `runs` runs into a fresh SQLite file at `path`; returns (steps, events)."""
    remove_db(path)
    conn = await connect(path)  # the real migrations
    await conn.close()
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA synchronous = OFF")  # bulk load only; the store reopens with FULL
        db.execute("BEGIN")
        _history(runs, seed, lambda writer: writer.flush(db))
        db.execute("COMMIT")
        steps = int(db.execute("SELECT count(*) FROM steps").fetchone()[0])
        events = int(db.execute("SELECT count(*) FROM events").fetchone()[0])
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return steps, events


def _copy_columns(sql: str) -> tuple[str, str]:
    """(table, column list) of one of the INSERT statements above, for COPY."""
    table = sql.split()[2]
    return table, sql[sql.index("(") + 1 : sql.index(")")]


async def generate_pg(url: str, runs: int, seed: int = 7) -> tuple[int, int]:
    """The same history in a fresh PostgreSQL schema (`url` names it), with COPY; the
    roll-up triggers fire for every copied row as they would for the journal's."""
    from storage.pg import connect as pg_connect
    from storage.pg import migrate as pg_migrate

    conn = await pg_connect(url, timeout_s=10)
    try:
        await pg_migrate(conn)
    finally:
        await conn.close()
    with psycopg.connect(url) as db:

        def flush(writer: HistoryWriter) -> None:
            for sql, rows in (
                (RUN_SQL, writer.runs),
                (STEP_SQL, writer.steps),
                (EVENT_SQL, writer.events),
            ):
                table, names = _copy_columns(sql)
                with db.cursor().copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            writer.runs, writer.steps, writer.events = [], [], []

        _history(runs, seed, flush)
        db.commit()
        # A bulk load leaves every roll-up row updated thousands of times in one go (dead
        # versions until vacuumed); autovacuum would get there, the bench must not wait.
        db.autocommit = True
        db.execute("VACUUM ANALYZE")
        steps = int(db.execute("SELECT count(*) FROM steps").fetchone()[0])  # type: ignore[index]
        events = int(db.execute("SELECT count(*) FROM events").fetchone()[0])  # type: ignore[index]
    return steps, events


async def _time(samples: int, call: Callable[[int], Awaitable[object]]) -> list[float]:
    for n in range(min(5, samples)):  # warm the connection and statement cache
        await call(n)
    out = []
    for n in range(samples):
        started = time.perf_counter()
        await call(n)
        out.append(time.perf_counter() - started)
    return out


async def run_staff(
    report: Report, workdir: Path, sizes: Sequence[int], samples: int, pg_url: str | None
) -> None:
    """The curve: every size on SQLite, and on PostgreSQL when `pg_url` answers."""
    for runs in sizes:
        await _one_size(report, "sqlite", runs, samples, workdir=workdir)
        if pg_url is not None:
            await _one_size(report, "postgresql", runs, samples, pg_url=pg_url)


async def _one_size(
    report: Report,
    backend: str,
    runs: int,
    samples: int,
    *,
    workdir: Path | None = None,
    pg_url: str | None = None,
) -> None:
    labels = {"runs": f"{runs:,}", "backend": backend}
    started = time.perf_counter()
    store: Any
    if pg_url is not None:
        from bench.pg_throughput import drop_schema, fresh_schema, in_schema
        from storage.runs.postgres import PgRunStore

        schema = fresh_schema(pg_url, "staff")
        url = in_schema(pg_url, schema)
        steps, events = await generate_pg(url, runs)
        size = _pg_size(url)
        store = await PgRunStore.open(url)

        def read(sql: str) -> list[Any]:
            with psycopg.connect(url) as db:
                return db.execute(sql).fetchall()

        def cleanup() -> None:
            drop_schema(pg_url, schema)
    else:
        assert workdir is not None
        path = workdir / f"staff-{runs}.db"
        steps, events = await generate(path, runs)
        size = db_bytes(path)
        store = await SqliteRunStore.open(path)

        def read(sql: str) -> list[Any]:
            return query(path, sql)

        def cleanup() -> None:
            remove_db(path)

    generated_s = time.perf_counter() - started
    report.add(SECTION, "generate", generated_s, "s", labels, steps=steps, events=events)
    report.add(SECTION, "events/run", events / runs, "", labels)
    report.add(SECTION, "db size", size / 1024 / 1024, "MiB", labels)
    try:
        rng = random.Random(11)
        ids = [str(r[0]) for r in read("SELECT id FROM runs")]
        failing = [
            int(r[0]) for r in read("SELECT DISTINCT user_id FROM runs WHERE status = 'failed'")
        ]
        picks = [rng.choice(ids) for _ in range(samples + 5)]
        users = [rng.choice(failing) for _ in range(samples + 5)]
        week_ago = datetime.now(UTC) - timedelta(days=7)

        async def newest(n: int) -> object:
            page = await store.history.list_runs(limit=20)
            assert len(page.items) == 20
            return page

        async def filtered(n: int) -> object:
            page = await store.history.list_runs(
                status=RunStatus.FAILED, user_id=users[n], limit=20
            )
            assert page.items and all(i.status is RunStatus.FAILED for i in page.items)
            return page

        async def timeline(n: int) -> object:
            entries = await store.history.timeline(picks[n])
            assert entries
            return entries

        async def failed_page(n: int) -> object:
            return await store.history.list_runs(
                status=RunStatus.FAILED, limit=8, offset=8 * (n % 5)
            )

        async def stats(n: int) -> object:
            return (
                await store.history.status_counts(week_ago),
                await store.history.failure_counts(week_ago),
            )

        queries: list[tuple[str, Callable[[int], Awaitable[object]]]] = [
            ("list_runs(limit=20)", newest),
            ("list_runs(status=failed, user_id=X)", filtered),
            ("timeline(run_id)", timeline),
            ("list_runs(status=failed) pages", failed_page),
            ("/stats 7 days (status+failure counts)", stats),
        ]
        for name, call in queries:
            lat = LatencySummary.of(await _time(samples, call))
            q = {**labels, "query": name}
            report.add(SECTION, "p50", lat.p50_ms, "ms", q)
            report.add(SECTION, "p95", lat.p95_ms, "ms", q)
            report.add(SECTION, "max", lat.max_ms, "ms", q)
            report.goal(
                f"staff query {name}, {runs:,} runs, {backend}",
                f"p95 <= {GOAL_MS:.0f} ms",
                f"{lat.p95_ms:.2f} ms",
                lat.p95_ms <= GOAL_MS,
            )
    finally:
        await store.close()
        cleanup()


def _pg_size(url: str) -> int:
    """Bytes of this schema's tables and indexes."""
    with psycopg.connect(url) as db:
        row = db.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()
    return int(row[0]) if row else 0
