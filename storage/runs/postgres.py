"""Runs, steps and their event log in PostgreSQL: the same store as `storage.runs.sqlite`.

Same contract as `SqliteRunStore` (see there): `record_many` commits a transition batch in
ONE transaction before it returns, concurrent runs share commits through the same
`WriteQueue` (each shared transaction is pipelined: one round trip to the server), and
staff reads go through `store.history`, the very queries SQLite runs, in PostgreSQL's
spelling (`storage.history.POSTGRES`).

What differs, and why:

* The claim is ONE conditional `UPDATE … RETURNING`: the approval and the
  `decision_claimed` event are written by the same statement (data-modifying CTEs on the
  claimed row), and the run comes back from it; the steps are read in the same pipelined
  round trip. Under READ COMMITTED a second claimant's UPDATE waits for the first to
  commit, re-checks its WHERE on the new row, and matches nothing, so one press wins
  whatever the number of processes. Only a lost claim reads again, to say why.
* Taking a lease (`runs_to_recover`, `owed_deliveries`, see `storage.leases`) is the same
  compare-and-set as on SQLite, on a row locked with `FOR UPDATE SKIP LOCKED`: a run
  another process is taking right now is skipped, not waited for.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import psycopg
from psycopg import AsyncConnection

from agent_core.execution.approval import may_claim, pressed_on_the_prompt
from agent_core.models import (
    ClaimResult,
    EventKind,
    PromptRef,
    Run,
    RunEvent,
    RunStatus,
    utcnow,
)
from agent_core.understanding.order_facts import ObservedStep
from storage.db import StorageUnavailable
from storage.handoffs import Handoffs, pg_writer
from storage.history import POSTGRES, History
from storage.journal import JournalSql, transition_statements
from storage.leases import (
    DELIVERY_ENDS,
    FORGET_DEAD,
    GIVE_UP,
    GONE,
    HEARTBEAT,
    KEEP_HELD,
    LEASE_COLUMNS,
    LET_GO,
    RELEASE_DELIVERY,
    SELECT_HEARTBEATS,
    SELECT_LEASE,
    SELECT_OWED,
    SELECT_RUNNING,
    Lease,
    held_here,
    live_others,
    process_owner,
    rows_of,
    to_take,
)
from storage.pg import (
    DEFAULT_LOCK_TIMEOUT_S,
    DEFAULT_POOL_SIZE,
    PG_FAULTS,
    Pool,
    Record,
    execute_statements,
    fetch,
    open_pool,
    pg_sql,
    records,
    run_transaction,
    unavailable,
)
from storage.revocations.postgres import PgRevocations
from storage.tables import (
    EVENT_COLUMNS,
    RECENT_ORDER_STEPS,
    RUN_COLUMNS,
    RUN_READ_COLUMNS,
    RUN_STATE_COLUMNS,
    STEP_COLUMNS,
    STEP_STATE_COLUMNS,
    Statement,
    columns,
    distinct_orders,
    insert,
    observed_steps,
    run_from_rows,
    ts,
    update,
    upsert,
)
from storage.writequeue import WriteQueue


def _pg(statement: Statement) -> Statement:
    return Statement(pg_sql(statement.sql), statement.names)


_JOURNAL = JournalSql(
    # The insert and the status change also write the run's lease (`storage.leases`).
    upsert_run=_pg(upsert("runs", RUN_COLUMNS + LEASE_COLUMNS, ("id",))),
    upsert_step=_pg(upsert("steps", STEP_COLUMNS, ("run_id", "id"))),
    update_run=_pg(update("runs", RUN_STATE_COLUMNS, ("id",))),
    # PostgreSQL writes a new row version whatever changed; the condition still saves the
    # index entries of `status` (a HOT update) when it did not change.
    update_run_status=(
        "UPDATE runs SET status = %(status)s, lease_owner = %(lease_owner)s,"
        " lease_until = %(lease_until)s WHERE id = %(id)s AND status IS DISTINCT FROM %(status)s"
    ),
    update_step=_pg(update("steps", STEP_STATE_COLUMNS, ("run_id", "id"))),
    insert_event=_pg(insert("events", EVENT_COLUMNS)),
)
_APPEND_EVENT = pg_sql(
    "INSERT INTO events (run_id, trace_id, kind, message, at)"
    " SELECT id, trace_id, :kind, :message, :at FROM runs WHERE id = :run_id"
)
_RELEASE_DELIVERY = pg_sql(RELEASE_DELIVERY)
_SELECT_RUN = f"SELECT {columns(RUN_READ_COLUMNS)} FROM runs WHERE id = %s"
# The prompt of the pause with this nonce was delivered on this message.
_BIND_PROMPT = pg_sql(
    "UPDATE runs SET prompt_chat_id = :chat_id, prompt_message_id = :message_id,"
    " lease_owner = NULL, lease_until = NULL"
    " WHERE id = :run_id AND status = 'paused' AND pause_nonce = :nonce"
)
# As `storage.runs.sqlite._BIND_CHOICES`: the clarifying question's options were delivered
# on this message.
_BIND_CHOICES = pg_sql(
    "UPDATE runs SET prompt_chat_id = :chat_id, prompt_message_id = :message_id"
    " WHERE id = :run_id AND status = 'needs_clarification' AND clarify_nonce = :nonce"
)
_SELECT_STEPS = f"SELECT {columns(STEP_COLUMNS)} FROM steps WHERE run_id = %s ORDER BY position"
_LAST_ORDER_IDS = (
    "SELECT s.args::jsonb ->> 'order_id' AS order_id FROM steps s"
    " WHERE s.args::jsonb ->> 'order_id' IS NOT NULL AND s.run_id = ("
    " SELECT r.id FROM runs r JOIN steps o ON o.run_id = r.id"
    " WHERE r.chat_id = ? AND r.user_id = ?"
    " AND o.args::jsonb ->> 'order_id' IS NOT NULL"
    " ORDER BY r.created_at DESC LIMIT 1)"
    " ORDER BY s.position"
)
_RECENT_ORDER_STEPS = (
    "SELECT s.tool, s.args::jsonb ->> 'order_id' AS order_id, s.status,"
    " s.observation, s.error_type"
    " FROM runs r JOIN steps s ON s.run_id = r.id"
    " WHERE r.chat_id = ? AND r.user_id = ?"
    " AND s.args::jsonb ->> 'order_id' IS NOT NULL"
    f" ORDER BY r.created_at DESC, s.position DESC LIMIT {RECENT_ORDER_STEPS}"
)
_RENEW = "UPDATE runs SET lease_until = %(until)s WHERE lease_owner = %(me)s AND id = ANY(%(ids)s)"
# RETURNING, not rowcount: writes may run pipelined, where rowcount is not known yet.
_KEEP_HELD = pg_sql(KEEP_HELD) + " RETURNING id"
# Compare-and-set on the lease the taker read, on a row nobody else is locking right now.
_TAKE = (
    "UPDATE runs SET lease_owner = %(me)s, lease_until = %(until)s WHERE id = ("
    " SELECT id FROM runs WHERE id = %(id)s AND status = %(seen_status)s"
    " AND lease_owner IS NOT DISTINCT FROM %(seen_owner)s"
    " AND lease_until IS NOT DISTINCT FROM %(seen_until)s FOR UPDATE SKIP LOCKED"
    ") RETURNING id"
)


class PgRunStore:
    """The `RunStore` of agent_core on PostgreSQL; `history` holds the reads staff make."""

    def __init__(self, pool: Pool, lease: Lease | None = None) -> None:
        self._pool = pool
        self.lease = lease or Lease(process_owner())
        self._writes = WriteQueue(partial(run_transaction, pool), PG_FAULTS)
        self.history = History(partial(fetch, pool), POSTGRES)
        self.revocations = PgRevocations(partial(fetch, pool), self._writes.submit)
        self.handoffs = Handoffs(partial(fetch, pool), pg_writer(self._writes.submit))

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        busy_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        pool_size: int = DEFAULT_POOL_SIZE,
        lease: Lease | None = None,
    ) -> PgRunStore:
        """Connect to `url` (migrating its schema first); `busy_timeout_s` bounds lock waits."""
        pool = await open_pool(url, lock_timeout_s=busy_timeout_s, max_size=pool_size)
        return cls(pool, lease)

    async def close(self) -> None:
        await self._writes.drain()  # let queued writes finish (or fail) first
        params = {"me": self.lease.owner, "now": self.lease.now()}
        with contextlib.suppress(StorageUnavailable):  # this process's leases lapse now
            await self._writes.submit(
                execute_statements([(pg_sql(LET_GO), params), (pg_sql(GONE), params)])
            )
        await self._pool.close()

    # -- journal ---------------------------------------------------------------------------

    async def record(self, run: Run, event: RunEvent) -> None:
        """Commit one transition (see `record_many`)."""
        await self.record_many(run, (event,))

    async def record_many(self, run: Run, events: Sequence[RunEvent]) -> None:
        """Commit `events` of `run`, in order, and the run's current state in ONE transaction.

        The statements are built before the first await: the executor keeps mutating `run`.
        """
        if events:
            lease = self.lease.columns(run.status)
            statements = transition_statements(run, events, _JOURNAL, lease)
            await self._writes.submit(execute_statements(statements))

    async def add_event(self, run_id: str, kind: EventKind, message: str | None = None) -> None:
        """Append an event without touching the run's state (nothing for an unknown run);
        a delivered answer or a blocked customer also ends the delivery's lease (as SQLite)."""
        params = {"kind": kind.value, "message": message, "at": ts(utcnow()), "run_id": run_id}
        statements: list[tuple[str, Any]] = [(_APPEND_EVENT, params)]
        if kind in DELIVERY_ENDS:
            statements.append((_RELEASE_DELIVERY, {"run_id": run_id}))
        await self._writes.submit(execute_statements(statements))

    async def bind_prompt(
        self, run_id: str, nonce: str, prompt: PromptRef, message: str | None = None
    ) -> None:
        """As `SqliteRunStore.bind_prompt`: bind the pause with `nonce` to the message its
        prompt was delivered on and record `prompt_shown`, in one commit."""
        bind = {
            "chat_id": prompt.chat_id,
            "message_id": prompt.message_id,
            "run_id": run_id,
            "nonce": nonce,
        }
        shown = {
            "kind": EventKind.PROMPT_SHOWN.value,
            "message": message,
            "at": ts(utcnow()),
            "run_id": run_id,
        }
        await self._writes.submit(
            execute_statements([(_BIND_PROMPT, bind), (_APPEND_EVENT, shown)])
        )

    async def bind_choices(self, run_id: str, nonce: str, prompt: PromptRef) -> None:
        """As `SqliteRunStore.bind_choices`: a press on the question's options counts only
        on the message they were delivered on."""
        bind = {
            "chat_id": prompt.chat_id,
            "message_id": prompt.message_id,
            "run_id": run_id,
            "nonce": nonce,
        }
        await self._writes.submit(execute_statements([(_BIND_CHOICES, bind)]))

    # -- what the agent reads ------------------------------------------------------------

    async def load_run(self, run_id: str) -> Run | None:
        """The run and its steps, both read in one pipelined round trip (two statements, as
        on SQLite: the executor that writes a run is the only one reading it back)."""
        try:
            async with self._pool.connection() as conn, conn.pipeline():
                row, step_rows = await _read_run(conn, run_id=run_id)
        except psycopg.Error as exc:
            raise unavailable(exc, "read failed") from exc
        return run_from_rows(row, step_rows) if row is not None else None

    async def still_held(self, run_id: str) -> bool:
        """As `SqliteRunStore.still_held`."""
        rows = await fetch(self._pool, SELECT_LEASE, (run_id,))
        held = held_here((rows[0][0], rows[0][1]) if rows else None, self.lease)
        if held is None:
            params = {"id": run_id, "me": self.lease.owner, "until": self.lease.until()}
            held = await self._writes.submit(partial(_keep_held, params=params))
        return bool(held)

    async def last_order_ids(self, chat_id: int, user_id: int) -> list[str]:
        """As `SqliteRunStore.last_order_ids`."""
        return distinct_orders(await fetch(self._pool, _LAST_ORDER_IDS, (chat_id, user_id)))

    async def recent_order_steps(self, chat_id: int, user_id: int) -> list[ObservedStep]:
        """As `SqliteRunStore.recent_order_steps`."""
        return observed_steps(await fetch(self._pool, _RECENT_ORDER_STEPS, (chat_id, user_id)))

    async def runs_to_recover(self, abandoned: Collection[str] = ()) -> list[str]:
        """As `SqliteRunStore.runs_to_recover`: take the running runs whose lease lapsed."""
        rows = rows_of(await fetch(self._pool, SELECT_RUNNING))
        return await self._take(to_take(rows, self.lease, abandoned=abandoned))

    async def owed_deliveries(self, since: datetime) -> list[str]:
        """As `SqliteRunStore.owed_deliveries`: take the undelivered runs whose lease lapsed."""
        found = await fetch(self._pool, SELECT_OWED)
        updated = [str(r["updated_at"]) for r in found]
        stamp = ts(since)
        takes = to_take(rows_of(found), self.lease, since=stamp, updated=updated)
        if stamp is not None and any(u < stamp for u in updated):
            await self._writes.submit(execute_statements([(pg_sql(GIVE_UP), {"since": stamp})]))
        return await self._take(takes)

    async def _take(self, takes: Sequence[dict[str, str | None]]) -> list[str]:
        if not takes:
            return []
        taken: list[str] = await self._writes.submit(partial(_take_leases, takes=takes))
        return taken

    async def renew_leases(self, run_ids: Collection[str], *, heartbeat: bool = True) -> None:
        """Extend this process's leases on `run_ids` (and its heartbeat): one commit."""
        params: dict[str, Any] = {
            "me": self.lease.owner,
            "until": self.lease.until(),
            "now": self.lease.now(),
        }
        statements: list[tuple[str, Any]] = []
        if heartbeat:
            statements += [(pg_sql(HEARTBEAT), params), (pg_sql(FORGET_DEAD), params)]
        if run_ids:
            statements.append((_RENEW, {**params, "ids": sorted(run_ids)}))
        if statements:
            await self._writes.submit(execute_statements(statements))

    async def live_owners(self) -> list[str]:
        """Other processes whose heartbeat says they are live on this database."""
        rows = await fetch(self._pool, SELECT_HEARTBEATS)
        return live_others([(str(r[0]), str(r[1])) for r in rows], self.lease)

    # -- the claim -------------------------------------------------------------------------

    async def claim_pause(
        self,
        run_id: str,
        *,
        user_id: int,
        approved: bool,
        nonce: str | None,
        now: datetime,
        expires_before: datetime,
        prompt: PromptRef | None = None,
        staff: bool = False,
        approvals: int = 1,
    ) -> tuple[ClaimResult, Run | None]:
        """One conditional UPDATE … RETURNING decides and hands back the claimed run.

        With `prompt` (a button press) the pause must be bound to exactly that message;
        `staff` and `approvals` as in `SqliteRunStore.claim_pause`."""
        claim = partial(
            _claim_in_transaction,
            params={
                "run_id": run_id,
                "user_id": user_id,
                "staff": int(staff),
                "approvals": approvals,
                "nonce": nonce,
                "chat_id": prompt.chat_id if prompt else None,
                "message_id": prompt.message_id if prompt else None,
                "now": ts(now),
                "expires_before": ts(expires_before),
                "approved": int(approved),
                "kind": EventKind.DECISION_CLAIMED.value,
                "decision": "approved" if approved else "declined",
                "message": f"{'confirmed' if approved else 'declined'} by"
                f" {'staff' if staff else 'user'} {user_id}",
                **self.lease.columns(RunStatus.RUNNING),
            },
        )
        result, row, step_rows = await self._writes.submit(claim)
        return result, run_from_rows(row, step_rows) if row is not None else None

    async def claim_clarification(
        self,
        run_id: str,
        *,
        user_id: int,
        nonce: str | None,
        choice: str,
        now: datetime,
        expires_before: datetime,
        prompt: PromptRef | None = None,
    ) -> tuple[ClaimResult, Run | None]:
        """As `SqliteRunStore.claim_clarification`: one conditional UPDATE … RETURNING
        (which also writes the `clarify_answered` event) decides, so one press continues
        the conversation however often, and through however many processes, it arrives;
        a press elsewhere than where the options were delivered is `STALE`."""
        claim = partial(
            _claim_clarification,
            params={
                "run_id": run_id,
                "user_id": user_id,
                "nonce": nonce,
                "now": ts(now),
                "expires_before": ts(expires_before),
                "kind": EventKind.CLARIFY_ANSWERED.value,
                "message": f"user {user_id} chose: {choice}",
                "chat_id": prompt.chat_id if prompt is not None else None,
                "message_id": prompt.message_id if prompt is not None else None,
            },
        )
        result, row, step_rows = await self._writes.submit(claim)
        return result, run_from_rows(row, step_rows) if row is not None else None


# -- inside a transaction ------------------------------------------------------------------


async def _read_run(
    conn: AsyncConnection[Any], *, run_id: str
) -> tuple[Record | None, list[Record]]:
    run = conn.cursor(row_factory=records)
    steps = conn.cursor(row_factory=records)
    await run.execute(_SELECT_RUN, (run_id,))
    await steps.execute(_SELECT_STEPS, (run_id,))  # pipelined with the run's row
    return await run.fetchone(), await steps.fetchall()


async def _keep_held(conn: AsyncConnection[Any], *, params: dict[str, str]) -> bool:
    cur = await conn.execute(_KEEP_HELD, params)
    return await cur.fetchone() is not None


async def _take_leases(
    conn: AsyncConnection[Any], *, takes: Sequence[dict[str, str | None]]
) -> list[str]:
    cursors = []
    for params in takes:  # pipelined: one round trip for all of them
        cur = conn.cursor()
        await cur.execute(_TAKE, params)
        cursors.append(cur)
    return [str(row[0]) for cur in cursors if (row := await cur.fetchone()) is not None]


# As in SQLite (`storage.runs.sqlite`): the approvals other staff members (not the customer)
# recorded on the run's open pause; never on their own order (issue 20).
_OTHER_APPROVALS = (
    "(SELECT count(*) FROM staff_approvals a WHERE a.run_id = runs.id"
    " AND a.nonce = runs.pause_nonce AND a.staff_id <> %(user_id)s"
    " AND a.staff_id <> runs.user_id)"
)
_CLAIM = f"""
WITH claimed AS (
    UPDATE runs SET status = 'running', pause_nonce = NULL, updated_at = %(now)s,
        lease_owner = %(lease_owner)s, lease_until = %(lease_until)s
    WHERE id = %(run_id)s AND status = 'paused'
    AND ((%(staff)s = 0 AND user_id = %(user_id)s
          AND coalesce(pause_approver, 'customer') = 'customer')
         OR (%(staff)s = 1 AND pause_approver = 'staff'
             AND user_id <> %(user_id)s AND {_OTHER_APPROVALS} >= %(approvals)s - 1))
    AND pause_nonce IS NOT NULL AND pause_nonce = coalesce(%(nonce)s, pause_nonce)
    AND (%(message_id)s::bigint IS NULL
         OR (prompt_chat_id = %(chat_id)s AND prompt_message_id = %(message_id)s)
         OR (prompt_message_id IS NULL
             AND (chat_id = %(chat_id)s OR pause_approver = 'staff')))
    AND paused_at >= %(expires_before)s
    RETURNING {columns(RUN_READ_COLUMNS)}
), approval AS (
    UPDATE steps s
    SET approval_approved = %(approved)s, approval_by = %(user_id)s, approval_at = %(now)s
    FROM claimed c WHERE s.run_id = c.id AND s.id = c.pause_step_id
), decision AS (
    INSERT INTO events (run_id, trace_id, kind, step_id, tool, status, decision, message, at)
    SELECT id, trace_id, %(kind)s, pause_step_id, pause_tool, 'paused', %(decision)s,
        %(message)s, %(now)s
    FROM claimed
)
SELECT {columns(RUN_READ_COLUMNS)} FROM claimed
"""
_CLAIM_STATE = (
    "SELECT user_id, status, pause_nonce, prompt_chat_id, prompt_message_id, pause_approver,"
    f" chat_id, {_OTHER_APPROVALS} FROM runs WHERE id = %(run_id)s"
)
_EXPIRE = (
    "UPDATE runs SET status = 'expired', pause_nonce = NULL, updated_at = %(now)s,"
    " lease_owner = NULL, lease_until = NULL"
    " WHERE id = %(run_id)s AND status = 'paused'"
)

ClaimRows = tuple[ClaimResult, Record | None, list[Record]]


async def _claim_in_transaction(conn: AsyncConnection[Any], *, params: dict[str, Any]) -> ClaimRows:
    """The claim and, pipelined behind it, the steps as it leaves them: one round trip.

    A statement sees what earlier statements of its transaction wrote, so the steps read
    after the claim carry its approval. A lost claim reads the run's state to say why.
    """
    run_id = params["run_id"]
    claimed = conn.cursor(row_factory=records)
    steps = conn.cursor(row_factory=records)
    await claimed.execute(_CLAIM, params)
    await steps.execute(_SELECT_STEPS, (run_id,))
    row = await claimed.fetchone()
    step_rows = await steps.fetchall()
    if row is not None:
        return ClaimResult.OK, row, step_rows
    result = await _explain_loss(conn, params)
    if result in (ClaimResult.NOT_FOUND, ClaimResult.NOT_ALLOWED):
        return result, None, []
    run, step_rows = await _read_run(conn, run_id=run_id)
    return result, run, step_rows


async def _explain_loss(conn: AsyncConnection[Any], params: dict[str, Any]) -> ClaimResult:
    cur = await conn.execute(_CLAIM_STATE, params)
    row = await cur.fetchone()
    if row is None:
        return ClaimResult.NOT_FOUND
    user_id, status, pause_nonce, chat_id, message_id, approver, run_chat_id, others = row
    if not may_claim(
        user_id,
        status,
        approver,
        user_id=params["user_id"],
        staff=bool(params["staff"]),
        approvals=params["approvals"],
        other_approvals=int(others),
    ):
        return ClaimResult.NOT_ALLOWED
    if status != RunStatus.PAUSED.value or pause_nonce is None:
        return ClaimResult.ALREADY_HANDLED
    if params["nonce"] is not None and pause_nonce != params["nonce"]:
        return ClaimResult.STALE
    pressed = (params["chat_id"], params["message_id"])
    if pressed[1] is not None and not pressed_on_the_prompt(
        (chat_id, message_id), run_chat_id, approver, pressed
    ):
        return ClaimResult.STALE  # its data replayed onto another message: expire nothing
    await conn.execute(_EXPIRE, {"now": params["now"], "run_id": params["run_id"]})
    return ClaimResult.EXPIRED


# As `storage.runs.sqlite._CHOICES_WHERE`: on the bound message, or in the question's chat
# while none is bound.
_CHOICES_WHERE = """(%(message_id)s::bigint IS NULL
         OR (prompt_chat_id = %(chat_id)s AND prompt_message_id = %(message_id)s)
         OR (prompt_message_id IS NULL AND chat_id = %(chat_id)s))"""
_CLAIM_CLARIFY = f"""
WITH claimed AS (
    UPDATE runs SET clarify_nonce = NULL, updated_at = %(now)s
    WHERE id = %(run_id)s AND status = 'needs_clarification' AND user_id = %(user_id)s
    AND clarify_nonce IS NOT NULL AND clarify_nonce = coalesce(%(nonce)s, clarify_nonce)
    AND {_CHOICES_WHERE}
    AND finished_at >= %(expires_before)s
    RETURNING id, trace_id
), answered AS (
    INSERT INTO events (run_id, trace_id, kind, message, at)
    SELECT id, trace_id, %(kind)s, %(message)s, %(now)s FROM claimed
)
SELECT id FROM claimed
"""
_CLARIFY_STATE = (
    f"SELECT user_id, status, clarify_nonce, {_CHOICES_WHERE} FROM runs WHERE id = %(run_id)s"
)


async def _claim_clarification(conn: AsyncConnection[Any], *, params: dict[str, Any]) -> ClaimRows:
    """The claim, then the run as it leaves it, pipelined: one round trip when it wins.

    A lost claim reads the run's state to say why; the run comes back to its own customer
    whatever the result (as on SQLite), never to anyone else.
    """
    run_id = params["run_id"]
    claimed = await conn.cursor().execute(_CLAIM_CLARIFY, params)
    run, step_rows = await _read_run(conn, run_id=run_id)
    if await claimed.fetchone() is not None:
        return ClaimResult.OK, run, step_rows
    cur = await conn.execute(_CLARIFY_STATE, params)
    row = await cur.fetchone()
    if row is None:
        return ClaimResult.NOT_FOUND, None, []
    user_id, status, clarify_nonce, pressed_there = row
    if int(user_id) != params["user_id"]:
        return ClaimResult.NOT_ALLOWED, None, []
    if status != RunStatus.NEEDS_CLARIFICATION.value or clarify_nonce is None:
        result = ClaimResult.ALREADY_HANDLED
    elif (params["nonce"] is not None and clarify_nonce != params["nonce"]) or not pressed_there:
        result = ClaimResult.STALE  # other data, or replayed elsewhere: nothing used up
    else:
        result = ClaimResult.EXPIRED
    return result, run, step_rows
