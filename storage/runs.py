"""Runs, steps and their event log in SQLite: the agent's durable memory.

`record_many` is the executor's journal: the transitions it is given (one or more events of
one run, in order) are committed in ONE transaction together with the run's current state
before it returns. Which transitions go into which commit is the executor's decision (see
"Commit points" in `agent_core.executor`). Transactions of concurrent runs are shared
(group commit). A pause's decision is claimed with one conditional UPDATE in the same
machinery, so exactly one press ever wins.

What a transition writes: `run_planned` inserts the run and its whole plan; every later
transition updates only the run's and the touched steps' state columns (never the plan:
goal, tool, args, tag and the run's identity columns are written once), and appends its
event rows. So the first event recorded for a run must be `run_planned` (the executor's
`start` guarantees it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import aiosqlite

from agent_core.models import (
    Approval,
    ClaimResult,
    EventKind,
    Language,
    Pause,
    PlanStep,
    Run,
    RunEvent,
    RunStatus,
    StepError,
    StepStatus,
    utcnow,
)
from storage.db import (
    DEFAULT_BUSY_TIMEOUT_S,
    Operation,
    Statements,
    StorageUnavailable,
    connect,
    execute_statements,
    run_transaction,
)
from storage.records import FailureCount, RunPage, RunSummary, TimelineEntry

# `2026-11-30T08:19:00.123456Z`: fixed width, so text order is time order in indexes.
_TS_LEN = 27


def ts(value: datetime | None) -> str | None:
    """Fixed-width UTC timestamps, so text order is time order in indexes."""
    return None if value is None else _ts(value)


@lru_cache(maxsize=1024)  # a run's rows repeat the same instants (started_at, updated_at…)
def _ts(value: datetime) -> str:
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    # isoformat of a UTC datetime ends in "+00:00"; the stored form ends in "Z".
    return value.isoformat(timespec="microseconds")[:26] + "Z"


def parse_ts(value: str | None) -> datetime | None:
    """The inverse of `ts`; a ValueError for anything not in exactly that form."""
    if not value:
        return None
    if len(value) != _TS_LEN or value[10] != "T" or value[26] != "Z":
        raise ValueError(f"not a stored timestamp: {value!r}")
    return datetime.fromisoformat(value)  # 3.11+ reads the "Z" as UTC


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)  # = json.dumps(…, same options)


def _json(value: Any) -> str | None:
    return None if value is None else _ENCODER.encode(value)


_RUN_COLUMNS = (
    "id, trace_id, user_id, chat_id, request_text, language, status, refusal, pause_step_id,"
    " pause_nonce, pause_tool, pause_args_hash, paused_at, attempts, max_attempts, stop_reason,"
    " answer, created_at, updated_at, finished_at"
)


def _upsert(table: str, columns: str, key: str) -> str:
    # An upsert, not INSERT OR REPLACE: REPLACE deletes first, which would cascade to children.
    names = [c.strip() for c in columns.split(",")]
    keys = {k.strip() for k in key.split(",")}
    updates = ", ".join(f"{c} = excluded.{c}" for c in names if c not in keys)
    return (
        f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(names))})"
        f" ON CONFLICT({key}) DO UPDATE SET {updates}"
    )


_UPSERT_RUN = _upsert("runs", _RUN_COLUMNS, "id")

# What a transition after `run_planned` can change; the rest of a row is written once.
_RUN_STATE_COLUMNS = (
    "pause_step_id",
    "pause_nonce",
    "pause_tool",
    "pause_args_hash",
    "paused_at",
    "attempts",
    "stop_reason",
    "answer",
    "updated_at",
    "finished_at",
)
_STEP_STATE_COLUMNS = (
    "status",
    "observation",
    "error_type",
    "error_message",
    "skip_reason",
    "fallback_reason",
    "pause_reason",
    "retry_count",
    "approval_approved",
    "approval_by",
    "approval_at",
    "started_at",
    "finished_at",
)
# What a step is (written once, with the plan) and then what it has become.
_STEP_FIXED_COLUMNS = ("run_id", "position", "id", "goal", "tool", "args", "tag", "max_retries")
_STEP_COLUMNS = ", ".join(_STEP_FIXED_COLUMNS + _STEP_STATE_COLUMNS)
_UPSERT_STEP = _upsert("steps", _STEP_COLUMNS, "run_id, id")
_UPDATE_RUN = f"UPDATE runs SET {', '.join(f'{c} = ?' for c in _RUN_STATE_COLUMNS)} WHERE id = ?"
# `status` is in two indexes; SQLite rewrites an index entry whenever an UPDATE assigns one
# of its columns, changed or not. Most transitions leave the status as it was, so it gets
# its own statement that only matches (and only touches the indexes) when it changes.
_UPDATE_RUN_STATUS = "UPDATE runs SET status = ?1 WHERE id = ?2 AND status IS NOT ?1"
_UPDATE_STEP = (
    f"UPDATE steps SET {', '.join(f'{c} = ?' for c in _STEP_STATE_COLUMNS)}"
    " WHERE run_id = ? AND id = ?"
)
_INSERT_EVENT = (
    "INSERT INTO events (run_id, trace_id, kind, step_id, tool, args, attempt, status,"
    " error_type, decision, delay_s, observation, message, at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class SqliteRunStore:
    """The `RunStore` of agent_core, plus the history queries staff use."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        # One connection, many coroutines. Every write is ONE hop to aiosqlite's thread
        # (BEGIN IMMEDIATE ... COMMIT inside it), so transactions cannot interleave; the
        # queue lets writes that arrive while a commit is in flight share the next one.
        self._queue: list[tuple[Operation, asyncio.Future[Any]]] = []
        self._flusher: asyncio.Future[None] | None = None
        self._busy = False  # a transaction is in flight: queue, don't start another

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        synchronous: str = "FULL",
    ) -> SqliteRunStore:
        return cls(await connect(path, busy_timeout_s=busy_timeout_s, synchronous=synchronous))

    async def close(self) -> None:
        if self._flusher is not None:  # let queued writes finish (or fail) first
            with contextlib.suppress(BaseException):
                await self._flusher
        await self._conn.close()

    # -- journal ---------------------------------------------------------------------------

    async def record(self, run: Run, event: RunEvent) -> None:
        """Commit one transition (see `record_many`)."""
        await self.record_many(run, (event,))

    async def record_many(self, run: Run, events: Sequence[RunEvent]) -> None:
        """Commit `events` of `run`, in order, and the run's current state in ONE transaction.

        Returns once it is durable. The rows are built before the first await: the
        executor keeps mutating `run` afterwards.
        """
        if events:
            await self._submit(partial(execute_statements, _transition(run, events)))

    async def add_event(self, run_id: str, kind: EventKind, message: str | None = None) -> None:
        """Append an event to a run's history without touching its state."""
        await self._write(
            [
                (
                    "INSERT INTO events (run_id, trace_id, kind, message, at)"
                    " SELECT id, trace_id, ?, ?, ? FROM runs WHERE id = ?",
                    (kind.value, message, ts(utcnow()), run_id),
                )
            ]
        )

    async def _write(self, statements: Statements) -> None:
        await self._submit(partial(execute_statements, statements))

    async def _submit(self, operation: Operation) -> Any:
        """Run `operation` in a transaction (group commit); its result once committed.

        With nothing in flight the caller commits its operation itself, at once. Operations
        that arrive while a commit is in flight are queued and run together in one
        transaction by a flusher task, so 50 concurrent runs share commits instead of
        queueing for one each. Every caller returns only after its own work is durable.
        """
        if self._busy:
            done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._queue.append((operation, done))
            return await done
        self._busy = True
        try:
            return await self._alone(operation)
        finally:
            if self._queue:
                self._flusher = asyncio.ensure_future(self._flush())  # it clears _busy
            else:
                self._busy = False

    async def _alone(self, operation: Operation) -> Any:
        try:
            (result,) = await run_transaction(self._conn, (operation,))
        except Exception as exc:
            raise _unavailable(exc) from exc
        return result

    async def _flush(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    results = await run_transaction(self._conn, [op for op, _ in batch])
                except Exception as exc:
                    if len(batch) > 1 and not isinstance(exc, sqlite3.OperationalError):
                        # One operation's own fault (text SQLite cannot encode, a violated
                        # constraint), not the database's: the batch was rolled back, so
                        # give every operation its own transaction and fail only that one.
                        # (An OperationalError — locked, read-only, full — would fail them
                        # all again, after waiting out the busy timeout once per operation.)
                        await self._one_by_one(batch)
                    else:
                        _fail(batch, _unavailable(exc))
                    continue
                except BaseException as exc:
                    _fail(batch, StorageUnavailable(f"write interrupted: {exc!r}"))
                    raise
                for (_, done), result in zip(batch, results, strict=True):
                    if not done.done():
                        done.set_result(result)
        finally:
            self._flusher = None
            self._busy = False

    async def _one_by_one(self, batch: Sequence[tuple[Operation, asyncio.Future[Any]]]) -> None:
        for operation, done in batch:
            try:
                result = await self._alone(operation)
            except StorageUnavailable as exc:
                if not done.done():
                    done.set_exception(exc)
            else:
                if not done.done():
                    done.set_result(result)

    # -- what the agent reads ------------------------------------------------------------

    async def load_run(self, run_id: str) -> Run | None:
        rows = await self._fetch(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        if not rows:
            return None
        steps = await self._fetch(
            f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id = ? ORDER BY position", (run_id,)
        )
        return _run_from_rows(rows[0], steps)

    async def last_order_id(self, chat_id: int, user_id: int) -> str | None:
        rows = await self._fetch(
            "SELECT json_extract(s.args, '$.order_id') AS order_id"
            " FROM runs r JOIN steps s ON s.run_id = r.id"
            " WHERE r.chat_id = ? AND r.user_id = ?"
            " AND json_extract(s.args, '$.order_id') IS NOT NULL"
            " ORDER BY r.created_at DESC, s.position LIMIT 1",
            (chat_id, user_id),
        )
        return str(rows[0]["order_id"]) if rows else None

    async def runs_to_recover(self) -> list[str]:
        rows = await self._fetch(
            "SELECT id FROM runs WHERE status = ? ORDER BY created_at", (RunStatus.RUNNING.value,)
        )
        return [str(r["id"]) for r in rows]

    async def claim_pause(
        self,
        run_id: str,
        *,
        user_id: int,
        approved: bool,
        nonce: str | None,
        now: datetime,
        expires_before: datetime,
    ) -> tuple[ClaimResult, Run | None]:
        """One conditional UPDATE decides; the claimed run is read back in the same
        transaction (None when not found or not the caller's run): one round trip."""
        claim = partial(
            _claim_in_transaction,
            run_id=run_id,
            user_id=user_id,
            approved=approved,
            nonce=nonce,
            now=ts(now),
            expires_before=ts(expires_before),
        )
        result, run_row, step_rows = await self._submit(claim)
        run = _run_from_rows(run_row, step_rows) if run_row is not None else None
        return result, run

    # -- history for staff ---------------------------------------------------------------

    async def list_runs(
        self,
        *,
        user_id: int | None = None,
        chat_id: int | None = None,
        status: RunStatus | None = None,
        trace_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        before: str | None = None,
        offset: int = 0,
        limit: int = 20,
    ) -> RunPage:
        """Newest first, keyset-paged: `before` is the `next_cursor` of the previous page.

        `offset` is for small page numbers in chat (◀ ▶); deep paging should use `before`.
        """
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        for column, value in (
            ("user_id", user_id),
            ("chat_id", chat_id),
            ("status", status.value if status else None),
            ("trace_id", trace_id),
        ):
            if value is not None:
                where.append(f"r.{column} = ?")
                params.append(value)
        if since is not None:
            where.append("r.created_at >= ?")
            params.append(ts(since))
        if until is not None:
            where.append("r.created_at < ?")
            params.append(ts(until))
        if before:
            created, _, run_id = before.partition("|")
            where.append("(r.created_at, r.id) < (?, ?)")
            params.extend([created, run_id])
        limit = max(1, min(limit, 200))
        rows = await self._fetch(
            "SELECT r.id, r.trace_id, r.user_id, r.chat_id, r.request_text, r.language, r.status,"
            " r.created_at, r.updated_at, r.finished_at,"
            " (SELECT count(*) FROM steps s WHERE s.run_id = r.id) AS step_count,"
            " (SELECT coalesce(sum(retry_count), 0) FROM steps s WHERE s.run_id = r.id) AS retries"
            f" FROM runs r WHERE {' AND '.join(where)}"
            " ORDER BY r.created_at DESC, r.id DESC LIMIT ? OFFSET ?",
            (*params, limit + 1, max(0, offset)),
        )
        items = [summary_from_row(r) for r in rows[:limit]]
        cursor = None
        if len(rows) > limit:
            last = rows[limit - 1]
            cursor = f"{last['created_at']}|{last['id']}"
        return RunPage(items=items, next_cursor=cursor)

    async def timeline(self, run_id: str) -> list[TimelineEntry]:
        rows = await self._fetch(
            "SELECT seq, kind, step_id, tool, args, attempt, status, error_type, decision,"
            " delay_s, observation, message, at FROM events WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        return [
            TimelineEntry(
                seq=r["seq"],
                kind=EventKind(r["kind"]),
                step_id=r["step_id"],
                tool=r["tool"],
                args=_loads(r["args"]),
                attempt=r["attempt"],
                status=r["status"],
                error_type=r["error_type"],
                decision=r["decision"],
                delay_s=r["delay_s"],
                observation=_loads(r["observation"]),
                message=r["message"],
                at=_required_ts(r["at"]),
            )
            for r in rows
        ]

    async def failure_counts(self, since: datetime) -> list[FailureCount]:
        """Failed attempts (retried, degraded or fatal) by error type and tool."""
        rows = await self._fetch(
            "SELECT error_type, tool, count(*) AS n FROM events"
            " WHERE error_type IS NOT NULL AND at >= ?"
            " GROUP BY error_type, tool ORDER BY n DESC, error_type, tool",
            (ts(since),),
        )
        return [FailureCount(error_type=r[0], tool=r[1], count=r[2]) for r in rows]

    async def status_counts(self, since: datetime) -> dict[str, int]:
        rows = await self._fetch(
            "SELECT status, count(*) FROM runs WHERE created_at >= ? GROUP BY status",
            (ts(since),),
        )
        return {str(r[0]): int(r[1]) for r in rows}

    async def _fetch(self, sql: str, params: Sequence[Any]) -> list[aiosqlite.Row]:
        try:
            return list(await self._conn.execute_fetchall(sql, params))
        except sqlite3.Error as exc:
            raise StorageUnavailable(f"read failed: {exc}") from exc


def summary_from_row(row: aiosqlite.Row) -> RunSummary:
    """A runs row joined with its step_count and retries (see `list_runs`)."""
    return RunSummary(
        id=row["id"],
        trace_id=row["trace_id"],
        user_id=row["user_id"],
        chat_id=row["chat_id"],
        request_text=row["request_text"],
        language=Language(row["language"]),
        status=RunStatus(row["status"]),
        step_count=row["step_count"],
        retries=row["retries"],
        created_at=_required_ts(row["created_at"]),
        updated_at=_required_ts(row["updated_at"]),
        finished_at=parse_ts(row["finished_at"]),
    )


def _unavailable(exc: Exception) -> StorageUnavailable:
    if isinstance(exc, sqlite3.Error):
        return StorageUnavailable(f"write failed: {exc}")
    return StorageUnavailable(f"write failed: {exc!r}")  # not SQLite's own (e.g. encoding)


def _fail(batch: Sequence[tuple[Operation, asyncio.Future[Any]]], error: Exception) -> None:
    for _, done in batch:
        if not done.done():
            done.set_exception(error)


def _loads(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def _required_ts(value: str) -> datetime:
    parsed = parse_ts(value)
    assert parsed is not None
    return parsed


def _transition(run: Run, events: Sequence[RunEvent]) -> list[tuple[str, tuple[Any, ...]]]:
    """The statements that commit `events` and the state of `run` they leave behind.

    `run_planned` writes the run and its whole plan. Later events update the run's state
    columns and the state of the steps they name; a run-level event (`run_finished`) also
    updates every step, since finishing can change steps that have no event of their own
    (pending steps cancelled after a decline, the paused step of an expired run).
    """
    planned = whole = False
    step_ids: list[str] = []
    for event in events:
        if event.kind is EventKind.RUN_PLANNED:
            planned = True
        if event.step_id is None:
            whole = True
        elif event.step_id not in step_ids:
            step_ids.append(event.step_id)
    statements: list[tuple[str, tuple[Any, ...]]] = []
    observations: dict[str, str | None] = {}
    if planned:
        statements.append((_UPSERT_RUN, _run_row(run)))
        for position, step in enumerate(run.steps):
            observation = observations[step.id] = _json(step.observation)
            statements.append((_UPSERT_STEP, _step_row(run.id, position, step, observation)))
    else:
        statements.append((_UPDATE_RUN, _run_state(run)))
        statements.append((_UPDATE_RUN_STATUS, (run.status.value, run.id)))
        for step in run.steps if whole else [run.step(s) for s in step_ids]:
            observation = observations[step.id] = _json(step.observation)
            statements.append((_UPDATE_STEP, _step_state(run.id, step, observation)))
    for event in events:
        statements.append((_INSERT_EVENT, _event_row(run, event, observations)))
    return statements


def _run_row(run: Run) -> tuple[Any, ...]:
    pause = run.pause
    return (
        run.id,
        run.trace_id,
        run.user_id,
        run.chat_id,
        run.request_text,
        run.language.value,
        run.status.value,
        run.refusal,
        pause.step_id if pause else None,
        pause.nonce if pause else None,
        pause.tool if pause else None,
        pause.args_hash if pause else None,
        ts(pause.paused_at) if pause else None,
        run.attempts,
        run.max_attempts,
        run.stop_reason,
        run.answer,
        ts(run.created_at),
        ts(run.updated_at),
        ts(run.finished_at),
    )


def _run_state(run: Run) -> tuple[Any, ...]:
    """`_RUN_STATE_COLUMNS`, then the id."""
    pause = run.pause
    if pause is None:
        pause_columns: tuple[Any, ...] = (None, None, None, None, None)
    else:
        pause_columns = (
            pause.step_id,
            pause.nonce,
            pause.tool,
            pause.args_hash,
            ts(pause.paused_at),
        )
    return (
        *pause_columns,
        run.attempts,
        run.stop_reason,
        run.answer,
        ts(run.updated_at),
        ts(run.finished_at),
        run.id,
    )


def _step_row(
    run_id: str, position: int, step: PlanStep, observation: str | None
) -> tuple[Any, ...]:
    """`_STEP_COLUMNS`: the whole step."""
    fixed = (run_id, position, step.id, step.goal, step.tool, _json(step.args), step.tag)
    return (*fixed, step.max_retries, *_step_state_values(step, observation))


def _step_state(run_id: str, step: PlanStep, observation: str | None) -> tuple[Any, ...]:
    """`_STEP_STATE_COLUMNS`, then the key."""
    return (*_step_state_values(step, observation), run_id, step.id)


def _step_state_values(step: PlanStep, observation: str | None) -> tuple[Any, ...]:
    """`_STEP_STATE_COLUMNS`: what a step has become."""
    approval, error = step.approval, step.error
    return (
        step.status.value,
        observation,
        error.type.value if error else None,
        error.message if error else None,
        step.skip_reason,
        step.fallback_reason,
        step.pause_reason,
        step.retry_count,
        None if approval is None else int(approval.approved),
        approval.by_user_id if approval else None,
        ts(approval.at) if approval else None,
        ts(step.started_at),
        ts(step.finished_at),
    )


def _event_row(run: Run, event: RunEvent, observations: dict[str, str | None]) -> tuple[Any, ...]:
    args = observation = None
    if event.step_id is not None:
        if event.kind is EventKind.STEP_STARTED:
            args = _json(run.step(event.step_id).args)
        elif event.kind is EventKind.STEP_SUCCEEDED:
            observation = observations[event.step_id]
    return (
        run.id,
        run.trace_id,
        event.kind.value,
        event.step_id,
        event.tool,
        args,
        event.attempt,
        event.status,
        event.error_type.value if event.error_type else None,
        event.decision.value if event.decision else None,
        event.delay_s,
        observation,
        event.message,
        ts(event.at),
    )


_CLAIM = (
    # The one conditional UPDATE that decides who wins; everything else explains a loss.
    "UPDATE runs SET status = 'running', pause_nonce = NULL, updated_at = ?"
    " WHERE id = ? AND status = 'paused' AND user_id = ? AND pause_nonce IS NOT NULL"
    " AND pause_nonce = coalesce(?, pause_nonce) AND paused_at >= ?"
)
_CLAIM_APPROVAL = (
    "UPDATE steps SET approval_approved = ?, approval_by = ?, approval_at = ?"
    " WHERE run_id = ? AND id = (SELECT pause_step_id FROM runs WHERE id = ?)"
)
_CLAIM_EVENT = (
    "INSERT INTO events (run_id, trace_id, kind, step_id, tool, status, decision,"
    " message, at) SELECT id, trace_id, ?, pause_step_id, pause_tool, 'paused',"
    " ?, ?, ? FROM runs WHERE id = ?"
)
_EXPIRE = (
    "UPDATE runs SET status = 'expired', pause_nonce = NULL, updated_at = ?"
    " WHERE id = ? AND status = 'paused'"
)

ClaimRows = tuple[ClaimResult, sqlite3.Row | None, list[sqlite3.Row]]


def _claim_in_transaction(
    conn: sqlite3.Connection,
    *,
    run_id: str,
    user_id: int,
    approved: bool,
    nonce: str | None,
    now: str | None,
    expires_before: str | None,
) -> ClaimRows:
    """The whole claim, on the database thread inside one (group) transaction.

    Also reads the run as the claim left it (for the run's own customer only), so the
    caller needs no second round trip.
    """
    result = _decide_claim(conn, run_id, user_id, approved, nonce, now, expires_before)
    if result in (ClaimResult.NOT_FOUND, ClaimResult.NOT_ALLOWED):
        return result, None, []
    row = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
    steps = conn.execute(
        f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id = ? ORDER BY position", (run_id,)
    ).fetchall()
    return result, row, steps


def _decide_claim(
    conn: sqlite3.Connection,
    run_id: str,
    user_id: int,
    approved: bool,
    nonce: str | None,
    now: str | None,
    expires_before: str | None,
) -> ClaimResult:
    if conn.execute(_CLAIM, (now, run_id, user_id, nonce, expires_before)).rowcount == 1:
        conn.execute(_CLAIM_APPROVAL, (int(approved), user_id, now, run_id, run_id))
        conn.execute(
            _CLAIM_EVENT,
            (
                EventKind.DECISION_CLAIMED.value,
                "approved" if approved else "declined",
                f"{'confirmed' if approved else 'cancelled'} by user {user_id}",
                now,
                run_id,
            ),
        )
        return ClaimResult.OK
    row = conn.execute(
        "SELECT user_id, status, pause_nonce FROM runs WHERE id = ?", (run_id,)
    ).fetchone()
    if row is None:
        return ClaimResult.NOT_FOUND
    if int(row[0]) != user_id:
        return ClaimResult.NOT_ALLOWED
    if row[1] != RunStatus.PAUSED.value or row[2] is None:
        return ClaimResult.ALREADY_HANDLED
    if nonce is not None and row[2] != nonce:
        return ClaimResult.STALE
    conn.execute(_EXPIRE, (now, run_id))
    return ClaimResult.EXPIRED


def _run_from_rows(row: aiosqlite.Row, step_rows: list[aiosqlite.Row]) -> Run:
    pause = None
    if row["pause_step_id"] is not None:
        pause = Pause(
            step_id=row["pause_step_id"],
            nonce=row["pause_nonce"],
            tool=row["pause_tool"],
            args_hash=row["pause_args_hash"],
            paused_at=_required_ts(row["paused_at"]),
        )
    return Run(
        id=row["id"],
        trace_id=row["trace_id"],
        user_id=row["user_id"],
        chat_id=row["chat_id"],
        request_text=row["request_text"],
        language=Language(row["language"]),
        status=RunStatus(row["status"]),
        steps=[_step_from_row(s) for s in step_rows],
        refusal=row["refusal"],
        pause=pause,
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        stop_reason=row["stop_reason"],
        answer=row["answer"],
        created_at=_required_ts(row["created_at"]),
        updated_at=_required_ts(row["updated_at"]),
        finished_at=parse_ts(row["finished_at"]),
    )


def _step_from_row(row: aiosqlite.Row) -> PlanStep:
    approval = None
    if row["approval_approved"] is not None:
        approval = Approval(
            approved=bool(row["approval_approved"]),
            by_user_id=row["approval_by"],
            at=_required_ts(row["approval_at"]),
        )
    error = None
    if row["error_type"] is not None:
        error = StepError(type=row["error_type"], message=row["error_message"] or "")
    return PlanStep(
        id=row["id"],
        goal=row["goal"],
        tool=row["tool"],
        args=json.loads(row["args"]),
        tag=row["tag"],
        status=StepStatus(row["status"]),
        observation=_loads(row["observation"]),
        error=error,
        skip_reason=row["skip_reason"],
        fallback_reason=row["fallback_reason"],
        pause_reason=row["pause_reason"],
        retry_count=row["retry_count"],
        max_retries=row["max_retries"],
        approval=approval,
        started_at=parse_ts(row["started_at"]),
        finished_at=parse_ts(row["finished_at"]),
    )
