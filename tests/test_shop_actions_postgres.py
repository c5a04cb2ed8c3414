"""The demo shop's returns, refunds, address changes and parcel tracking on PostgreSQL.

tests/test_shop_actions.py states what each change does; its tests that speak only
through the tools and the backend run here again, unchanged, against `PgShop` (the
`shop` fixture below replaces SQLite's). What those tests read from SQLite directly, and
what only several processes can show (two keys racing for one order, the ledger migration
of an old schema), is written here for both backends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime
from decimal import Decimal
from typing import Any

import psycopg
import pytest

from agent_core.execution.tools import ToolRegistry
from storage.pg_schema import PG_MIGRATIONS
from storage.shop.tools import ActionResult, shop_tools
from storage.store import DemoShop
from tests.storage_backends import Backend
from tests.test_shop_actions import (  # noqa: F401  (collected again, on PostgreSQL)
    NOW,
    clock,
    ctx,
    ok,
    test_a_bad_address_never_reaches_the_shop,
    test_a_bad_amount_never_reaches_the_shop,
    test_a_change_of_an_unknown_or_foreign_order_does_nothing,
    test_a_key_used_for_another_change_is_a_bug_not_a_replay,
    test_address_of_a_pending_order_changes_once,
    test_address_refused_once_the_order_shipped,
    test_refund_refused_with_the_reason,
    test_refund_up_to_what_was_paid,
    test_return_refused_with_the_reason,
    test_the_return_window_closes_seven_days_after_delivery,
    test_track_a_parcel,
    test_track_without_events_unknown_or_foreign,
    tools,
)

DEMO_USER = 10001


@pytest.fixture
async def shop(postgres_backend: Backend, clock: list[datetime]) -> AsyncIterator[DemoShop]:
    backend: DemoShop = await postgres_backend.open_shop(clock=lambda: clock[0])
    yield backend
    await backend.close()


@pytest.fixture
async def any_shop(store_backend: Backend, clock: list[datetime]) -> AsyncIterator[DemoShop]:
    backend: DemoShop = await store_backend.open_shop(clock=lambda: clock[0])
    yield backend
    await backend.close()


def rows(backend: Backend, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    observer = backend.observer()
    try:
        return [tuple(r) for r in observer.execute(sql, params).fetchall()]
    finally:
        observer.close()


async def test_a_return_is_written_once_with_its_number(
    any_shop: DemoShop, store_backend: Backend
) -> None:
    outcome = await any_shop.request_return("a1002", DEMO_USER, "Too small", "run-1:s2")
    assert outcome.result is ActionResult.DONE
    again = await any_shop.request_return("A1002", DEMO_USER, "Too small", "run-1:s2")
    assert again.result is ActionResult.REPLAYED and again.data == outcome.data
    assert rows(store_backend, "SELECT id, order_id, reason FROM shop_returns") == [
        ("R-A1002-1", "A1002", "Too small")
    ]
    assert rows(store_backend, "SELECT order_id FROM shop_cancellations") == []
    assert await any_shop.ledger_count("request_return") == 1


async def test_refunds_racing_from_two_processes_never_exceed_what_was_paid(
    store_backend: Backend, clock: list[datetime]
) -> None:
    """59.00 paid for A1002: of two 40.00 refunds with different keys, one is made."""
    first = await store_backend.open_shop(clock=lambda: clock[0])
    second = await store_backend.open_shop(clock=lambda: clock[0])
    try:
        outcomes = await asyncio.gather(
            *(
                shop.request_refund("A1002", DEMO_USER, Decimal(40), None, f"run-{i}:s1")
                for i, shop in enumerate((first, second, first, second))
            )
        )
    finally:
        await first.close()
        await second.close()
    assert sorted(o.result.value for o in outcomes) == ["done", "refused", "refused", "refused"]
    assert {o.reason for o in outcomes if o.result is ActionResult.REFUSED} == {"amount_too_high"}
    assert rows(store_backend, "SELECT order_id, amount_cents FROM shop_refunds") == [
        ("A1002", 4000)
    ]


async def test_one_key_from_two_processes_acts_once(
    store_backend: Backend, clock: list[datetime]
) -> None:
    first = await store_backend.open_shop(clock=lambda: clock[0])
    second = await store_backend.open_shop(clock=lambda: clock[0])
    address = "7 Harbour Road, Ningbo"
    try:
        outcomes = await asyncio.gather(
            *(s.change_address("A1003", DEMO_USER, address, "run-9:s1") for s in (first, second))
        )
        assert sorted(o.result.value for o in outcomes) == ["done", "replayed"]
        assert await first.ledger_count() == 1
    finally:
        await first.close()
        await second.close()


async def test_the_tools_run_on_either_backend(any_shop: DemoShop) -> None:
    tools = ToolRegistry(shop_tools(any_shop))
    data = ok(await tools.call("track_parcel", {"order_id": "A1005"}, ctx()))
    assert data["carrier"] == "JD Logistics"


def test_old_cancellations_move_into_the_one_ledger_on_postgres(
    postgres_backend: Backend,
) -> None:
    """PostgreSQL's migration 2 does what SQLite's 6 does to a cancellation kept before."""
    with psycopg.connect(postgres_backend.url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        conn.execute(PG_MIGRATIONS[0])
        conn.execute("INSERT INTO schema_version (version) VALUES (1)")
        conn.execute(
            "INSERT INTO shop_cancellations VALUES ('r1:s2', 'A1003', 10001, '{}', '2026-01-01')"
        )
    asyncio.run(postgres_backend.migrate())
    assert rows(postgres_backend, "SELECT idempotency_key, tool, order_id FROM shop_ledger") == [
        ("r1:s2", "cancel_order", "A1003")
    ]
    assert rows(
        postgres_backend, "SELECT idempotency_key, order_id, user_id FROM shop_cancellations"
    ) == [("r1:s2", "A1003", 10001)]


__all__ = ["NOW", "clock", "tools"]
