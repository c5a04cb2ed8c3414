"""Runs, steps and their event log in SQLite: the agent's durable memory.

`record` is the executor's journal: each transition is one transaction (run row, the
step rows it touched, one event row), committed before the executor moves on. A pause's
decision is claimed with one conditional UPDATE, so exactly one press ever wins.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite
from pydantic import BaseModel

from agent_core.agent import ClaimResult
from agent_core.models import (
    Approval,
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
    Statements,
    StorageUnavailable,
    connect,
    write_transaction,
)

_TS = "%Y-%m-%dT%H:%M:%S.%fZ"


def ts(value: datetime | None) -> str | None:
    """Fixed-width UTC timestamps, so text order is time order in indexes."""
    return value.astimezone(UTC).strftime(_TS) if value else None


def parse_ts(value: str | None) -> datetime | None:
    return datetime.strptime(value, _TS).replace(tzinfo=UTC) if value else None


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, default=str)


class RunSummary(BaseModel):
    id: str
    trace_id: str
    user_id: int
    chat_id: int
    request_text: str
    language: Language
    status: RunStatus
    step_count: int
    retries: int
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


class RunPage(BaseModel):
    items: list[RunSummary]
    next_cursor: str | None  # pass back as `before` for the next (older) page


class TimelineEntry(BaseModel):
    seq: int
    kind: EventKind
    step_id: str | None
    tool: str | None
    args: Any = None
    attempt: int | None
    status: str | None
    error_type: str | None
    decision: str | None
    delay_s: float | None
    observation: Any = None
    message: str | None
    at: datetime


class FailureCount(BaseModel):
    error_type: str
    tool: str | None
    count: int


_RUN_COLUMNS = (
    "id, trace_id, user_id, chat_id, request_text, language, status, refusal, pause_step_id,"
    " pause_nonce, pause_tool, pause_args_hash, paused_at, attempts, max_attempts, stop_reason,"
    " answer, created_at, updated_at, finished_at"
)
_STEP_COLUMNS = (
    "run_id, position, id, goal, tool, args, tag, status, observation, error_type, error_message,"
    " skip_reason, fallback_reason, pause_reason, retry_count, max_retries, approval_approved,"
    " approval_by, approval_at, started_at, finished_at"
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
_UPSERT_STEP = _upsert("steps", _STEP_COLUMNS, "run_id, id")


class SqliteRunStore:
    """The `RunStore` of agent_core, plus the history queries staff use."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        # One connection, many coroutines: transactions must not interleave.
        self._lock = asyncio.Lock()
        self._queue: list[tuple[Statements, asyncio.Future[None]]] = []
        self._flusher: asyncio.Future[None] | None = None

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
        await self._conn.close()

    # -- journal ---------------------------------------------------------------------------

    async def record(self, run: Run, event: RunEvent) -> None:
        # Snapshot now: the executor keeps mutating `run` once we yield.
        run_row = _run_row(run)
        steps = run.steps if event.step_id is None else [run.step(event.step_id)]
        step_rows = [_step_row(run.id, run.steps.index(s), s) for s in steps]
        event_row = _event_row(run, event)
        await self._write(
            [
                (_UPSERT_RUN, run_row),
                *((_UPSERT_STEP, r) for r in step_rows),
                (
                    "INSERT INTO events (run_id, trace_id, kind, step_id, tool, args, attempt,"
                    " status, error_type, decision, delay_s, observation, message, at)"
                    f" VALUES ({_marks(14)})",
                    event_row,
                ),
            ]
        )

    async def add_notice(self, run_id: str, message: str) -> None:
        """Append a note to a run's history without touching its state."""
        await self._write(
            [
                (
                    "INSERT INTO events (run_id, trace_id, kind, message, at)"
                    " SELECT id, trace_id, ?, ?, ? FROM runs WHERE id = ?",
                    (EventKind.NOTICE.value, message, ts(utcnow()), run_id),
                )
            ]
        )

    async def _write(self, statements: Statements) -> None:
        """Commit `statements` as part of the next transaction (group commit).

        Writes that arrive while a commit is in flight are queued and committed together
        in one transaction, so 50 concurrent runs share commits instead of queueing for
        one each. Every caller still returns only after its own rows are durable.
        """
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((statements, done))
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush())
        await done

    async def _flush(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    async with self._lock:
                        await write_transaction(self._conn, [s for s, _ in batch])
                except sqlite3.Error as exc:
                    failure = StorageUnavailable(f"write failed: {exc}")
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(failure)
                    continue
                except BaseException as exc:
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(StorageUnavailable(f"write interrupted: {exc!r}"))
                    raise
                for _, done in batch:
                    if not done.done():
                        done.set_result(None)
        finally:
            self._flusher = None

    async def _rollback(self) -> None:
        # SQLite may already have rolled back by itself (e.g. on a full disk).
        with contextlib.suppress(sqlite3.Error):
            await self._conn.execute("ROLLBACK")

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
    ) -> ClaimResult:
        async with self._lock:
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StorageUnavailable(f"database busy: {exc}") from exc
            try:
                result = await self._claim(
                    run_id, user_id, approved, nonce, ts(now), ts(expires_before)
                )
                await self._conn.execute("COMMIT")
                return result
            except sqlite3.Error as exc:
                await self._rollback()
                raise StorageUnavailable(f"claim failed: {exc}") from exc
            except BaseException:
                await self._rollback()
                raise

    async def _claim(
        self,
        run_id: str,
        user_id: int,
        approved: bool,
        nonce: str | None,
        now: str | None,
        expires_before: str | None,
    ) -> ClaimResult:
        # The one conditional UPDATE that decides who wins; everything else explains a loss.
        cur = await self._conn.execute(
            "UPDATE runs SET status = 'running', pause_nonce = NULL, updated_at = ?"
            " WHERE id = ? AND status = 'paused' AND user_id = ? AND pause_nonce IS NOT NULL"
            " AND pause_nonce = coalesce(?, pause_nonce) AND paused_at >= ?",
            (now, run_id, user_id, nonce, expires_before),
        )
        if cur.rowcount == 1:
            await self._conn.execute(
                "UPDATE steps SET approval_approved = ?, approval_by = ?, approval_at = ?"
                " WHERE run_id = ? AND id = (SELECT pause_step_id FROM runs WHERE id = ?)",
                (int(approved), user_id, now, run_id, run_id),
            )
            await self._conn.execute(
                "INSERT INTO events (run_id, trace_id, kind, step_id, tool, status, decision,"
                " message, at) SELECT id, trace_id, ?, pause_step_id, pause_tool, 'paused',"
                " ?, ?, ? FROM runs WHERE id = ?",
                (
                    EventKind.DECISION_CLAIMED.value,
                    "approved" if approved else "declined",
                    f"{'confirmed' if approved else 'cancelled'} by user {user_id}",
                    now,
                    run_id,
                ),
            )
            return ClaimResult.OK
        async with self._conn.execute(
            "SELECT user_id, status, pause_nonce, paused_at FROM runs WHERE id = ?", (run_id,)
        ) as c:
            row = await c.fetchone()
        if row is None:
            return ClaimResult.NOT_FOUND
        if int(row["user_id"]) != user_id:
            return ClaimResult.NOT_ALLOWED
        if row["status"] != RunStatus.PAUSED.value or row["pause_nonce"] is None:
            return ClaimResult.ALREADY_HANDLED
        if nonce is not None and row["pause_nonce"] != nonce:
            return ClaimResult.STALE
        await self._conn.execute(
            "UPDATE runs SET status = 'expired', pause_nonce = NULL, updated_at = ?"
            " WHERE id = ? AND status = 'paused'",
            (now, run_id),
        )
        return ClaimResult.EXPIRED

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


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _loads(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def _required_ts(value: str) -> datetime:
    parsed = parse_ts(value)
    assert parsed is not None
    return parsed


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


def _step_row(run_id: str, position: int, step: PlanStep) -> tuple[Any, ...]:
    approval = step.approval
    return (
        run_id,
        position,
        step.id,
        step.goal,
        step.tool,
        _json(step.args),
        step.tag,
        step.status.value,
        _json(step.observation),
        step.error.type.value if step.error else None,
        step.error.message if step.error else None,
        step.skip_reason,
        step.fallback_reason,
        step.pause_reason,
        step.retry_count,
        step.max_retries,
        None if approval is None else int(approval.approved),
        approval.by_user_id if approval else None,
        ts(approval.at) if approval else None,
        ts(step.started_at),
        ts(step.finished_at),
    )


def _event_row(run: Run, event: RunEvent) -> tuple[Any, ...]:
    step = run.step(event.step_id) if event.step_id else None
    args = observation = None
    if step is not None and event.kind is EventKind.STEP_STARTED:
        args = _json(step.args)
    if step is not None and event.kind is EventKind.STEP_SUCCEEDED:
        observation = _json(step.observation)
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
