"""Handoffs to a person (issue 14): who was handed off, when, why, and every relayed message.

Three tables, the same on SQLite and PostgreSQL (one class: the store hands it its own way
to read and to write, as `storage.history.History` gets its reader):

* `handoffs`: one row per handoff (customer, trigger, run, opened/closed, who closed it,
  messages each way, the first staff reply). A partial unique index allows ONE open
  handoff per customer chat, so two triggers at once (a button press and "转人工") open
  one handoff: the second insert does nothing and both callers read the same row back.
* `handoff_topics`: the customer chat ↔ forum topic mapping, kept across handoffs (a
  customer's later handoffs reuse their topic) and replaced when staff deleted the topic.
* `handoff_relays`: one row per message to copy, written BEFORE the copy and marked
  `copied_at` after it. A crash between the two leaves an unmarked row that the bot copies
  on its next start (`pending_relays`); a relayed message Telegram delivers again (its
  update was not acknowledged before the crash) finds its row and is not copied twice. The
  one window left is a crash after Telegram made the copy and before the mark: that copy
  is made again on start (at least once; a person reads a repeated line, never a lost one).
  A copy Telegram refuses for good (the customer blocked the bot, the message is gone) is
  given up with its reason (`give_up`), not retried at every start.

Every write is one transaction through the store's write queue; nothing here deletes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from agent_core.models import PromptRef
from storage.db import Statements
from storage.history import Reader, ReadRow
from storage.tables import parse_ts, ts

Writer = Callable[[Statements], Awaitable[None]]


class Trigger(StrEnum):
    """What opened a handoff."""

    INTENT = "intent"  # the planner understood "I want a person" ("转人工")
    BUTTON = "button"  # the customer pressed "Talk to a person" under an answer
    COMMAND = "command"  # the customer sent /human
    REOPEN = "reopen"  # staff sent /reopen in the customer's topic


class Direction(StrEnum):
    TO_STAFF = "to_staff"
    TO_CUSTOMER = "to_customer"


@dataclass(frozen=True)
class Handoff:
    id: str
    customer_chat_id: int
    customer_user_id: int
    customer_name: str
    language: str
    trigger: Trigger
    run_id: str | None
    opened_at: datetime
    topic_id: int | None = None
    closed_at: datetime | None = None
    closed_by: int | None = None
    to_staff: int = 0
    to_customer: int = 0
    first_staff_reply_at: datetime | None = None

    @property
    def is_open(self) -> bool:
        return self.closed_at is None


@dataclass(frozen=True)
class Topic:
    """A customer's forum topic in the staff group."""

    customer_chat_id: int
    staff_chat_id: int
    topic_id: int
    name: str


@dataclass(frozen=True)
class Relay:
    """One message to copy: from (`from_chat_id`, `message_id`) to (`to_chat_id`, topic).

    `variant` tells copies of one message apart: 0 for the message as sent, the
    `update_id` of the update that brought an edit (an edit is relayed as a marked new
    message; `bot.handoff.relay_variant` says why not its whole-second edit date). Rows
    written before issue 20 keep their edit dates: no key of theirs is read again."""

    handoff_id: str
    direction: Direction
    from_chat_id: int
    message_id: int
    variant: int
    to_chat_id: int
    to_topic_id: int | None
    text: str | None  # an edit's new text, sent marked as an edit (None: copy the message)
    received_at: datetime
    copied_at: datetime | None = None
    gave_up_at: datetime | None = None
    failure: str | None = None
    # A copied media message's new caption (the sender's name before the original one);
    # None: the caption stays as sent.
    caption: str | None = None


_HANDOFF_COLUMNS = (
    "id, customer_chat_id, customer_user_id, customer_name, language, trigger, run_id,"
    " opened_at, topic_id, closed_at, closed_by, to_staff, to_customer, first_staff_reply_at"
)
_RELAY_COLUMNS = (
    "handoff_id, direction, from_chat_id, message_id, variant, to_chat_id, to_topic_id,"
    " text, received_at, copied_at, gave_up_at, failure, caption"
)
_OPEN = (
    f"INSERT INTO handoffs ({_HANDOFF_COLUMNS}) VALUES (:id, :customer_chat_id,"
    " :customer_user_id, :customer_name, :language, :trigger, :run_id, :opened_at, :topic_id,"
    " NULL, NULL, 0, 0, NULL) ON CONFLICT DO NOTHING"
)
_CLOSE = "UPDATE handoffs SET closed_at = :at, closed_by = :by WHERE id = :id AND closed_at IS NULL"
_SET_TOPIC = "UPDATE handoffs SET topic_id = :topic_id WHERE id = :id"
_MAP_TOPIC = (
    "INSERT INTO handoff_topics (customer_chat_id, staff_chat_id, topic_id, name)"
    " VALUES (:customer_chat_id, :staff_chat_id, :topic_id, :name)"
    " ON CONFLICT (customer_chat_id) DO UPDATE SET staff_chat_id = excluded.staff_chat_id,"
    " topic_id = excluded.topic_id, name = excluded.name"
)
_RECORD_RELAY = (
    f"INSERT INTO handoff_relays ({_RELAY_COLUMNS}) VALUES (:handoff_id, :direction,"
    " :from_chat_id, :message_id, :variant, :to_chat_id, :to_topic_id, :text, :received_at,"
    " NULL, NULL, NULL, :caption) ON CONFLICT DO NOTHING"
)
_MARK_RELAY = (
    "UPDATE handoff_relays SET copied_at = :at"
    " WHERE from_chat_id = :from_chat_id AND message_id = :message_id AND variant = :variant"
    " AND copied_at IS NULL AND gave_up_at IS NULL"
)
_GIVE_UP = (
    "UPDATE handoff_relays SET gave_up_at = :at, failure = :failure"
    " WHERE from_chat_id = :from_chat_id AND message_id = :message_id AND variant = :variant"
    " AND copied_at IS NULL AND gave_up_at IS NULL"
)
# Counted in the same transaction as the mark, and only when the mark changed a row: the
# counts are the copies made, whatever was delivered twice.
_COUNT_TO_STAFF = (
    "UPDATE handoffs SET to_staff = to_staff + 1 WHERE id = :handoff_id AND EXISTS"
    " (SELECT 1 FROM handoff_relays WHERE from_chat_id = :from_chat_id"
    " AND message_id = :message_id AND variant = :variant AND copied_at = :at)"
)
_COUNT_TO_CUSTOMER = (
    "UPDATE handoffs SET to_customer = to_customer + 1,"
    " first_staff_reply_at = COALESCE(first_staff_reply_at, :at)"
    " WHERE id = :handoff_id AND EXISTS"
    " (SELECT 1 FROM handoff_relays WHERE from_chat_id = :from_chat_id"
    " AND message_id = :message_id AND variant = :variant AND copied_at = :at)"
)


# A four-eyes approval counts only for the open staff pause with this nonce, pressed on
# the message its prompt is bound to (any message of the staff group while none is bound,
# as the claim), before it expired, and never by the run's own customer (issue 20): the
# same conditions as the claim (`storage.runs.sqlite`), in this one conditional insert.
_APPROVE = (
    "INSERT INTO staff_approvals (run_id, nonce, staff_id, at)"
    " SELECT id, pause_nonce, :staff_id, :at FROM runs"
    " WHERE id = :run_id AND status = 'paused' AND pause_approver = 'staff'"
    " AND pause_nonce IS NOT NULL AND pause_nonce = :nonce AND user_id <> :staff_id"
    " AND ((prompt_chat_id = :chat_id AND prompt_message_id = :message_id)"
    "      OR prompt_message_id IS NULL)"
    " AND paused_at >= :expires_before"
    " ON CONFLICT DO NOTHING"
)


_REMEMBER = (
    "INSERT INTO people (user_id, first_name, username, seen_at)"
    " VALUES (:user_id, :first_name, :username, :at)"
    " ON CONFLICT (user_id) DO UPDATE SET first_name = excluded.first_name,"
    " username = excluded.username, seen_at = excluded.seen_at"
)


def display_name(first_name: str | None, username: str | None, user_id: int) -> str:
    """How staff read a person: "Ada (@ada)", "Ada", "@ada"; the id only when nothing
    else is known ("user 10001")."""
    first = " ".join((first_name or "").split())
    handle = f"@{username}" if username else ""
    if first and handle:
        return f"{first} ({handle})"
    return first or handle or f"user {user_id}"


class Handoffs:
    """Handoffs, topics and relays on the run database (`store.handoffs`, both backends)."""

    # -- people (issue 23 #8) ------------------------------------------------------------

    async def remember_person(
        self, user_id: int, first_name: str | None, username: str | None, at: datetime
    ) -> None:
        """Who `user_id` is, as last seen writing or pressing (customers and staff)."""
        params = {
            "user_id": user_id,
            "first_name": first_name,
            "username": username,
            "at": ts(at),
        }
        await self._write([(_REMEMBER, params)])

    async def name_of(self, user_id: int) -> str:
        """`display_name` of a person as last seen ("user 10001" if never seen)."""
        rows = await self._read(
            "SELECT first_name, username FROM people WHERE user_id = ?", (user_id,)
        )
        if not rows:
            return display_name(None, None, user_id)
        return display_name(rows[0]["first_name"], rows[0]["username"], user_id)

    def __init__(self, read: Reader, write: Writer) -> None:
        self._read = read
        self._write = write

    # -- handoffs ----------------------------------------------------------------------------

    async def open(self, handoff: Handoff) -> tuple[Handoff, bool]:
        """Open `handoff` unless its customer has one open already.

        Returns the customer's open handoff and whether it is the one just opened (False:
        one was open before, and is returned unchanged)."""
        params = {
            "id": handoff.id,
            "customer_chat_id": handoff.customer_chat_id,
            "customer_user_id": handoff.customer_user_id,
            "customer_name": handoff.customer_name,
            "language": handoff.language,
            "trigger": handoff.trigger.value,
            "run_id": handoff.run_id,
            "opened_at": ts(handoff.opened_at),
            "topic_id": handoff.topic_id,
        }
        await self._write([(_OPEN, params)])
        current = await self.open_for(handoff.customer_chat_id)
        assert current is not None, "an open handoff cannot vanish (nothing deletes)"
        return current, current.id == handoff.id

    async def open_for(self, customer_chat_id: int) -> Handoff | None:
        """The customer's open handoff, if any (the partial unique index holds at most one)."""
        rows = await self._read(
            f"SELECT {_HANDOFF_COLUMNS} FROM handoffs"
            " WHERE customer_chat_id = ? AND closed_at IS NULL",
            (customer_chat_id,),
        )
        return _handoff(rows[0]) if rows else None

    async def get(self, handoff_id: str) -> Handoff | None:
        rows = await self._read(
            f"SELECT {_HANDOFF_COLUMNS} FROM handoffs WHERE id = ?", (handoff_id,)
        )
        return _handoff(rows[0]) if rows else None

    async def for_run(self, run_id: str) -> list[Handoff]:
        """The handoffs a run led to (the console's run page)."""
        rows = await self._read(
            f"SELECT {_HANDOFF_COLUMNS} FROM handoffs WHERE run_id = ? ORDER BY opened_at",
            (run_id,),
        )
        return [_handoff(r) for r in rows]

    async def all_open(self) -> list[Handoff]:
        rows = await self._read(
            f"SELECT {_HANDOFF_COLUMNS} FROM handoffs WHERE closed_at IS NULL ORDER BY opened_at",
            (),
        )
        return [_handoff(r) for r in rows]

    async def set_topic(self, handoff_id: str, topic_id: int) -> None:
        await self._write([(_SET_TOPIC, {"id": handoff_id, "topic_id": topic_id})])

    async def of_customer(self, customer_chat_id: int) -> list[Handoff]:
        """A customer's handoffs, oldest first."""
        rows = await self._read(
            f"SELECT {_HANDOFF_COLUMNS} FROM handoffs WHERE customer_chat_id = ? ORDER BY opened_at",
            (customer_chat_id,),
        )
        return [_handoff(r) for r in rows]

    async def close(self, handoff_id: str, *, by: int | None, at: datetime) -> Handoff | None:
        """Close the handoff if it is open; returns it as closed by THIS call, else None
        (already closed: a second /close or Close press changes nothing). `by` None: nobody
        could take it (no staff chat), closed as it was recorded."""
        await self._write([(_CLOSE, {"id": handoff_id, "by": by, "at": ts(at)})])
        closed = await self.get(handoff_id)
        if closed is None or closed.closed_at != at or closed.closed_by != by:
            return None
        return closed

    # -- topics ------------------------------------------------------------------------------

    async def map_topic(self, topic: Topic) -> None:
        """The customer's topic is `topic` from now on (a new or a recreated one)."""
        params = {
            "customer_chat_id": topic.customer_chat_id,
            "staff_chat_id": topic.staff_chat_id,
            "topic_id": topic.topic_id,
            "name": topic.name,
        }
        await self._write([(_MAP_TOPIC, params)])

    async def topic_of(self, customer_chat_id: int) -> Topic | None:
        rows = await self._read(
            "SELECT customer_chat_id, staff_chat_id, topic_id, name FROM handoff_topics"
            " WHERE customer_chat_id = ?",
            (customer_chat_id,),
        )
        return _topic(rows[0]) if rows else None

    async def customer_of(self, staff_chat_id: int, topic_id: int) -> Topic | None:
        """Whose topic this is (a staff message's way back to the customer)."""
        rows = await self._read(
            "SELECT customer_chat_id, staff_chat_id, topic_id, name FROM handoff_topics"
            " WHERE staff_chat_id = ? AND topic_id = ?",
            (staff_chat_id, topic_id),
        )
        return _topic(rows[0]) if rows else None

    # -- four eyes (staff approval) -----------------------------------------------------------

    async def approve_once(
        self,
        run_id: str,
        nonce: str,
        staff_id: int,
        at: datetime,
        *,
        prompt: PromptRef,
        expires_before: datetime,
    ) -> list[int]:
        """Record a staff member's approval of the pause `nonce`, pressed on `prompt` (once
        per person), and return every staff member who approved it so far, in order.
        Nothing is recorded unless the pause is open, its prompt is that message, it has not
        expired and the run is not `staff_id`'s own (so `staff_id` is missing from the list).
        Written before it is read, so of two approvals at once the later reader sees both
        (and decides)."""
        params = {
            "run_id": run_id,
            "nonce": nonce,
            "staff_id": staff_id,
            "at": ts(at),
            "chat_id": prompt.chat_id,
            "message_id": prompt.message_id,
            "expires_before": ts(expires_before),
        }
        await self._write([(_APPROVE, params)])
        return await self.approvals_of(run_id, nonce)

    async def approvals_of(self, run_id: str, nonce: str) -> list[int]:
        """The staff members who approved the pause `nonce` so far (four eyes)."""
        rows = await self._read(
            "SELECT staff_id FROM staff_approvals WHERE run_id = ? AND nonce = ?"
            " ORDER BY at, staff_id",
            (run_id, nonce),
        )
        return [int(r[0]) for r in rows]

    # -- relays ------------------------------------------------------------------------------

    async def record_relay(self, relay: Relay) -> Relay:
        """Record a message to copy (before copying it); returns the stored row, which is an
        earlier one when this message was recorded before (delivered twice)."""
        params = {
            "handoff_id": relay.handoff_id,
            "direction": relay.direction.value,
            "from_chat_id": relay.from_chat_id,
            "message_id": relay.message_id,
            "variant": relay.variant,
            "to_chat_id": relay.to_chat_id,
            "to_topic_id": relay.to_topic_id,
            "text": relay.text,
            "received_at": ts(relay.received_at),
            "caption": relay.caption,
        }
        await self._write([(_RECORD_RELAY, params)])
        stored = await self.relay_of(relay.from_chat_id, relay.message_id, relay.variant)
        assert stored is not None, "a recorded relay cannot vanish (nothing deletes)"
        return stored

    async def relay_of(self, from_chat_id: int, message_id: int, variant: int) -> Relay | None:
        rows = await self._read(
            f"SELECT {_RELAY_COLUMNS} FROM handoff_relays"
            " WHERE from_chat_id = ? AND message_id = ? AND variant = ?",
            (from_chat_id, message_id, variant),
        )
        return _relay(rows[0]) if rows else None

    async def mark_copied(self, relay: Relay, at: datetime) -> None:
        """The copy was made: mark the row and count it on its handoff (once)."""
        params = {
            "handoff_id": relay.handoff_id,
            "from_chat_id": relay.from_chat_id,
            "message_id": relay.message_id,
            "variant": relay.variant,
            "at": ts(at),
        }
        count = _COUNT_TO_STAFF if relay.direction is Direction.TO_STAFF else _COUNT_TO_CUSTOMER
        await self._write([(_MARK_RELAY, params), (count, params)])

    async def give_up(self, relay: Relay, at: datetime, failure: str) -> None:
        """Telegram refused the copy for good: settle the row without a copy (not counted,
        never retried), keeping why."""
        params = {
            "from_chat_id": relay.from_chat_id,
            "message_id": relay.message_id,
            "variant": relay.variant,
            "at": ts(at),
            "failure": failure[:300],
        }
        await self._write([(_GIVE_UP, params)])

    async def pending_relays(self) -> list[Relay]:
        """Recorded and never marked copied: what a crash interrupted, oldest first."""
        rows = await self._read(
            f"SELECT {_RELAY_COLUMNS} FROM handoff_relays"
            " WHERE copied_at IS NULL AND gave_up_at IS NULL"
            " ORDER BY received_at, message_id",
            (),
        )
        return [_relay(r) for r in rows]


def _handoff(row: ReadRow) -> Handoff:
    opened_at = parse_ts(row["opened_at"])
    assert opened_at is not None
    return Handoff(
        id=str(row["id"]),
        customer_chat_id=int(row["customer_chat_id"]),
        customer_user_id=int(row["customer_user_id"]),
        customer_name=str(row["customer_name"]),
        language=str(row["language"]),
        trigger=Trigger(row["trigger"]),
        run_id=row["run_id"],
        opened_at=opened_at,
        topic_id=_int_or_none(row["topic_id"]),
        closed_at=parse_ts(row["closed_at"]),
        closed_by=_int_or_none(row["closed_by"]),
        to_staff=int(row["to_staff"]),
        to_customer=int(row["to_customer"]),
        first_staff_reply_at=parse_ts(row["first_staff_reply_at"]),
    )


def _topic(row: ReadRow) -> Topic:
    return Topic(
        customer_chat_id=int(row["customer_chat_id"]),
        staff_chat_id=int(row["staff_chat_id"]),
        topic_id=int(row["topic_id"]),
        name=str(row["name"]),
    )


def _relay(row: ReadRow) -> Relay:
    received_at = parse_ts(row["received_at"])
    assert received_at is not None
    return Relay(
        handoff_id=str(row["handoff_id"]),
        direction=Direction(row["direction"]),
        from_chat_id=int(row["from_chat_id"]),
        message_id=int(row["message_id"]),
        variant=int(row["variant"]),
        to_chat_id=int(row["to_chat_id"]),
        to_topic_id=_int_or_none(row["to_topic_id"]),
        text=row["text"],
        received_at=received_at,
        copied_at=parse_ts(row["copied_at"]),
        gave_up_at=parse_ts(row["gave_up_at"]),
        failure=row["failure"],
        caption=row["caption"],
    )


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def pg_writer(submit: Callable[[Any], Awaitable[Any]]) -> Writer:
    """A `Writer` for PostgreSQL: the same statements in psycopg's spelling, through the
    store's write queue (`submit`). Imported lazily, like every PostgreSQL module."""
    from storage.pg import execute_statements, pg_sql

    async def write(statements: Statements) -> None:
        await submit(execute_statements([(pg_sql(sql), params) for sql, params in statements]))

    return write
