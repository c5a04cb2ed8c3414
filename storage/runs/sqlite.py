"""Runs, steps and their event log in SQLite: the agent's durable memory.

`record_many` is the executor's journal: the transitions it is given (one or more events of
one run, in order) are committed in ONE transaction together with the run's current state
before it returns. Which transitions go into which commit is the executor's decision (see
"Commit points" in `agent_core.execution.executor`). Transactions of concurrent runs are shared
(group commit, `storage.writequeue`). A pause's decision is claimed with one conditional
UPDATE in the same machinery, so exactly one press ever wins.

What a transition writes: `run_planned` inserts the run and its whole plan; every later
transition updates only the run's and the touched steps' state columns (never the plan:
goal, tool, args, tag and the run's identity columns are written once), and appends its
event rows. So the first event recorded for a run must be `run_planned` (the executor's
`start` guarantees it).

Column lists and row mapping live in `storage.tables`; every staff read in
`storage.history` (reached as `store.history`).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Collection, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import aiosqlite

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
from storage.db import (
    DEFAULT_BUSY_TIMEOUT_S,
    Statements,
    StorageUnavailable,
    connect,
    execute_statements,
    fetch,
    run_transaction,
)
from storage.handoffs import Handoffs
from storage.history import History
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
from storage.revocations.sqlite import Revocations
from storage.tables import (
    EVENT_COLUMNS,
    RECENT_ORDER_STEPS,
    RUN_COLUMNS,
    RUN_READ_COLUMNS,
    RUN_STATE_COLUMNS,
    STEP_COLUMNS,
    STEP_STATE_COLUMNS,
    columns,
    distinct_orders,
    insert,
    nulls_inline,
    observed_steps,
    run_from_rows,
    ts,
    update,
    upsert,
)
from storage.writequeue import WriteQueue

# The run's insert and its status change also write its lease (`storage.leases`): a drive
# starts and ends with them, so taking and giving back a lease costs no statement.
# Their None values are written as `NULL` literals, not bound (`storage.tables.NullsInline`).
_UPSERT_RUN = nulls_inline(upsert("runs", RUN_COLUMNS + LEASE_COLUMNS, ("id",)))
_UPSERT_STEP = nulls_inline(upsert("steps", STEP_COLUMNS, ("run_id", "id")))
_UPDATE_RUN = nulls_inline(update("runs", RUN_STATE_COLUMNS, ("id",)))
# `status` is in two indexes; SQLite rewrites an index entry whenever an UPDATE assigns one
# of its columns, changed or not. Most transitions leave the status as it was, so it gets
# its own statement that only matches (and only touches the indexes) when it changes.
_UPDATE_RUN_STATUS = (
    "UPDATE runs SET status = :status, lease_owner = :lease_owner, lease_until = :lease_until"
    " WHERE id = :id AND status IS NOT :status"
)
_UPDATE_STEP = nulls_inline(update("steps", STEP_STATE_COLUMNS, ("run_id", "id")))
_INSERT_EVENT = nulls_inline(insert("events", EVENT_COLUMNS))
# An event about a run that changes nothing else; trace_id comes from the run's row.
_APPEND_EVENT = (
    "INSERT INTO events (run_id, trace_id, kind, message, at)"
    " SELECT id, trace_id, :kind, :message, :at FROM runs WHERE id = :run_id"
)
_JOURNAL = JournalSql(
    upsert_run=_UPSERT_RUN,
    upsert_step=_UPSERT_STEP,
    update_run=_UPDATE_RUN,
    update_run_status=_UPDATE_RUN_STATUS,
    update_step=_UPDATE_STEP,
    insert_event=_INSERT_EVENT,
)
_SELECT_RUN = f"SELECT {columns(RUN_READ_COLUMNS)} FROM runs WHERE id = ?"
# What the chat's recent runs observed about orders (issue 23 #6), newest first.
_LAST_ORDER_IDS = (
    "SELECT json_extract(s.args, '$.order_id') AS order_id FROM steps s"
    " WHERE json_extract(s.args, '$.order_id') IS NOT NULL AND s.run_id = ("
    " SELECT r.id FROM runs r JOIN steps o ON o.run_id = r.id"
    " WHERE r.chat_id = ? AND r.user_id = ?"
    " AND json_extract(o.args, '$.order_id') IS NOT NULL"
    " ORDER BY r.created_at DESC LIMIT 1)"
    " ORDER BY s.position"
)
_RECENT_ORDER_STEPS = (
    "SELECT s.tool, json_extract(s.args, '$.order_id') AS order_id, s.status,"
    " s.observation, s.error_type"
    " FROM runs r JOIN steps s ON s.run_id = r.id"
    " WHERE r.chat_id = ? AND r.user_id = ?"
    " AND json_extract(s.args, '$.order_id') IS NOT NULL"
    f" ORDER BY r.created_at DESC, s.position DESC LIMIT {RECENT_ORDER_STEPS}"
)
# The prompt of the pause with this nonce was delivered on this message: the delivery its
# lease was kept for is done.
_BIND_PROMPT = (
    "UPDATE runs SET prompt_chat_id = :chat_id, prompt_message_id = :message_id,"
    " lease_owner = NULL, lease_until = NULL"
    " WHERE id = :run_id AND status = 'paused' AND pause_nonce = :nonce"
)
# The options of the clarifying question with this nonce were delivered on this message (a
# question's run has no steps, so it never paused and these columns are free). No lease is
# touched: the answer's delivery still ends with `answer_delivered`.
_BIND_CHOICES = (
    "UPDATE runs SET prompt_chat_id = :chat_id, prompt_message_id = :message_id"
    " WHERE id = :run_id AND status = 'needs_clarification' AND clarify_nonce = :nonce"
)
_SELECT_STEPS = f"SELECT {columns(STEP_COLUMNS)} FROM steps WHERE run_id = ? ORDER BY position"
_RENEW = (
    "UPDATE runs SET lease_until = :until"
    " WHERE lease_owner = :me AND id IN (SELECT value FROM json_each(:ids))"
)
# Compare-and-set on the lease the taker read (`storage.leases`): one taker wins.
_TAKE = (
    "UPDATE runs SET lease_owner = :me, lease_until = :until"
    " WHERE id = :id AND status = :seen_status"
    " AND lease_owner IS :seen_owner AND lease_until IS :seen_until"
)


def _run_of(row: sqlite3.Row, step_rows: Sequence[sqlite3.Row]) -> Run:
    """`run_from_rows` of `_SELECT_RUN`'s row and `_SELECT_STEPS`' rows, read as dicts:
    `sqlite3.Row` finds a column by name by comparing it with every column name in turn
    (~1 k instructions a lookup), and building a run takes about 120 lookups."""
    return run_from_rows(
        dict(zip(RUN_READ_COLUMNS, row, strict=True)),
        [dict(zip(STEP_COLUMNS, step, strict=True)) for step in step_rows],
    )


def _take_leases(takes: Sequence[dict[str, str | None]], conn: sqlite3.Connection) -> list[str]:
    return [str(p["id"]) for p in takes if conn.execute(_TAKE, p).rowcount == 1]


def _keep_held(params: dict[str, str], conn: sqlite3.Connection) -> bool:
    return bool(conn.execute(KEEP_HELD, params).rowcount == 1)


class SqliteRunStore:
    """The `RunStore` of agent_core; `history` holds the reads staff make."""

    def __init__(self, conn: aiosqlite.Connection, lease: Lease | None = None) -> None:
        self._conn = conn
        self.lease = lease or Lease(process_owner())
        self._writes = WriteQueue(partial(run_transaction, conn))
        self.history = History(partial(fetch, conn))
        self.revocations = Revocations(conn, self._write)
        self.handoffs = Handoffs(partial(fetch, conn), self._write)

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        synchronous: str = "FULL",
        lease: Lease | None = None,
    ) -> SqliteRunStore:
        conn = await connect(path, busy_timeout_s=busy_timeout_s, synchronous=synchronous)
        return cls(conn, lease)

    async def close(self) -> None:
        await self._writes.drain()  # let queued writes finish (or fail) first
        with contextlib.suppress(StorageUnavailable):
            await self._write(self._letting_go())
        await self._conn.close()

    def _letting_go(self) -> Statements:
        """This process stops: its leases lapse now (others take its runs at once)."""
        params = {"me": self.lease.owner, "now": self.lease.now()}
        return [(LET_GO, params), (GONE, params)]

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
            lease = self.lease.columns(run.status)
            await self._write(transition_statements(run, events, _JOURNAL, lease))

    async def add_event(self, run_id: str, kind: EventKind, message: str | None = None) -> None:
        """Append an event to a run's history without touching the run's state.

        For facts the adapters learn after the executor is done with a transition (a prompt
        was delivered, the customer blocked the bot); nothing is written for an unknown run.
        A delivered answer or a blocked customer (`DELIVERY_ENDS`) also gives back the lease
        kept for the delivery, in the same commit.
        """
        params = {"kind": kind.value, "message": message, "at": ts(utcnow()), "run_id": run_id}
        statements: list[tuple[str, Any]] = [(_APPEND_EVENT, params)]
        if kind in DELIVERY_ENDS:
            statements.append((RELEASE_DELIVERY, {"run_id": run_id}))
        await self._write(statements)

    async def bind_prompt(
        self, run_id: str, nonce: str, prompt: PromptRef, message: str | None = None
    ) -> None:
        """The prompt of the pause with `nonce` was delivered as `prompt`: bind the pause to
        that message (a press elsewhere is stale) and record `prompt_shown`, in one commit.

        A prompt shown again (after a restart) binds the pause to the new message. Nothing
        is bound when the pause has moved on (claimed, re-paused with another nonce).
        """
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
        await self._write([(_BIND_PROMPT, bind), (_APPEND_EVENT, shown)])

    async def bind_choices(self, run_id: str, nonce: str, prompt: PromptRef) -> None:
        """The options of the clarifying question with `nonce` were delivered as `prompt`:
        a press counts only there (`claim_clarification`), so the data replayed in another
        chat or onto another message uses nothing up. Shown again, the newest message wins."""
        bind = {
            "chat_id": prompt.chat_id,
            "message_id": prompt.message_id,
            "run_id": run_id,
            "nonce": nonce,
        }
        await self._write([(_BIND_CHOICES, bind)])

    async def _write(self, statements: Statements) -> None:
        await self._writes.submit(partial(execute_statements, statements))

    # -- what the agent reads ------------------------------------------------------------

    async def load_run(self, run_id: str) -> Run | None:
        rows = await fetch(self._conn, _SELECT_RUN, (run_id,))
        if not rows:
            return None
        return _run_of(rows[0], await fetch(self._conn, _SELECT_STEPS, (run_id,)))

    async def still_held(self, run_id: str) -> bool:
        """Whether this process still owns the running run's lease (a lapsed one is kept by
        a compare-and-set): then nobody else has written the run since this process did,
        and the copy in hand is the database's (`Agent.proceed`)."""
        rows = await fetch(self._conn, SELECT_LEASE, (run_id,))
        held = held_here((rows[0][0], rows[0][1]) if rows else None, self.lease)
        if held is None:
            params = {"id": run_id, "me": self.lease.owner, "until": self.lease.until()}
            held = await self._writes.submit(partial(_keep_held, params))
        return bool(held)

    async def last_order_ids(self, chat_id: int, user_id: int) -> list[str]:
        """The orders of this customer's latest run in this chat that had order steps, in
        step order, each once ("where are A1003 and A1007?" then "cancel it")."""
        rows = await fetch(self._conn, _LAST_ORDER_IDS, (chat_id, user_id))
        return distinct_orders(rows)

    async def recent_order_steps(self, chat_id: int, user_id: int) -> list[ObservedStep]:
        """The order steps of this customer's recent runs in this chat, newest first."""
        rows = await fetch(self._conn, _RECENT_ORDER_STEPS, (chat_id, user_id))
        return observed_steps(rows)

    async def runs_to_recover(self, abandoned: Collection[str] = ()) -> list[str]:
        """Take the running runs whose lease this process may take (`storage.leases`):
        one conditional UPDATE per run, so of two recovering processes one gets each run.
        The runs come back leased to this process, in the order they were created."""
        rows = rows_of(await fetch(self._conn, SELECT_RUNNING))
        return await self._take(to_take(rows, self.lease, abandoned=abandoned))

    async def owed_deliveries(self, since: datetime) -> list[str]:
        """Take the runs whose answer or prompt was committed but never delivered and whose
        lease (kept for the delivery) lapsed, if they changed after `since`; those older
        are given up. Returned leased to this process (the delivered mark gives it back)."""
        found = await fetch(self._conn, SELECT_OWED)
        updated = [str(r["updated_at"]) for r in found]
        stamp = ts(since)
        takes = to_take(rows_of(found), self.lease, since=stamp, updated=updated)
        if stamp is not None and any(u < stamp for u in updated):
            await self._write([(GIVE_UP, {"since": stamp})])
        return await self._take(takes)

    async def _take(self, takes: Sequence[dict[str, str | None]]) -> list[str]:
        if not takes:
            return []
        taken: list[str] = await self._writes.submit(partial(_take_leases, takes))
        return taken

    async def renew_leases(self, run_ids: Collection[str], *, heartbeat: bool = True) -> None:
        """Extend this process's leases on `run_ids` (and its heartbeat): one commit."""
        params = {"me": self.lease.owner, "until": self.lease.until(), "now": self.lease.now()}
        statements: list[tuple[str, Any]] = []
        if heartbeat:
            statements += [(HEARTBEAT, params), (FORGET_DEAD, params)]
        if run_ids:
            renew = {**params, "ids": json.dumps(sorted(run_ids))}
            statements.append((_RENEW, renew))
        if statements:
            await self._write(statements)

    async def live_owners(self) -> list[str]:
        """Other processes whose heartbeat says they are live on this database."""
        rows = await fetch(self._conn, SELECT_HEARTBEATS)
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
        """One conditional UPDATE decides; the claimed run is read back in the same
        transaction (None when not found or not the caller's run): one round trip.

        With `prompt` (a button press) the pause must be bound to exactly that message.
        `staff`: `user_id` is a staff member (the caller checked) deciding a staff pause,
        never one of their own runs; `approvals` > 1 (four eyes): the other approvals must
        be recorded on the pause by other staff members (`staff_approvals`)."""
        claim = partial(
            _claim_in_transaction,
            run_id=run_id,
            user_id=user_id,
            staff=staff,
            approvals=approvals,
            approved=approved,
            nonce=nonce,
            prompt=prompt,
            now=ts(now),
            expires_before=ts(expires_before),
            lease=self.lease.columns(RunStatus.RUNNING),
        )
        result, claimed, step_rows = await self._writes.submit(claim)
        run = _run_of(claimed, step_rows) if claimed is not None else None
        return result, run

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
        """The customer answered a clarifying question: one conditional UPDATE decides, so
        one press (or typed choice) continues the conversation, however often it arrives.

        `nonce=None` accepts the question's current nonce (the terminal chat, where the
        customer types the number). `prompt`, the message a button was pressed on, must be
        the one the options were bound to (`bind_choices`) or, while none is bound, be in
        the question's chat; else `STALE` and the question stays open. The run is returned
        only to its own customer.
        """
        claim = partial(
            _claim_clarification,
            run_id=run_id,
            user_id=user_id,
            nonce=nonce,
            choice=choice,
            now=ts(now),
            expires_before=ts(expires_before),
            chat_id=prompt.chat_id if prompt is not None else None,
            message_id=prompt.message_id if prompt is not None else None,
        )
        result, claimed, step_rows = await self._writes.submit(claim)
        run = _run_of(claimed, step_rows) if claimed is not None else None
        return result, run


# Pressed on the message the options were bound to; or, while none is bound (the process
# died between sending and binding them), on a message in the question's chat.
_CHOICES_WHERE = (
    "(:message_id IS NULL"
    " OR (prompt_chat_id = :chat_id AND prompt_message_id = :message_id)"
    " OR (prompt_message_id IS NULL AND chat_id = :chat_id))"
)
_CLAIM_CLARIFY = (
    "UPDATE runs SET clarify_nonce = NULL, updated_at = :now"
    " WHERE id = :run_id AND status = 'needs_clarification' AND user_id = :user_id"
    " AND clarify_nonce IS NOT NULL AND clarify_nonce = coalesce(:nonce, clarify_nonce)"
    f" AND {_CHOICES_WHERE}"
    " AND finished_at >= :expires_before"
)


def _claim_clarification(
    conn: sqlite3.Connection,
    *,
    run_id: str,
    user_id: int,
    nonce: str | None,
    choice: str,
    now: str | None,
    expires_before: str | None,
    chat_id: int | None,
    message_id: int | None,
) -> ClaimRows:
    params = {
        "run_id": run_id,
        "user_id": user_id,
        "nonce": nonce,
        "now": now,
        "expires_before": expires_before,
        "chat_id": chat_id,
        "message_id": message_id,
    }
    if conn.execute(_CLAIM_CLARIFY, params).rowcount == 1:
        conn.execute(
            _APPEND_EVENT,
            {
                "kind": EventKind.CLARIFY_ANSWERED.value,
                "message": f"user {user_id} chose: {choice}",
                "at": now,
                "run_id": run_id,
            },
        )
        result = ClaimResult.OK
    else:
        row = conn.execute(
            f"SELECT user_id, status, clarify_nonce, {_CHOICES_WHERE} FROM runs WHERE id = :run_id",
            params,
        ).fetchone()
        if row is None:
            return ClaimResult.NOT_FOUND, None, []
        if int(row[0]) != user_id:
            return ClaimResult.NOT_ALLOWED, None, []
        if row[1] != RunStatus.NEEDS_CLARIFICATION.value or row[2] is None:
            result = ClaimResult.ALREADY_HANDLED
        elif (nonce is not None and row[2] != nonce) or not row[3]:
            result = ClaimResult.STALE  # other data, or replayed elsewhere: nothing used up
        else:
            result = ClaimResult.EXPIRED
    row = conn.execute(_SELECT_RUN, (run_id,)).fetchone()
    return result, row, conn.execute(_SELECT_STEPS, (run_id,)).fetchall()


# -- the claim, on the database thread -----------------------------------------------------

# The approvals other staff members (not the customer) recorded on the run's open pause.
_OTHER_APPROVALS = (
    "(SELECT count(*) FROM staff_approvals a WHERE a.run_id = runs.id"
    " AND a.nonce = runs.pause_nonce AND a.staff_id <> :user_id AND a.staff_id <> runs.user_id)"
)
_CLAIM = (
    # The one conditional UPDATE that decides who wins; everything else explains a loss.
    "UPDATE runs SET status = 'running', pause_nonce = NULL, updated_at = :now,"
    " lease_owner = :lease_owner, lease_until = :lease_until"
    " WHERE id = :run_id AND status = 'paused'"
    # The run's customer decides a customer's pause; a staff member (checked by the caller,
    # `staff`) a staff pause. Neither can decide the other's (issue 14).
    " AND ((:staff = 0 AND user_id = :user_id AND coalesce(pause_approver, 'customer') = 'customer')"
    "      OR (:staff = 1 AND pause_approver = 'staff'"
    # Never on their own order; four eyes: the other approvals were recorded, on this
    # pause, by other staff members who are not the customer either (issue 20).
    "          AND user_id <> :user_id AND " + _OTHER_APPROVALS + " >= :approvals - 1))"
    " AND pause_nonce IS NOT NULL AND pause_nonce = coalesce(:nonce, pause_nonce)"
    # Pressed on the message the pause's prompt was bound to; or, while none is bound (the
    # process died between sending it and recording it), on a message in the run's chat
    # (or the staff group's, for staff) carrying the pause's nonce.
    " AND (:message_id IS NULL"
    "      OR (prompt_chat_id = :chat_id AND prompt_message_id = :message_id)"
    "      OR (prompt_message_id IS NULL AND (chat_id = :chat_id OR pause_approver = 'staff')))"
    " AND paused_at >= :expires_before"
)
_CLAIM_APPROVAL = (
    "UPDATE steps SET approval_approved = :approved, approval_by = :user_id, approval_at = :now"
    " WHERE run_id = :run_id AND id = (SELECT pause_step_id FROM runs WHERE id = :run_id)"
)
_CLAIM_EVENT = (
    "INSERT INTO events (run_id, trace_id, kind, step_id, tool, status, decision,"
    " message, at) SELECT id, trace_id, :kind, pause_step_id, pause_tool, 'paused',"
    " :decision, :message, :now FROM runs WHERE id = :run_id"
)
_EXPIRE = (
    "UPDATE runs SET status = 'expired', pause_nonce = NULL, updated_at = :now,"
    " lease_owner = NULL, lease_until = NULL"
    " WHERE id = :run_id AND status = 'paused'"
)

ClaimRows = tuple[ClaimResult, sqlite3.Row | None, list[sqlite3.Row]]


def _claim_in_transaction(
    conn: sqlite3.Connection,
    *,
    run_id: str,
    user_id: int,
    approved: bool,
    nonce: str | None,
    prompt: PromptRef | None,
    now: str | None,
    expires_before: str | None,
    lease: dict[str, str | None],
    staff: bool = False,
    approvals: int = 1,
) -> ClaimRows:
    """The whole claim, on the database thread inside one (group) transaction.

    Also reads the run as the claim left it (for the run's own customer only), so the
    caller needs no second round trip.
    """
    result = _decide_claim(
        conn, run_id, user_id, approved, nonce, prompt, now, expires_before, lease, staff, approvals
    )
    if result in (ClaimResult.NOT_FOUND, ClaimResult.NOT_ALLOWED):
        return result, None, []
    row = conn.execute(_SELECT_RUN, (run_id,)).fetchone()
    steps = conn.execute(_SELECT_STEPS, (run_id,)).fetchall()
    return result, row, steps


def _decide_claim(
    conn: sqlite3.Connection,
    run_id: str,
    user_id: int,
    approved: bool,
    nonce: str | None,
    prompt: PromptRef | None,
    now: str | None,
    expires_before: str | None,
    lease: dict[str, str | None],
    staff: bool = False,
    approvals: int = 1,
) -> ClaimResult:
    claim = {
        **lease,
        "now": now,
        "run_id": run_id,
        "user_id": user_id,
        "staff": int(staff),
        "approvals": approvals,
        "nonce": nonce,
        "chat_id": prompt.chat_id if prompt else None,
        "message_id": prompt.message_id if prompt else None,
        "expires_before": expires_before,
    }
    if conn.execute(_CLAIM, claim).rowcount == 1:
        conn.execute(
            _CLAIM_APPROVAL,
            {"approved": int(approved), "user_id": user_id, "now": now, "run_id": run_id},
        )
        conn.execute(
            _CLAIM_EVENT,
            {
                "kind": EventKind.DECISION_CLAIMED.value,
                "decision": "approved" if approved else "declined",
                "message": f"{'confirmed' if approved else 'declined'} by"
                f" {'staff' if staff else 'user'} {user_id}",
                "now": now,
                "run_id": run_id,
            },
        )
        return ClaimResult.OK
    row = conn.execute(
        "SELECT user_id, status, pause_nonce, prompt_chat_id, prompt_message_id, pause_approver,"
        f" chat_id, {_OTHER_APPROVALS} FROM runs WHERE id = :run_id",
        {"run_id": run_id, "user_id": user_id},
    ).fetchone()
    if row is None:
        return ClaimResult.NOT_FOUND
    if not may_claim(
        row[0],
        row[1],
        row[5],
        user_id=user_id,
        staff=staff,
        approvals=approvals,
        other_approvals=int(row[7]),
    ):
        return ClaimResult.NOT_ALLOWED
    if row[1] != RunStatus.PAUSED.value or row[2] is None:
        return ClaimResult.ALREADY_HANDLED
    if nonce is not None and row[2] != nonce:
        return ClaimResult.STALE
    pressed = None if prompt is None else (prompt.chat_id, prompt.message_id)
    if pressed is not None and not pressed_on_the_prompt((row[3], row[4]), row[6], row[5], pressed):
        return ClaimResult.STALE  # its data replayed onto another message: expire nothing
    conn.execute(_EXPIRE, {"now": now, "run_id": run_id})
    return ClaimResult.EXPIRED
