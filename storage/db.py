"""Opening the SQLite file and bringing its schema up to date.

One file holds the runs (what the agent did) and the demo shop (a tool backend). Each
connection gets the same pragmas; migrations are numbered and tracked in `user_version`,
applied inside one transaction so a crash mid-migration leaves the old schema intact.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

import aiosqlite

log = logging.getLogger(__name__)

DEFAULT_BUSY_TIMEOUT_S = 5.0


# Binding None is the dearest parameter there is: sqlite3 adapts every parameter that is not
# exactly int, float, str or bytearray, and finding no adapter costs it a formatted
# AttributeError (`PrepareProtocol.__adapt__`) per NULL — about 1.2 k instructions, 400 times
# in a standard run (most columns of a step or event row are NULL). With an adapter
# registered for NoneType the lookup finds it at once and the value bound is the same NULL.
# The adapter is `get` of an empty dict (None for any key): a C function, where a Python
# one would cost a frame per NULL. Process-wide (sqlite3's registry is), and harmless to
# any other user: None stays None.
sqlite3.register_adapter(type(None), cast("Callable[[None], None]", {}.get))


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
    # 10: hourly roll-ups for the staff's counts (`/stats`, the console's overview), kept
    # by triggers in the same transaction as the row they count, so they are exact whoever
    # writes (the journal, the claim, a bulk load, a migration). Counting a week by
    # scanning grew linearly with the history (121 ms p95 at 1M runs); with these, a count
    # since any instant is at most 169 roll-up rows plus the rows of its first, partial
    # hour (`storage.history`). The hour is the stored timestamp's first 13 characters
    # ("2026-12-01T09"): text order is time order. `tool` is '' for a failure without one
    # (a primary key column cannot be NULL usefully). The failure roll-up and its two
    # triggers on `events` are gone since migration 18 (failures are counted from the
    # partial index `events_failures`); the runs roll-up stays. (Migrations are applied
    # in order and never edited: a database at version 10+ ran this text.)
    """
    CREATE TABLE run_counts_hourly (
        hour TEXT NOT NULL,
        status TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (hour, status)
    ) WITHOUT ROWID;
    CREATE TABLE failure_counts_hourly (
        hour TEXT NOT NULL,
        error_type TEXT NOT NULL,
        tool TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (hour, error_type, tool)
    ) WITHOUT ROWID;
    INSERT INTO run_counts_hourly (hour, status, n)
        SELECT substr(created_at, 1, 13), status, count(*) FROM runs GROUP BY 1, 2;
    INSERT INTO failure_counts_hourly (hour, error_type, tool, n)
        SELECT substr(at, 1, 13), error_type, coalesce(tool, ''), count(*) FROM events
        WHERE error_type IS NOT NULL GROUP BY 1, 2, 3;
    CREATE TRIGGER runs_count_insert AFTER INSERT ON runs BEGIN
        INSERT INTO run_counts_hourly (hour, status, n)
            VALUES (substr(NEW.created_at, 1, 13), NEW.status, 1)
            ON CONFLICT (hour, status) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER runs_count_update AFTER UPDATE OF status, created_at ON runs
    WHEN OLD.status IS NOT NEW.status OR OLD.created_at IS NOT NEW.created_at BEGIN
        UPDATE run_counts_hourly SET n = n - 1
            WHERE hour = substr(OLD.created_at, 1, 13) AND status = OLD.status;
        INSERT INTO run_counts_hourly (hour, status, n)
            VALUES (substr(NEW.created_at, 1, 13), NEW.status, 1)
            ON CONFLICT (hour, status) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER runs_count_delete AFTER DELETE ON runs BEGIN
        UPDATE run_counts_hourly SET n = n - 1
            WHERE hour = substr(OLD.created_at, 1, 13) AND status = OLD.status;
    END;
    CREATE TRIGGER events_count_failure AFTER INSERT ON events
    WHEN NEW.error_type IS NOT NULL BEGIN
        INSERT INTO failure_counts_hourly (hour, error_type, tool, n)
            VALUES (substr(NEW.at, 1, 13), NEW.error_type, coalesce(NEW.tool, ''), 1)
            ON CONFLICT (hour, error_type, tool) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER events_uncount_failure AFTER DELETE ON events
    WHEN OLD.error_type IS NOT NULL BEGIN
        UPDATE failure_counts_hourly SET n = n - 1
            WHERE hour = substr(OLD.at, 1, 13) AND error_type = OLD.error_type
            AND tool = coalesce(OLD.tool, '');
    END;
    """,
    # 11 (issue 15): the durable inbox (`storage.inbox.sqlite`): every Telegram update as received,
    # stored before it is acknowledged, claimed by the process handling it (owner, lease
    # expiry, Unix seconds) until it is processed; and named leases (`poller`: the one
    # process that long-polls Telegram).
    """
    CREATE TABLE inbox (
        update_id INTEGER PRIMARY KEY,
        body TEXT NOT NULL,
        received_at REAL NOT NULL,
        owner TEXT,
        lease_until REAL,
        processed_at REAL
    );
    CREATE INDEX inbox_pending ON inbox(update_id) WHERE processed_at IS NULL;
    CREATE INDEX inbox_processed ON inbox(processed_at) WHERE processed_at IS NOT NULL;
    CREATE TABLE leases (
        name TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires_at REAL NOT NULL
    ) WITHOUT ROWID;
    """,
    # 12 (issue 14): handoffs to a person: one row per handoff (at most one open per customer
    # chat: the partial unique index), the customer's forum topic in the staff group, and
    # every relayed message, recorded before its copy and marked after (storage.handoffs).
    """
    CREATE TABLE handoffs (
        id TEXT PRIMARY KEY,
        customer_chat_id INTEGER NOT NULL,
        customer_user_id INTEGER NOT NULL,
        customer_name TEXT NOT NULL,
        language TEXT NOT NULL,
        trigger TEXT NOT NULL,
        run_id TEXT,
        opened_at TEXT NOT NULL,
        topic_id INTEGER,
        closed_at TEXT,
        closed_by INTEGER,
        to_staff INTEGER NOT NULL DEFAULT 0,
        to_customer INTEGER NOT NULL DEFAULT 0,
        first_staff_reply_at TEXT
    );
    CREATE UNIQUE INDEX handoffs_one_open ON handoffs(customer_chat_id) WHERE closed_at IS NULL;
    CREATE INDEX handoffs_by_opened ON handoffs(opened_at);
    CREATE INDEX handoffs_by_run ON handoffs(run_id);
    CREATE TABLE handoff_topics (
        customer_chat_id INTEGER PRIMARY KEY,
        staff_chat_id INTEGER NOT NULL,
        topic_id INTEGER NOT NULL,
        name TEXT NOT NULL
    );
    CREATE UNIQUE INDEX handoff_topics_by_topic ON handoff_topics(staff_chat_id, topic_id);
    CREATE TABLE handoff_relays (
        handoff_id TEXT NOT NULL,
        direction TEXT NOT NULL,
        from_chat_id INTEGER NOT NULL,
        message_id INTEGER NOT NULL,
        variant INTEGER NOT NULL,
        to_chat_id INTEGER NOT NULL,
        to_topic_id INTEGER,
        text TEXT,
        received_at TEXT NOT NULL,
        copied_at TEXT,
        gave_up_at TEXT,
        failure TEXT,
        PRIMARY KEY (from_chat_id, message_id, variant)
    );
    CREATE INDEX handoff_relays_pending ON handoff_relays(received_at)
        WHERE copied_at IS NULL AND gave_up_at IS NULL;
    """,
    # 13 (issue 14, staff approval): who decides a pause: NULL/'customer', or 'staff'; and the
    # first approvals of a pause that needs two distinct staff members ("four eyes").
    """
    ALTER TABLE runs ADD COLUMN pause_approver TEXT;
    CREATE TABLE staff_approvals (
        run_id TEXT NOT NULL,
        nonce TEXT NOT NULL,
        staff_id INTEGER NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (run_id, nonce, staff_id)
    );
    """,
    # 14 (issue 15 #1, #4): run leases (storage/leases.py). The process driving a run, or owing
    # the delivery of what it committed, and until when; the partial index holds only leased
    # runs (in flight or undelivered), so the periodic recovery reads a handful of entries
    # however many runs are stored. Heartbeats let a process see that another is live.
    """
    ALTER TABLE runs ADD COLUMN lease_owner TEXT;
    ALTER TABLE runs ADD COLUMN lease_until TEXT;
    CREATE INDEX runs_leased ON runs(lease_owner) WHERE lease_owner IS NOT NULL;
    CREATE TABLE process_heartbeats (
        owner TEXT PRIMARY KEY,
        alive_until TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
    # 15: the Bot API budgets shared by the processes of one bot (bot.shared_ratelimit).
    # Used on PostgreSQL only (one process per SQLite file keeps them in memory); created
    # here too so both backends keep one schema.
    """
    CREATE TABLE rate_limits (
        key TEXT PRIMARY KEY,
        state TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
    # 16 (issue 20 #6): the staff approvals waiting, oldest first: the expiry sweep pages
    # through every expired one (`History.expired_staff_pauses`) however many newer wait.
    """
    CREATE INDEX runs_staff_pauses ON runs(paused_at, id)
        WHERE status = 'paused' AND pause_approver = 'staff';
    """,
    # 17 (issue 23 #8): who the people writing to the bot are (customers and staff), by
    # Telegram user id, as last seen: staff read "Sam (@sam)", never a bare id. A relayed
    # media message's new caption: the customer's name before their own caption.
    """
    CREATE TABLE people (
        user_id INTEGER PRIMARY KEY,
        first_name TEXT,
        username TEXT,
        seen_at TEXT NOT NULL
    );
    ALTER TABLE handoff_relays ADD COLUMN caption TEXT;
    """,
    # 18 (issue 24 #4): the failure roll-up of migration 10 is dropped; `History.failure_counts`
    # counts failed attempts from the partial index `events_failures` (exact for any writer,
    # linear in the window's failures, which are few). Its trigger cost every event row a
    # statement journal: with any trigger on `events` and the immediate foreign key on
    # `events.run_id`, an INSERT is a statement that may abort half done, so SQLite copies
    # each page it touches aside first (~5.5 k instructions a row, ~83 k a standard run
    # that has no failure at all; bench/README.md §9). The runs roll-up stays. The failures'
    # own index by (error type, tool, time) lets the count seek pair by pair instead of
    # sorting a week's failures (55 ms at 1M runs through `events_failures`).
    """
    DROP TRIGGER events_count_failure;
    DROP TRIGGER events_uncount_failure;
    DROP TABLE failure_counts_hourly;
    CREATE INDEX events_failure_kinds ON events(error_type, coalesce(tool, ''), at)
        WHERE error_type IS NOT NULL;
    """,
    # 19: bounded chat queues. An update of a chat that already has its cap of updates in
    # hand is parked: stored, claimed by its owner (renewed with its claims), and taken
    # back, oldest first, only as the chat's earlier ones finish (`Inbox.unpark`). The
    # backlog of one customer's burst lives here, never in the process's memory.
    """
    ALTER TABLE inbox ADD COLUMN parked_chat INTEGER;
    CREATE INDEX inbox_parked ON inbox(owner, parked_chat, update_id)
        WHERE parked_chat IS NOT NULL AND processed_at IS NULL;
    """,
    # 20: which earlier steps a step needs (a JSON list of step ids; NULL for steps planned
    # before, which a failure stops with the whole run): a failure stops only those.
    """
    ALTER TABLE steps ADD COLUMN depends_on TEXT;
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

    The connection is registered with its file (`heal`): on a read-only file system SQLite
    opens it read-only without a word, and it stays so after the disk is writable again.
    """
    if synchronous.upper() not in {"FULL", "NORMAL", "EXTRA"}:
        raise ValueError(f"unsupported synchronous mode {synchronous!r}")
    try:
        conn = await aiosqlite.connect(str(path), timeout=busy_timeout_s, isolation_level=None)
    except sqlite3.Error as exc:
        raise StorageUnavailable(f"cannot open database {path}: {exc}") from exc
    try:
        conn.row_factory = aiosqlite.Row
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        await _enable_wal(conn, busy_timeout_s)
        await conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        await conn.execute("PRAGMA foreign_keys = ON")
        await migrate(conn)
    except sqlite3.Error as exc:
        await conn.close()
        raise StorageUnavailable(f"cannot prepare database {path}: {exc}") from exc
    except BaseException:
        await conn.close()
        raise
    _register(conn, _Opened(str(path), busy_timeout_s, synchronous.upper()))
    return conn


# -- healing -------------------------------------------------------------------------------
#
# SQLite opens a database read-only, silently, when its file system is read-only (a disk
# remounted after an error, a full disk's emergency remount). Worse, within one process
# every connection to a file shares that file's lock and shared-memory state: while ONE
# read-only connection is open, a new connection to the same file is read-only too. So a
# bot started during the fault would answer "busy" until restarted.
#
# Healing: every connection `connect` opens is registered with its file. A write that fails
# because the connection is read-only (or its file can no longer be opened, CANTOPEN), on
# a file system that is writable now, reopens EVERY registered connection to that file:
# each closes its raw connection on its own thread (its cursors first: a statement left on
# it would keep it open, `_finish_statements`), they all wait at a barrier until the last
# one has closed (only then is the stale shared state gone), and each opens a new one with
# the same pragmas. Work queued on a connection waits behind its swap; the write that
# failed is tried once more. While the disk stays read-only, nothing is reopened and the
# write fails as before (`StorageUnavailable`: the customer hears "busy").


@dataclass(frozen=True)
class _Opened:
    path: str
    busy_timeout_s: float
    synchronous: str


@dataclass
class _File:
    connections: weakref.WeakKeyDictionary[aiosqlite.Connection, _Opened] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    generation: int = 0  # bumped by every heal: a failure seen before one is retried at once
    lock: asyncio.Lock | None = None
    healed_at: float | None = None  # monotonic: at most one reopening per `_HEAL_EVERY_S`


_FILES: dict[str, _File] = {}
_FILE_OF: weakref.WeakKeyDictionary[aiosqlite.Connection, tuple[_File, _Opened]] = (
    weakref.WeakKeyDictionary()
)
_HEALING_CODES = frozenset({sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN})
_SWAP_TIMEOUT_S = 30.0
# A file that stays read-only to a writable-looking disk (a root process, a chmod) is not
# reopened on every write: once a second at most.
_HEAL_EVERY_S = 1.0


def _file_key(path: str) -> str:
    return os.path.realpath(path)


def _register(conn: aiosqlite.Connection, opened: _Opened) -> None:
    for key in [k for k, f in _FILES.items() if not f.connections]:
        del _FILES[key]  # files whose connections are all gone
    file = _FILES.setdefault(_file_key(opened.path), _File())
    file.connections[conn] = opened
    _FILE_OF[conn] = (file, opened)


def _file_of(conn: aiosqlite.Connection) -> tuple[_File, _Opened] | None:
    return _FILE_OF.get(conn)


def needs_reopening(exc: BaseException) -> bool:
    """A write refused because this connection is stale: read-only, or its file gone."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF in _HEALING_CODES


def writable(path: str) -> bool:
    """Whether the database file (or, gone, its directory) could be written now."""
    target = path if os.path.exists(path) else os.path.dirname(os.path.abspath(path))
    try:
        if os.statvfs(target).f_flag & os.ST_RDONLY:
            return False
    except OSError:
        return False
    return os.access(target, os.W_OK)


async def heal(conn: aiosqlite.Connection, seen_generation: int | None = None) -> bool:
    """Reopen every connection to `conn`'s file if the disk is writable again.

    True when the caller should try its write again: healed now, or by someone else since
    `seen_generation` (the file's generation when the caller's write started).
    """
    found = _file_of(conn)
    if found is None:
        return False
    file, opened = found
    if file.lock is None:
        file.lock = asyncio.Lock()
    async with file.lock:
        if seen_generation is not None and file.generation != seen_generation:
            return True
        now = time.monotonic()
        if file.healed_at is not None and now - file.healed_at < _HEAL_EVERY_S:
            return False
        if not await asyncio.to_thread(writable, opened.path):
            return False
        file.healed_at = now
        alive = [(c, o) for c, o in list(file.connections.items()) if _open(c)]
        if not alive:
            return False
        barrier = threading.Barrier(len(alive), timeout=_SWAP_TIMEOUT_S)
        swaps = [c._execute(partial(_swap, c, o, barrier)) for c, o in alive]  # type: ignore[no-untyped-call]
        try:
            async with asyncio.timeout(_SWAP_TIMEOUT_S * 2):
                results = await asyncio.gather(*swaps, return_exceptions=True)
        except TimeoutError as exc:
            results = [exc]
        file.generation += 1
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            log.warning("reopening %s: %s", opened.path, failed[0])
            return False
        log.warning(
            "reopened %d connection(s) to %s: it is writable again", len(alive), opened.path
        )
        return True


def _open(conn: aiosqlite.Connection) -> bool:
    """Open, with its thread serving it (a connection left unclosed by a finished event
    loop has neither: it must not hold up the others)."""
    return conn._running and conn._connection is not None and conn._thread.is_alive()


def generation(conn: aiosqlite.Connection) -> int:
    found = _file_of(conn)
    return found[0].generation if found else 0


def _swap(conn: aiosqlite.Connection, opened: _Opened, barrier: threading.Barrier) -> None:
    """On `conn`'s own thread: close its raw connection, wait for the others, open anew."""
    old = conn._conn
    row_factory = old.row_factory
    _finish_statements(old)
    old.close()
    # Another connection failed to close in time: open anyway, never leave one closed.
    with contextlib.suppress(threading.BrokenBarrierError):
        barrier.wait()
    new = sqlite3.connect(opened.path, timeout=opened.busy_timeout_s, isolation_level=None)
    new.row_factory = row_factory
    conn._connection = new
    new.execute(f"PRAGMA busy_timeout = {int(opened.busy_timeout_s * 1000)}")
    new.execute("PRAGMA journal_mode = WAL")
    new.execute(f"PRAGMA synchronous = {opened.synchronous}")
    new.execute("PRAGMA foreign_keys = ON")
    _migrate(new)


def _finish_statements(raw: sqlite3.Connection) -> None:
    """Close every cursor still open on `raw`, so that closing `raw` closes the file.

    `sqlite3.Connection.close()` is `sqlite3_close_v2`: while a statement of the connection
    is not finalized, SQLite keeps the connection open as a "zombie" (its file descriptors,
    its lock and its share of the file's shared memory) until the last one is. A statement
    lives as long as the cursor that ran it: a read stopped mid-result, or a write that
    failed while stepping (a read-only database!), whose cursor is kept by the traceback
    of the failure, often in a reference cycle only the cyclic garbage collector breaks.
    The write that asks for a heal holds such a traceback while the heal runs. One zombie
    keeps the file's shared state (opened read-only) alive for the connections opened next.

    Closing a cursor resets its statement and gives it up; `close()` then finalizes the
    statements (sqlite3 clears its statement cache). Every cursor holds its connection, so
    the cursors are found among the referrers of `raw`: a walk over the tracked objects,
    paid on a heal only, never per statement (about 8 ms in a serving bot's heap of 100 k
    objects). On `raw`'s own thread: sqlite3 checks it, and no other work of `raw` runs.
    """
    for referrer in gc.get_referrers(raw):
        if isinstance(referrer, sqlite3.Cursor):
            with contextlib.suppress(sqlite3.Error):
                referrer.close()


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
    """Execute `statements` in order through one cursor (`conn.execute` makes one per
    statement). One `executemany` per run of the same statement was measured dearer."""
    cursor = conn.cursor()
    for sql, params in statements:
        cursor.execute(sql, params)


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

    A transaction refused because the connection went stale (read-only, file gone) is run
    once more after `heal` reopened it; it was rolled back, so running it again is safe.
    """
    raw: Callable[[], sqlite3.Connection] = lambda: conn._conn  # noqa: E731
    seen = generation(conn)
    try:
        results: list[Any] = await conn._execute(lambda: _apply(raw(), operations))  # type: ignore[no-untyped-call]
    except sqlite3.Error as exc:
        if not needs_reopening(exc) or not await heal(conn, seen):
            raise
        results = await conn._execute(lambda: _apply(raw(), operations))  # type: ignore[no-untyped-call]
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
    raw: Callable[[], sqlite3.Connection] = lambda: conn._conn  # noqa: E731
    await conn._execute(lambda: _migrate(raw()))  # type: ignore[no-untyped-call]
    return len(MIGRATIONS)


def _migrate(conn: sqlite3.Connection) -> None:
    """`migrate` on the database thread, in ONE transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("PRAGMA user_version").fetchone()
        version = int(row[0]) if row else 0
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """`script` as single statements: executescript() would COMMIT our open transaction.

    Split at each `;` that ends a complete statement (`sqlite3.complete_statement`), so a
    trigger's body, whose statements end in `;` too, stays whole. No `;` inside strings.
    """
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    statements, pending = [], ""
    for piece in "\n".join(lines).split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip().removesuffix(";").strip())
            pending = ""
    return [s for s in statements if s]
