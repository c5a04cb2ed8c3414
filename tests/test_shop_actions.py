"""The demo shop's returns, refunds, address changes and parcel tracking (issue 12).

Each change: done, refused (with the reason code the catalog explains), not found, not
yours, and replayed (not repeated) for the same idempotency key; arguments from customers
are refused before the backend is called.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import storage.db
from agent_core.execution.tools import ToolContext, ToolRegistry
from agent_core.models import ErrorType, ToolError, ToolOk
from storage.db import MIGRATIONS, connect
from storage.shop.sqlite import SqliteShop
from storage.shop.tools import ActionResult, shop_tools

DEMO_USER = 10001
OTHER_USER = 20002
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def ctx(user_id: int = DEMO_USER, run_id: str = "run-1", step_id: str = "s2") -> ToolContext:
    return ToolContext(user_id=user_id, trace_id="trace-1", run_id=run_id, step_id=step_id)


def ok(result: ToolOk | ToolError) -> Any:
    assert isinstance(result, ToolOk), result
    return result.data


def err(result: ToolOk | ToolError, error_type: ErrorType, code: str | None = None) -> ToolError:
    assert isinstance(result, ToolError), result
    assert result.error_type == error_type, result
    assert result.code == code, result
    return result


def rows(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture
def clock() -> list[datetime]:
    return [NOW]


@pytest.fixture
async def shop(tmp_path: Path, clock: list[datetime]) -> AsyncIterator[SqliteShop]:
    backend = await SqliteShop.open(tmp_path / "stepwise.db", clock=lambda: clock[0])
    yield backend
    await backend.close()


@pytest.fixture
def tools(shop: SqliteShop) -> ToolRegistry:
    return ToolRegistry(shop_tools(shop))


# --- request_return ------------------------------------------------------------------


async def test_return_of_a_delivered_order_gives_a_return_number_once(
    shop: SqliteShop, tools: ToolRegistry, tmp_path: Path
) -> None:
    args = {"order_id": "a1002", "reason": "Too small"}
    first = ok(await tools.call("request_return", args, ctx()))
    assert first == {"order_id": "A1002", "return_id": "R-A1002-1"}
    again = ok(await tools.call("request_return", args, ctx()))  # a retry, same key
    assert again == first
    assert await shop.ledger_count("request_return") == 1
    db = tmp_path / "stepwise.db"
    assert rows(db, "SELECT id, order_id, reason FROM shop_returns") == [
        ("R-A1002-1", "A1002", "Too small")
    ]
    # Another request (another key) for the same order is refused, not repeated.
    err(
        await tools.call("request_return", args, ctx(step_id="s9")),
        ErrorType.INVALID_ARGUMENTS,
        "already_requested",
    )


@pytest.mark.parametrize(
    ("order_id", "code"),
    [("A1001", "not_delivered"), ("A1003", "not_delivered"), ("A1006", "window_closed")],
)
async def test_return_refused_with_the_reason(
    shop: SqliteShop, tools: ToolRegistry, order_id: str, code: str
) -> None:
    err(
        await tools.call("request_return", {"order_id": order_id}, ctx()),
        ErrorType.INVALID_ARGUMENTS,
        code,
    )
    assert await shop.ledger_count() == 0


async def test_the_return_window_closes_seven_days_after_delivery(
    shop: SqliteShop, tools: ToolRegistry, clock: list[datetime]
) -> None:
    clock[0] = NOW + timedelta(days=5, hours=1)  # A1002 was delivered 2 days before NOW
    err(
        await tools.call("request_return", {"order_id": "A1002"}, ctx()),
        ErrorType.INVALID_ARGUMENTS,
        "window_closed",
    )
    clock[0] = NOW + timedelta(days=4, hours=23)
    ok(await tools.call("request_return", {"order_id": "A1002"}, ctx()))


# --- request_refund ------------------------------------------------------------------


async def test_refund_up_to_what_was_paid(shop: SqliteShop, tools: ToolRegistry) -> None:
    first = ok(await tools.call("request_refund", {"order_id": "A1002", "amount": "50"}, ctx()))
    assert first == {"order_id": "A1002", "refund_id": "F-A1002-1", "amount": "50.00"}
    assert (
        ok(await tools.call("request_refund", {"order_id": "A1002", "amount": "50"}, ctx()))
        == first
    )  # replayed: still one refund
    # 59.00 paid, 50.00 refunded: 9.01 is too much, 9.00 is the rest.
    err(
        await tools.call(
            "request_refund", {"order_id": "A1002", "amount": "9.01"}, ctx(step_id="s3")
        ),
        ErrorType.INVALID_ARGUMENTS,
        "amount_too_high",
    )
    rest = ok(
        await tools.call("request_refund", {"order_id": "A1002", "amount": 9}, ctx(step_id="s4"))
    )
    assert rest["amount"] == "9.00" and rest["refund_id"] == "F-A1002-2"
    assert await shop.ledger_count("request_refund", "A1002") == 2


@pytest.mark.parametrize(
    ("order_id", "code"),
    [("A1003", "not_shipped"), ("A1004", "already_refunded"), ("A1001", "amount_too_high")],
)
async def test_refund_refused_with_the_reason(
    shop: SqliteShop, tools: ToolRegistry, order_id: str, code: str
) -> None:
    args = {"order_id": order_id, "amount": "1000.00"}
    err(await tools.call("request_refund", args, ctx()), ErrorType.INVALID_ARGUMENTS, code)
    assert await shop.ledger_count() == 0


@pytest.mark.parametrize(
    "amount", ["0", "-5", "59.001", "abc", "NaN", "Infinity", "1e9", "", None, True]
)
async def test_a_bad_amount_never_reaches_the_shop(
    shop: SqliteShop, tools: ToolRegistry, amount: Any
) -> None:
    error = err(
        await tools.call("request_refund", {"order_id": "A1002", "amount": amount}, ctx()),
        ErrorType.INVALID_ARGUMENTS,
        "argument:amount",
    )
    assert "amount" in error.message
    assert await shop.ledger_count() == 0


# --- change_address ------------------------------------------------------------------


async def test_address_of_a_pending_order_changes_once(
    shop: SqliteShop, tools: ToolRegistry
) -> None:
    args = {"order_id": "A1003", "address": "  7 Harbour Road, Ningbo  "}
    first = ok(await tools.call("change_address", args, ctx()))
    assert first == {"order_id": "A1003", "address": "7 Harbour Road, Ningbo"}
    assert ok(await tools.call("change_address", args, ctx())) == first
    order = await shop.get_order("A1003")
    assert order is not None and order.address == "7 Harbour Road, Ningbo"
    assert await shop.ledger_count("change_address") == 1


@pytest.mark.parametrize("order_id", ["A1001", "A1002", "A1004"])
async def test_address_refused_once_the_order_shipped(
    shop: SqliteShop, tools: ToolRegistry, order_id: str
) -> None:
    args = {"order_id": order_id, "address": "7 Harbour Road, Ningbo"}
    err(await tools.call("change_address", args, ctx()), ErrorType.INVALID_ARGUMENTS, "not_pending")


@pytest.mark.parametrize(
    "address", ["", "abc", "x" * 201, "7 Harbour Road\nNingbo", "7 Harbour\u202eRoad", "a\x00bcdef"]
)
async def test_a_bad_address_never_reaches_the_shop(
    shop: SqliteShop, tools: ToolRegistry, address: str
) -> None:
    err(
        await tools.call("change_address", {"order_id": "A1003", "address": address}, ctx()),
        ErrorType.INVALID_ARGUMENTS,
        "argument:address",
    )
    order = await shop.get_order("A1003")
    assert order is not None and order.address != address


# --- every change: not found, not yours ----------------------------------------------

CHANGES = [
    ("request_return", {}),
    ("request_refund", {"amount": "1.00"}),
    ("change_address", {"address": "7 Harbour Road, Ningbo"}),
]


@pytest.mark.parametrize(("tool", "extra"), CHANGES)
async def test_a_change_of_an_unknown_or_foreign_order_does_nothing(
    shop: SqliteShop, tools: ToolRegistry, tool: str, extra: dict[str, Any]
) -> None:
    err(await tools.call(tool, {"order_id": "Z9999", **extra}, ctx()), ErrorType.NOT_FOUND)
    foreign = err(
        await tools.call(tool, {"order_id": "B2001", **extra}, ctx()),
        ErrorType.PERMISSION_DENIED,
    )
    for secret in ("20002", "shipping", "259", "Nanjing", "Coffee"):
        assert secret not in foreign.message
    assert await shop.ledger_count() == 0


@pytest.mark.parametrize(("tool", "extra"), CHANGES)
async def test_a_key_used_for_another_change_is_a_bug_not_a_replay(
    shop: SqliteShop, tools: ToolRegistry, tool: str, extra: dict[str, Any]
) -> None:
    ok(await tools.call("cancel_order", {"order_id": "A1001"}, ctx()))
    result = await tools.call(tool, {"order_id": "A1002", **extra}, ctx())
    assert isinstance(result, ToolError) and result.error_type is ErrorType.INTERNAL
    assert await shop.ledger_count() == 1


# --- track_parcel --------------------------------------------------------------------


async def test_track_a_parcel(tools: ToolRegistry) -> None:
    data = ok(await tools.call("track_parcel", {"order_id": "A1005"}, ctx()))
    assert data["order_id"] == "A1005" and data["carrier"] == "JD Logistics"
    assert data["events"][0] == {
        "at": "2026-11-30 07:55",
        "place": "Suzhou",
        "text": "Arrived at the local delivery station",
        # The carrier's event in Chinese too, where it offers it (issue 23 #7).
        "text_zh": "已到达本地派送站",
        "place_zh": "苏州",
    }


async def test_track_without_events_unknown_or_foreign(tools: ToolRegistry) -> None:
    err(await tools.call("track_parcel", {"order_id": "A1003"}, ctx()), ErrorType.EMPTY_RESULT)
    err(await tools.call("track_parcel", {"order_id": "Z9999"}, ctx()), ErrorType.NOT_FOUND)
    err(
        await tools.call("track_parcel", {"order_id": "B2001"}, ctx()),
        ErrorType.PERMISSION_DENIED,
    )


# --- old seeds and old databases -------------------------------------------------------


async def test_an_old_seed_without_payments_or_dates_refuses_politely(tmp_path: Path) -> None:
    seed = tmp_path / "seed.json"
    order = {"owner_user_id": DEMO_USER, "eta": None, "items": ["Tea"]}
    seed.write_text(
        json.dumps(
            {
                "orders": [
                    {"id": "D1", "status": "delivered", **order},
                    {"id": "S1", "status": "shipping", **order},
                ],
                "policies": [],
            }
        ),
        encoding="utf-8",
    )
    async with await SqliteShop.open(tmp_path / "db.sqlite", seed_path=seed) as backend:
        assert (await backend.request_return("D1", DEMO_USER, None, "k1")).reason == (
            "no_delivery_date"
        )
        refund = await backend.request_refund("S1", DEMO_USER, Decimal(1), None, "k2")
        assert (refund.result, refund.reason) == (ActionResult.REFUSED, "no_payment_record")
        tools = ToolRegistry(shop_tools(backend))
        err(await tools.call("track_parcel", {"order_id": "S1"}, ctx()), ErrorType.EMPTY_RESULT)


async def test_old_cancellations_move_into_the_one_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "old.db"
    monkeypatch.setattr(storage.db, "MIGRATIONS", MIGRATIONS[:3])
    await (await connect(db)).close()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO shop_cancellations VALUES ('r1:s2', 'A1003', 10001, '{}', '2026-01-01')"
        )
    monkeypatch.undo()
    await (await connect(db)).close()
    assert rows(db, "SELECT idempotency_key, tool, order_id FROM shop_ledger") == [
        ("r1:s2", "cancel_order", "A1003")
    ]
    assert rows(db, "SELECT idempotency_key, order_id, user_id FROM shop_cancellations") == [
        ("r1:s2", "A1003", 10001)
    ]
