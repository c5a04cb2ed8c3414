"""Handoff storage (issue 14), one conformance suite on SQLite and PostgreSQL: one open
handoff per customer, closing once, the topic mapping, relays recorded before the copy and
counted once, and the staff figures (per day, median first reply)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta

import pytest

from storage.handoffs import Direction, Handoff, Relay, Topic, Trigger
from storage.store import RunStore
from tests.storage_backends import Backend

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
async def store(store_backend: Backend) -> AsyncIterator[RunStore]:
    opened: RunStore = await store_backend.open_store()
    try:
        yield opened
    finally:
        await opened.close()


def handoff(hid: str, chat: int = 501, *, at: datetime = T0, run: str | None = "r1") -> Handoff:
    return Handoff(
        id=hid,
        customer_chat_id=chat,
        customer_user_id=chat,
        customer_name="Ada",
        language="en",
        trigger=Trigger.BUTTON,
        run_id=run,
        opened_at=at,
    )


def relay(hid: str, message_id: int, direction: Direction, *, variant: int = 0) -> Relay:
    return Relay(
        handoff_id=hid,
        direction=direction,
        from_chat_id=501 if direction is Direction.TO_STAFF else -100,
        message_id=message_id,
        variant=variant,
        to_chat_id=-100 if direction is Direction.TO_STAFF else 501,
        to_topic_id=7 if direction is Direction.TO_STAFF else None,
        text=None,
        received_at=T0,
    )


async def test_one_open_handoff_per_customer(store: RunStore) -> None:
    first, new = await store.handoffs.open(handoff("h1"))
    assert new and first.id == "h1" and first.is_open and first.trigger is Trigger.BUTTON
    second, new = await store.handoffs.open(handoff("h2"))
    assert not new and second.id == "h1"  # the open one, unchanged
    other, new = await store.handoffs.open(handoff("h3", chat=502))
    assert new and other.id == "h3"
    assert [h.id for h in await store.handoffs.all_open()] == ["h1", "h3"]


async def test_close_once_then_a_new_handoff_may_open(store: RunStore) -> None:
    await store.handoffs.open(handoff("h1"))
    closed = await store.handoffs.close("h1", by=900, at=T0 + timedelta(minutes=5))
    assert closed is not None and closed.closed_by == 900 and not closed.is_open
    assert await store.handoffs.close("h1", by=901, at=T0 + timedelta(minutes=6)) is None
    assert (await store.handoffs.get("h1")).closed_by == 900  # type: ignore[union-attr]
    assert await store.handoffs.open_for(501) is None
    again, new = await store.handoffs.open(handoff("h2", at=T0 + timedelta(hours=1)))
    assert new and again.id == "h2"
    assert [h.id for h in await store.handoffs.for_run("r1")] == ["h1", "h2"]


async def test_topic_mapping_both_ways_and_replaced(store: RunStore) -> None:
    await store.handoffs.map_topic(Topic(501, -100, 7, "Ada · 501"))
    assert (await store.handoffs.topic_of(501)) == Topic(501, -100, 7, "Ada · 501")
    assert (await store.handoffs.customer_of(-100, 7)) == Topic(501, -100, 7, "Ada · 501")
    await store.handoffs.map_topic(Topic(501, -100, 9, "Ada · 501"))  # recreated
    assert (await store.handoffs.topic_of(501)).topic_id == 9  # type: ignore[union-attr]
    assert await store.handoffs.customer_of(-100, 7) is None
    await store.handoffs.open(handoff("h1"))
    await store.handoffs.set_topic("h1", 9)
    assert (await store.handoffs.get("h1")).topic_id == 9  # type: ignore[union-attr]


async def test_relay_recorded_before_copy_counted_once(store: RunStore) -> None:
    await store.handoffs.open(handoff("h1"))
    recorded = await store.handoffs.record_relay(relay("h1", 11, Direction.TO_STAFF))
    assert recorded.copied_at is None
    assert [r.message_id for r in await store.handoffs.pending_relays()] == [11]
    # Delivered twice before the copy: still one row, still pending.
    again = await store.handoffs.record_relay(relay("h1", 11, Direction.TO_STAFF))
    assert again.copied_at is None and len(await store.handoffs.pending_relays()) == 1
    await store.handoffs.mark_copied(recorded, T0 + timedelta(seconds=1))
    await store.handoffs.mark_copied(recorded, T0 + timedelta(seconds=2))  # a second mark
    assert await store.handoffs.pending_relays() == []
    after = await store.handoffs.record_relay(relay("h1", 11, Direction.TO_STAFF))
    assert after.copied_at == T0 + timedelta(seconds=1)
    current = await store.handoffs.get("h1")
    assert current is not None and (current.to_staff, current.to_customer) == (1, 0)
    assert current.first_staff_reply_at is None


async def test_a_relay_given_up_is_settled_uncounted(store: RunStore) -> None:
    await store.handoffs.open(handoff("h1"))
    row = await store.handoffs.record_relay(relay("h1", 31, Direction.TO_CUSTOMER))
    await store.handoffs.give_up(row, T0, "Forbidden: bot was blocked by the user")
    assert await store.handoffs.pending_relays() == []
    settled = await store.handoffs.relay_of(-100, 31, 0)
    assert settled is not None and settled.gave_up_at == T0 and settled.copied_at is None
    assert settled.failure == "Forbidden: bot was blocked by the user"
    await store.handoffs.mark_copied(row, T0)  # a late mark changes nothing
    current = await store.handoffs.get("h1")
    assert current is not None and current.to_customer == 0
    assert current.first_staff_reply_at is None


async def test_staff_replies_counted_and_first_reply_kept(store: RunStore) -> None:
    await store.handoffs.open(handoff("h1"))
    for n, seconds in ((21, 30), (22, 90)):
        row = await store.handoffs.record_relay(relay("h1", n, Direction.TO_CUSTOMER))
        await store.handoffs.mark_copied(row, T0 + timedelta(seconds=seconds))
    edit = await store.handoffs.record_relay(relay("h1", 21, Direction.TO_CUSTOMER, variant=5))
    assert edit.copied_at is None  # an edit is its own relay
    current = await store.handoffs.get("h1")
    assert current is not None and current.to_customer == 2
    assert current.first_staff_reply_at == T0 + timedelta(seconds=30)


async def test_per_day_and_median_first_reply(store: RunStore) -> None:
    waits = {"a": 60, "b": 120, "c": 600}
    day_two = T0 + timedelta(days=1)
    for n, (hid, wait) in enumerate(waits.items()):
        opened = T0 if hid == "a" else day_two
        await store.handoffs.open(handoff(hid, chat=600 + n, at=opened))
        row = await store.handoffs.record_relay(
            Relay(hid, Direction.TO_CUSTOMER, -100, 30 + n, 0, 600 + n, None, None, opened)
        )
        await store.handoffs.mark_copied(row, opened + timedelta(seconds=wait))
    await store.handoffs.open(handoff("d", chat=700, at=day_two))  # no reply yet
    days = await store.history.handoffs_per_day(T0 - timedelta(days=1))
    assert [(d.day, d.opened) for d in days] == [(date(2026, 12, 1), 1), (date(2026, 12, 2), 3)]
    assert await store.history.median_first_reply_s(T0 - timedelta(days=1)) == 120
    assert await store.history.median_first_reply_s(day_two) == 360  # b and c
    assert await store.history.median_first_reply_s(day_two + timedelta(days=1)) is None
