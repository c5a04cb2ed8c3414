"""Opening the SQLite file and bringing its schema up to date.

One file holds the runs (what the agent did) and the demo shop (a tool backend). Each
connection gets the same pragmas; migrations are numbered and tracked in `user_version`,
applied inside one transaction so a crash mid-migration leaves the old schema intact.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import aiosqlite

DEFAULT_BUSY_TIMEOUT_S = 5.0


class StorageUnavailable(Exception):
    """The database cannot be used right now (locked, read-only, disk full).

    Callers tell the customer to try again later; nothing was half-written, because every
    write is one transaction.
    """


MIGRATIONS: list[str] = [
    # 1: runs, steps, the append-only event log, and the demo shop.
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        trace_id TEXT NOT NULL,
        user_id INTEGER NOT NULL,
        chat_id INTEGER NOT NULL,
        request_text TEXT NOT NULL,
        language TEXT NOT NULL,
        status TEXT NOT NULL,
        refusal TEXT,
        pause_step_id TEXT,
        pause_nonce TEXT,
        pause_tool TEXT,
        pause_args_hash TEXT,
        paused_at TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL,
        stop_reason TEXT,
        answer TEXT,
        notice TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE INDEX runs_by_created ON runs(created_at DESC, id DESC);
    CREATE INDEX runs_by_user ON runs(user_id, created_at DESC);
    CREATE INDEX runs_by_chat ON runs(chat_id, created_at DESC);
    CREATE INDEX runs_by_status ON runs(status, created_at DESC);
    CREATE INDEX runs_by_trace ON runs(trace_id);

    CREATE TABLE steps (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        id TEXT NOT NULL,
        goal TEXT NOT NULL,
        tool TEXT NOT NULL,
        args TEXT NOT NULL,
        tag TEXT,
        status TEXT NOT NULL,
        observation TEXT,
        error_type TEXT,
        error_message TEXT,
        skip_reason TEXT,
        fallback_reason TEXT,
        pause_reason TEXT,
        retry_count INTEGER NOT NULL DEFAULT 0,
        max_retries INTEGER NOT NULL,
        approval_approved INTEGER,
        approval_by INTEGER,
        approval_at TEXT,
        started_at TEXT,
        finished_at TEXT,
        PRIMARY KEY (run_id, id)
    );

    CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        trace_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        step_id TEXT,
        tool TEXT,
        args TEXT,
        attempt INTEGER,
        status TEXT,
        error_type TEXT,
        decision TEXT,
        delay_s REAL,
        observation TEXT,
        message TEXT,
        at TEXT NOT NULL
    );
    CREATE INDEX events_by_run ON events(run_id, seq);
    CREATE INDEX events_failures ON events(at, error_type, tool) WHERE error_type IS NOT NULL;

    CREATE TABLE shop_orders (
        id TEXT PRIMARY KEY,
        owner_user_id INTEGER NOT NULL,
        status TEXT NOT NULL,
        eta TEXT,
        items TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE shop_policies (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        keywords TEXT NOT NULL,
        title TEXT NOT NULL,
        text TEXT NOT NULL,
        lang TEXT NOT NULL
    );
    -- One row per idempotency key: the same key never cancels twice.
    CREATE TABLE shop_cancellations (
        idempotency_key TEXT PRIMARY KEY,
        order_id TEXT NOT NULL,
        user_id INTEGER NOT NULL,
        result TEXT NOT NULL,
        at TEXT NOT NULL
    );
    CREATE TABLE shop_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 2: less work per transition, and a plan for the staff's customer filter.
    #
    # `events` is rebuilt without AUTOINCREMENT: that keyword costs a write to
    # `sqlite_sequence` (one more b-tree page) in every transaction. `seq` keeps its meaning:
    # an INTEGER PRIMARY KEY without AUTOINCREMENT is assigned max(seq) + 1, so it grows
    # monotonically as long as rows are never deleted from the end of the table. Events are
    # append-only; only deleting a run (which cascades to its events) could free the
    # highest seq for reuse, and nothing in stepwise deletes runs.
    #
    # `runs_by_user_status` answers `list_runs(status=..., user_id=...)` (the staff's
    # "failed runs of this customer") from one index range instead of scanning every run
    # of that status through `runs_by_status` (SQLite has no statistics to prefer
    # `runs_by_user`).
    """
    CREATE TABLE events_v2 (
        seq INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        trace_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        step_id TEXT,
        tool TEXT,
        args TEXT,
        attempt INTEGER,
        status TEXT,
        error_type TEXT,
        decision TEXT,
        delay_s REAL,
        observation TEXT,
        message TEXT,
        at TEXT NOT NULL
    );
    INSERT INTO events_v2 (seq, run_id, trace_id, kind, step_id, tool, args, attempt, status,
        error_type, decision, delay_s, observation, message, at)
    SELECT seq, run_id, trace_id, kind, step_id, tool, args, attempt, status,
        error_type, decision, delay_s, observation, message, at FROM events ORDER BY seq;
    DROP TABLE events;
    ALTER TABLE events_v2 RENAME TO events;
    CREATE INDEX events_by_run ON events(run_id, seq);
    CREATE INDEX events_failures ON events(at, error_type, tool) WHERE error_type IS NOT NULL;
    CREATE INDEX runs_by_user_status ON runs(user_id, status, created_at DESC, id DESC);
    """,
    # 3: what the bot needs after a restart is an event kind, not prose. Databases written
    # before kept it as notices with these exact texts; without this, every paused run still
    # in its approval window would have its prompt re-offered once more after an upgrade.
    """
    UPDATE events SET kind = 'prompt_shown'
        WHERE kind = 'notice' AND message = 'telegram: confirmation buttons shown';
    UPDATE events SET kind = 'customer_blocked'
        WHERE kind = 'notice' AND message = 'telegram: the customer blocked the bot';
    """,
    # 4: a failed step keeps the reason its tool gave (`error_code`: "window_closed",
    # "argument:amount"), so the answer can explain a refusal in the customer's words.
    """
    ALTER TABLE steps ADD COLUMN error_code TEXT;
    """,
    # 5: a run the customer declined is `declined`, not `cancelled` (which staff read as "the
    # order was cancelled"). Rewrites the runs that ended so before, and their run_finished
    # events, so filters and timelines agree: a `cancelled` run is one whose paused step the
    # customer declined (approval_approved = 0). Nothing else ever ended a run `cancelled`.
    """
    UPDATE runs SET status = 'declined'
        WHERE status = 'cancelled' AND EXISTS (
            SELECT 1 FROM steps s WHERE s.run_id = runs.id AND s.approval_approved = 0
        );
    UPDATE events SET status = 'declined'
        WHERE kind = 'run_finished' AND status = 'cancelled'
        AND run_id IN (SELECT id FROM runs WHERE status = 'declined');
    """,
    # 6: the demo shop grows returns, refunds, address changes and parcel tracking. Every
    # change, cancellations included, is keyed by its idempotency key in ONE ledger
    # (`shop_ledger`, with the tool's name); `shop_cancellations` stays readable as a view
    # of the cancellations in it. Orders get what those tools need (all optional, so a seed
    # written before keeps working): amount paid, delivery time, address, tracking (JSON).
    """
    CREATE TABLE shop_ledger (
        idempotency_key TEXT PRIMARY KEY,
        tool TEXT NOT NULL,
        order_id TEXT NOT NULL,
        user_id INTEGER NOT NULL,
        result TEXT NOT NULL,
        at TEXT NOT NULL
    );
    INSERT INTO shop_ledger (idempotency_key, tool, order_id, user_id, result, at)
        SELECT idempotency_key, 'cancel_order', order_id, user_id, result, at
        FROM shop_cancellations;
    DROP TABLE shop_cancellations;
    CREATE VIEW shop_cancellations AS
        SELECT idempotency_key, order_id, user_id, result, at FROM shop_ledger
        WHERE tool = 'cancel_order';
    ALTER TABLE shop_orders ADD COLUMN amount_paid TEXT;
    ALTER TABLE shop_orders ADD COLUMN delivered_at TEXT;
    ALTER TABLE shop_orders ADD COLUMN address TEXT;
    ALTER TABLE shop_orders ADD COLUMN tracking TEXT;
    CREATE TABLE shop_returns (
        id TEXT PRIMARY KEY,
        order_id TEXT NOT NULL,
        reason TEXT,
        at TEXT NOT NULL
    );
    CREATE INDEX shop_returns_by_order ON shop_returns(order_id);
    CREATE TABLE shop_refunds (
        id TEXT PRIMARY KEY,
        order_id TEXT NOT NULL,
        amount_cents INTEGER NOT NULL,
        reason TEXT,
        at TEXT NOT NULL
    );
    CREATE INDEX shop_refunds_by_order ON shop_refunds(order_id);
    """,
    # 7 (issue 13): what the planner understood, stored with the run; a flag for runs with
    # parts no tool serves (staff filter them; never a clean success), and the nonce of a
    # clarifying question's option buttons (one press continues the conversation).
    """
    ALTER TABLE runs ADD COLUMN interpretation TEXT;
    ALTER TABLE runs ADD COLUMN unsupported INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN clarify_nonce TEXT;
    CREATE INDEX runs_unsupported ON runs(created_at DESC, id DESC) WHERE unsupported = 1;
    """,
    # 8: the message a pause's buttons were delivered on (chat id, message id), written
    # when the prompt is shown: a press counts only on that message (issue 11 #8). Older
    # paused runs have none; their prompt is re-offered and bound on the next start.
    """
    ALTER TABLE runs ADD COLUMN prompt_chat_id INTEGER;
    ALTER TABLE runs ADD COLUMN prompt_message_id INTEGER;
    """,
    # 9: signed-out console sessions (their nonces), until their cookies expire: a
    # sign-out survives a restart (issue 11 #12). Read by primary key on every request.
    """
    CREATE TABLE revoked_sessions (
        nonce TEXT PRIMARY KEY,
        expires_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    """,
    # 10: the Bot API budgets shared by the processes of one bot (bot.shared_ratelimit).
    # Used on PostgreSQL only (one process per SQLite file keeps them in memory); created
    # here too so both backends keep one schema.
    """
    CREATE TABLE rate_limits (
        key TEXT PRIMARY KEY,
        state TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
]


async def connect(
    path: str | Path,
    *,
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    synchronous: str = "FULL",
) -> aiosqlite.Connection:
    """Open `path` with the project's pragmas and an up-to-date schema.

    `synchronous=FULL` (the default) makes every commit survive a power cut, not just a
    process crash; NORMAL is allowed for benchmarks and for people who accept that trade.

    `isolation_level=None` puts transactions in our hands: every write path says
    `BEGIN IMMEDIATE` ... `COMMIT` itself, so a transaction is exactly one transition.
    """
    try:
        conn = await aiosqlite.connect(str(path), timeout=busy_timeout_s, isolation_level=None)
    except sqlite3.Error as exc:
        raise StorageUnavailable(f"cannot open database {path}: {exc}") from exc
    try:
        conn.row_factory = aiosqlite.Row
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        await _enable_wal(conn, busy_timeout_s)
        if synchronous.upper() not in {"FULL", "NORMAL", "EXTRA"}:
            raise ValueError(f"unsupported synchronous mode {synchronous!r}")
        await conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        await conn.execute("PRAGMA foreign_keys = ON")
        await migrate(conn)
    except sqlite3.Error as exc:
        await conn.close()
        raise StorageUnavailable(f"cannot prepare database {path}: {exc}") from exc
    except BaseException:
        await conn.close()
        raise
    return conn


# Each statement with its parameters: a sequence for `?`, a mapping for `:name`.
Statements = Sequence[tuple[str, Any]]
# Work done inside a transaction, on aiosqlite's thread, with the raw sqlite3 connection.
Operation = Callable[[sqlite3.Connection], Any]


async def fetch(conn: aiosqlite.Connection, sql: str, params: Any = ()) -> list[sqlite3.Row]:
    """Rows of one read (named or positional `params`); a failure is `StorageUnavailable`."""
    try:
        return list(await conn.execute_fetchall(sql, params))
    except sqlite3.Error as exc:
        raise StorageUnavailable(f"read failed: {exc}") from exc


def execute_statements(statements: Statements, conn: sqlite3.Connection) -> None:
    for sql, params in statements:
        conn.execute(sql, params)


def _apply(conn: sqlite3.Connection, operations: Sequence[Operation]) -> list[Any]:
    """Run many small operations as ONE transaction, inside aiosqlite's worker thread."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        results = [operation(conn) for operation in operations]
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return results


async def run_transaction(conn: aiosqlite.Connection, operations: Sequence[Operation]) -> list[Any]:
    """Run `operations` atomically with one hop to the database thread; their results.

    aiosqlite offers no public way to run a function on its thread; going through
    `execute` would cost a thread round trip per statement, which dominates small WAL
    commits. `_execute` is aiosqlite's own dispatcher (stable since 0.17; pinned < 0.23).
    """
    raw: Callable[[], sqlite3.Connection] = lambda: conn._conn  # noqa: E731
    results: list[Any] = await conn._execute(lambda: _apply(raw(), operations))  # type: ignore[no-untyped-call]
    return results


async def _enable_wal(conn: aiosqlite.Connection, busy_timeout_s: float) -> None:
    """Switch a fresh file to WAL. SQLite does not apply busy_timeout to this pragma, so
    several processes opening a new file at once must wait for each other here."""
    deadline = asyncio.get_running_loop().time() + busy_timeout_s
    delay = 0.005
    while True:
        try:
            async with conn.execute("PRAGMA journal_mode = WAL") as cur:
                row = await cur.fetchone()
            if row and str(row[0]).lower() == "wal":
                return
            raise sqlite3.OperationalError(f"journal_mode stayed {row[0] if row else None}")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or asyncio.get_running_loop().time() > deadline:
                raise
        await asyncio.sleep(delay)  # back off: another connection holds the file right now
        delay = min(delay * 2, 0.1)


async def migrate(conn: aiosqlite.Connection) -> int:
    """Apply the migrations this file has not seen yet; returns the schema version."""
    await conn.execute("BEGIN IMMEDIATE")
    try:
        async with conn.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        version = int(row[0]) if row else 0
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            for statement in _statements(script):
                await conn.execute(statement)
            await conn.execute(f"PRAGMA user_version = {number}")
        await conn.execute("COMMIT")
    except BaseException:
        await conn.execute("ROLLBACK")
        raise
    return len(MIGRATIONS)


def _statements(script: str) -> list[str]:
    # executescript() would COMMIT our open transaction; split instead (no ';' inside strings).
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
