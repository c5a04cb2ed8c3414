"""The demo shop: the three tools over its backend, seeding, idempotent cancels.

Every test taking `shop` or `store_backend` runs on SQLite and on PostgreSQL
(tests/storage_backends.py)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.execution.tools import ToolContext, ToolRegistry
from agent_core.models import ErrorType, Risk, ToolError, ToolOk
from storage.db import StorageUnavailable
from storage.shop.sqlite import DEFAULT_SEED_PATH, ShopUnavailable, load_seed
from storage.shop.tools import CancelResult, OrderArgs, PolicyArgs, shop_tools
from storage.store import DemoShop
from tests.storage_backends import Backend

DEMO_USER = 10001
OTHER_USER = 20002


def ctx(user_id: int = DEMO_USER, run_id: str = "run-1", step_id: str = "s1") -> ToolContext:
    return ToolContext(user_id=user_id, trace_id="trace-1", run_id=run_id, step_id=step_id)


def ok(result: ToolOk | ToolError) -> Any:
    assert isinstance(result, ToolOk), result
    return result.data


def err(result: ToolOk | ToolError, error_type: ErrorType) -> str:
    assert isinstance(result, ToolError), result
    assert result.error_type == error_type, result
    return result.message


def write_seed(path: Path, orders: list[dict[str, Any]], policies: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"orders": orders, "policies": policies}), encoding="utf-8")
    return path


@pytest.fixture
async def shop(store_backend: Backend) -> AsyncIterator[DemoShop]:
    backend = await store_backend.open_shop()
    yield backend
    await backend.close()


@pytest.fixture
def tools(shop: DemoShop) -> ToolRegistry:
    return ToolRegistry(shop_tools(shop))


# --- tool declarations ---------------------------------------------------------------


def test_tool_declarations(shop: DemoShop) -> None:
    registry = ToolRegistry(shop_tools(shop, timeout_s=2.5))
    assert registry.names() == [
        "cancel_order",
        "change_address",
        "get_order_status",
        "request_refund",
        "request_return",
        "search_policy",
        "track_parcel",
    ]
    status = registry.get("get_order_status")
    policy = registry.get("search_policy")
    cancel = registry.get("cancel_order")
    assert status is not None and policy is not None and cancel is not None
    assert (status.risk, status.idempotent) == (Risk.READ, True)
    assert (policy.risk, policy.idempotent) == (Risk.READ, True)
    assert (cancel.risk, cancel.idempotent, cancel.max_retries) == (Risk.HIGH, False, 2)
    assert {status.timeout_s, policy.timeout_s, cancel.timeout_s} == {2.5}
    for tool in (status, policy, cancel):
        assert tool.description.endswith(".") and tool.description.count(".") == 1


# --- get_order_status ----------------------------------------------------------------


async def test_order_status_ok(tools: ToolRegistry) -> None:
    data = ok(await tools.call("get_order_status", {"order_id": "A1001"}, ctx()))
    assert data == {
        "order_id": "A1001",
        "status": "shipping",
        "eta": "2026-12-03",
        "items": ["Wireless earbuds"],
        "amount_paid": "129.00",
        "refunded": "0.00",
    }


async def test_order_status_says_what_earlier_refunds_gave_back(tools: ToolRegistry) -> None:
    refund = {"order_id": "A1002", "amount": "30", "reason": "scratched"}
    ok(await tools.call("request_refund", refund, ctx(step_id="refund")))
    data = ok(await tools.call("get_order_status", {"order_id": "A1002"}, ctx()))
    assert (data["amount_paid"], data["refunded"]) == ("59.00", "30.00")


async def test_order_id_is_stripped_and_upper_cased(tools: ToolRegistry) -> None:
    data = ok(await tools.call("get_order_status", {"order_id": "  a1003 "}, ctx()))
    assert (data["order_id"], data["status"]) == ("A1003", "pending")


async def test_order_status_not_found(tools: ToolRegistry) -> None:
    message = err(
        await tools.call("get_order_status", {"order_id": "Z9999"}, ctx()), ErrorType.NOT_FOUND
    )
    assert "Z9999" in message


async def test_order_status_of_another_users_order_is_denied_without_leaking(
    tools: ToolRegistry,
) -> None:
    message = err(
        await tools.call("get_order_status", {"order_id": "B2001"}, ctx()),
        ErrorType.PERMISSION_DENIED,
    )
    for secret in ("20002", "shipping", "2026-12-04", "Coffee grinder"):
        assert secret not in message
    # The owner does see it.
    data = ok(await tools.call("get_order_status", {"order_id": "B2001"}, ctx(OTHER_USER)))
    assert data["status"] == "shipping"


# --- search_policy -------------------------------------------------------------------


async def test_policy_found_in_chinese(tools: ToolRegistry) -> None:
    data = ok(
        await tools.call("search_policy", {"query": "A1001 晚到了能补偿吗", "lang": "zh"}, ctx())
    )
    assert data == [
        {
            "title": "延迟补偿",
            "text": "订单超过预计送达时间 3 天仍未送达，可申请 10 元无门槛优惠券补偿。",
        }
    ]


async def test_policy_found_in_english_case_insensitively(tools: ToolRegistry) -> None:
    data = ok(await tools.call("search_policy", {"query": "REFUND", "lang": "en"}, ctx()))
    assert [p["title"] for p in data] == ["Returns and refunds"]
    assert set(data[0]) == {"title", "text"}


async def test_policy_query_may_be_part_of_a_keyword(tools: ToolRegistry) -> None:
    data = ok(await tools.call("search_policy", {"query": "compens"}, ctx()))
    assert [p["title"] for p in data] == ["Delay compensation"]  # lang defaults to en


async def test_policy_several_matches_in_seed_order(tools: ToolRegistry) -> None:
    data = ok(
        await tools.call(
            "search_policy", {"query": "late delivery, can I cancel?", "lang": "en"}, ctx()
        )
    )
    assert [p["title"] for p in data] == [
        "Delay compensation",
        "Shipping and delivery",
        "Cancelling an order",
    ]


@pytest.mark.parametrize(
    ("query", "lang"), [("warranty", "en"), ("保修", "zh"), ("保修期多久", "en")]
)
async def test_policy_empty_result_for_warranty(tools: ToolRegistry, query: str, lang: str) -> None:
    message = err(
        await tools.call("search_policy", {"query": query, "lang": lang}, ctx()),
        ErrorType.EMPTY_RESULT,
    )
    assert query in message


async def test_policy_falls_back_to_the_other_language(
    tmp_path: Path, store_backend: Backend
) -> None:
    seed = write_seed(
        tmp_path / "seed.json",
        orders=[],
        policies=[
            {"keywords": ["gift"], "title": "Gift wrap", "text": "Free.", "lang": "en"},
            {"keywords": ["voucher"], "title": "Vouchers", "text": "One each.", "lang": "en"},
            {"keywords": ["voucher"], "title": "代金券", "text": "每单一张。", "lang": "zh"},
        ],
    )
    async with await store_backend.open_shop(seed_path=seed) as backend:
        assert [p.title for p in await backend.search_policies("gift", "zh")] == ["Gift wrap"]
        assert [p.title for p in await backend.search_policies("voucher", "zh")] == ["代金券"]
        assert [p.title for p in await backend.search_policies("voucher", "en")] == ["Vouchers"]
        assert await backend.search_policies("   ", "en") == []


# --- cancel_order --------------------------------------------------------------------


async def test_cancel_then_replay_with_the_same_key(shop: DemoShop, tools: ToolRegistry) -> None:
    first = ok(await tools.call("cancel_order", {"order_id": "A1001"}, ctx(step_id="s3")))
    assert first == {"order_id": "A1001", "status": "cancelled"}
    assert await shop.cancellation_count("A1001") == 1

    again = ok(await tools.call("cancel_order", {"order_id": "a1001"}, ctx(step_id="s3")))
    assert again == first
    assert await shop.cancellation_count("A1001") == 1
    assert await shop.cancellation_count() == 1

    outcome = await shop.cancel_order("A1001", DEMO_USER, "run-1:s3")
    assert outcome.result is CancelResult.REPLAYED
    assert outcome.order is not None and outcome.order.status == "cancelled"

    status = ok(await tools.call("get_order_status", {"order_id": "A1001"}, ctx()))
    assert status["status"] == "cancelled"


async def test_cancel_with_another_key_on_a_cancelled_order_is_refused(
    shop: DemoShop, tools: ToolRegistry
) -> None:
    ok(await tools.call("cancel_order", {"order_id": "A1003"}, ctx(run_id="run-1")))
    message = err(
        await tools.call("cancel_order", {"order_id": "A1003"}, ctx(run_id="run-2")),
        ErrorType.INVALID_ARGUMENTS,
    )
    assert "can no longer be cancelled" in message
    assert await shop.cancellation_count("A1003") == 1


@pytest.mark.parametrize(("order_id", "status"), [("A1002", "delivered"), ("A1004", "cancelled")])
async def test_cancel_refused_for_final_orders(
    shop: DemoShop, tools: ToolRegistry, order_id: str, status: str
) -> None:
    message = err(
        await tools.call("cancel_order", {"order_id": order_id}, ctx()),
        ErrorType.INVALID_ARGUMENTS,
    )
    assert message == f"order {order_id} is {status} and can no longer be cancelled"
    assert await shop.cancellation_count() == 0
    data = ok(await tools.call("get_order_status", {"order_id": order_id}, ctx()))
    assert data["status"] == status


async def test_cancel_another_users_order_is_denied(shop: DemoShop, tools: ToolRegistry) -> None:
    message = err(
        await tools.call("cancel_order", {"order_id": "B2001"}, ctx()),
        ErrorType.PERMISSION_DENIED,
    )
    assert "shipping" not in message and "20002" not in message
    assert await shop.cancellation_count() == 0
    data = ok(await tools.call("get_order_status", {"order_id": "B2001"}, ctx(OTHER_USER)))
    assert data["status"] == "shipping"


async def test_cancel_unknown_order(shop: DemoShop, tools: ToolRegistry) -> None:
    err(await tools.call("cancel_order", {"order_id": "Z1"}, ctx()), ErrorType.NOT_FOUND)
    assert await shop.cancellation_count() == 0


async def test_reused_key_for_another_order_is_an_internal_error(
    shop: DemoShop, tools: ToolRegistry
) -> None:
    ok(await tools.call("cancel_order", {"order_id": "A1001"}, ctx()))
    err(await tools.call("cancel_order", {"order_id": "A1005"}, ctx()), ErrorType.INTERNAL)
    data = ok(await tools.call("get_order_status", {"order_id": "A1005"}, ctx()))
    assert data["status"] == "shipping"
    assert await shop.cancellation_count() == 1


async def test_concurrent_cancels_with_one_key_cancel_once(shop: DemoShop) -> None:
    outcomes = await asyncio.gather(
        *(shop.cancel_order("A1005", DEMO_USER, "run-9:s3") for _ in range(5))
    )
    assert sorted(o.result for o in outcomes) == sorted(
        [CancelResult.CANCELLED] + [CancelResult.REPLAYED] * 4
    )
    assert await shop.cancellation_count("A1005") == 1


async def test_two_processes_racing_for_one_order_cancel_it_once(store_backend: Backend) -> None:
    """Two shops on one database (two processes): one key replays across them, and two
    keys for the same order cancel it once, the other is refused."""
    first, second = await store_backend.open_shop(), await store_backend.open_shop()
    try:
        same_key = await asyncio.gather(
            *(s.cancel_order("A1005", DEMO_USER, "run-7:s3") for s in (first, second) * 3)
        )
        assert sorted(o.result for o in same_key) == sorted(
            [CancelResult.CANCELLED] + [CancelResult.REPLAYED] * 5
        )
        other_keys = await asyncio.gather(
            *(
                s.cancel_order("A1003", DEMO_USER, f"run-{n}:s3")
                for n, s in enumerate((first, second) * 3)
            )
        )
        assert sorted(o.result for o in other_keys) == sorted(
            [CancelResult.CANCELLED] + [CancelResult.REFUSED] * 5
        )
        assert await first.cancellation_count() == 2
    finally:
        await first.close()
        await second.close()


async def test_timeout_after_commit_then_retry_replays(store_backend: Backend) -> None:
    # The side effect commits, then the slow upstream makes the call time out; the retry
    # with the same key must find the cancellation instead of making a second one.
    async with await store_backend.open_shop(latency_s=0.3) as slow:
        registry = ToolRegistry(shop_tools(slow, timeout_s=0.1))
        err(
            await registry.call("cancel_order", {"order_id": "A1001"}, ctx()),
            ErrorType.TIMEOUT,
        )
        assert await slow.cancellation_count("A1001") == 1
        outcome = await slow.cancel_order("A1001", DEMO_USER, ctx().idempotency_key)
        assert outcome.result is CancelResult.REPLAYED
        assert await slow.cancellation_count("A1001") == 1


async def test_locked_database_is_unavailable_and_nothing_is_written(
    store_backend: Backend,
) -> None:
    async with await store_backend.open_shop(busy_timeout_s=0.1) as backend:
        registry = ToolRegistry(shop_tools(backend))
        with store_backend.write_locked():
            message = err(
                await registry.call("cancel_order", {"order_id": "A1001"}, ctx()),
                ErrorType.UNAVAILABLE,
            )
            assert "locked" in message
            with pytest.raises(StorageUnavailable):
                await backend.cancel_order("A1001", DEMO_USER, "k")
        assert await backend.cancellation_count() == 0
        ok(await registry.call("cancel_order", {"order_id": "A1001"}, ctx()))
        assert await backend.cancellation_count() == 1


async def test_failure_mid_cancel_rolls_back_the_status_change(store_backend: Backend) -> None:
    async with await store_backend.open_shop() as backend:
        store_backend.fail_inserts("shop_ledger", "database or disk is full")
        with pytest.raises(ShopUnavailable, match="disk is full"):
            await backend.cancel_order("A1001", DEMO_USER, "run-1:s1")
        order = await backend.get_order("A1001")
        assert order is not None and order.status == "shipping"
        assert await backend.cancellation_count() == 0


# --- arguments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("get_order_status", {"order_id": ""}, "order_id"),
        ("get_order_status", {"order_id": "   "}, "order_id"),
        ("get_order_status", {"order_id": "A" * 33}, "order_id"),
        ("get_order_status", {}, "order_id"),
        ("get_order_status", {"order_id": "A1001", "user_id": 20002}, "user_id"),
        ("cancel_order", {"order_id": ""}, "order_id"),
        ("cancel_order", {"order_id": "A1001", "force": True}, "force"),
        ("search_policy", {"query": ""}, "query"),
        ("search_policy", {"query": "x" * 201}, "query"),
        ("search_policy", {"query": "refund", "lang": "fr"}, "lang"),
        ("search_policy", {"query": "refund", "limit": 3}, "limit"),
    ],
)
async def test_invalid_arguments_name_the_field(
    shop: DemoShop, tools: ToolRegistry, tool: str, args: dict[str, Any], field: str
) -> None:
    message = err(await tools.call(tool, args, ctx()), ErrorType.INVALID_ARGUMENTS)
    assert message.startswith(f"{field}:")
    assert await shop.cancellation_count() == 0


def test_args_models_normalise() -> None:
    assert OrderArgs.model_validate({"order_id": " b2001\n"}).order_id == "B2001"
    assert PolicyArgs.model_validate({"query": " refund "}) == PolicyArgs(query="refund", lang="en")


# --- seeding -------------------------------------------------------------------------


async def test_seeds_only_once_across_opens(store_backend: Backend) -> None:
    async with await store_backend.open_shop() as first:
        ok(await ToolRegistry(shop_tools(first)).call("cancel_order", {"order_id": "A1001"}, ctx()))
    async with await store_backend.open_shop() as second:
        order = await second.get_order("A1001")
        assert order is not None and order.status == "cancelled"  # not re-seeded over
        assert await second.cancellation_count() == 1
    assert store_backend.count_rows("shop_policies") == 26
    assert store_backend.count_rows("shop_orders") == 8
    assert store_backend.count_rows("shop_meta") == 1


async def test_concurrent_first_starts_seed_once(store_backend: Backend) -> None:
    # Schema first (migrated, not seeded): this test races the seeding, not the migration.
    await store_backend.migrate()
    assert store_backend.count_rows("shop_meta") == 0
    shops = await asyncio.gather(*(store_backend.open_shop() for _ in range(4)))
    try:
        assert store_backend.count_rows("shop_policies") == 26
        assert store_backend.count_rows("shop_orders") == 8
        for backend in shops:
            assert len(await backend.search_policies("refund", "en")) == 1
    finally:
        for backend in shops:
            await backend.close()


async def test_seeded_database_does_not_read_the_seed_again(
    tmp_path: Path, store_backend: Backend
) -> None:
    await (await store_backend.open_shop()).close()
    missing = tmp_path / "gone.json"
    async with await store_backend.open_shop(seed_path=missing) as backend:
        assert await backend.get_order("A1001") is not None


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ('{"orders": [], "policies": [', "not valid JSON"),
        (
            '{"orders": [{"id": "A1", "owner_user_id": 1, "status": "lost", "eta": null, '
            '"items": []}], "policies": []}',
            "orders.0.status",
        ),
        (
            '{"orders": [], "policies": [{"keywords": [], "title": "t", "text": "x", '
            '"lang": "en"}]}',
            "policies.0.keywords",
        ),
        (
            '{"orders": [{"id": "a1", "owner_user_id": 1, "status": "pending", "eta": null, '
            '"items": []}], "policies": []}',
            "orders.0.id",
        ),
        ('{"orders": [], "policies": [], "extra": 1}', "extra"),
        ('{"policies": []}', "orders"),
    ],
)
async def test_bad_seed_is_a_value_error_naming_file_and_field(
    tmp_path: Path, store_backend: Backend, content: str, field: str
) -> None:
    seed = tmp_path / "broken_seed.json"
    seed.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken_seed\.json") as info:
        await store_backend.open_shop(seed_path=seed)
    assert field in str(info.value)
    # Nothing half-seeded; a fixed seed can follow.
    assert store_backend.count_rows("shop_meta") == 0


async def test_missing_seed_file_is_a_value_error(tmp_path: Path, store_backend: Backend) -> None:
    with pytest.raises(ValueError, match=r"nowhere\.json"):
        await store_backend.open_shop(seed_path=tmp_path / "nowhere.json")


async def test_custom_seed_path_is_honoured(
    tmp_path: Path, store_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = write_seed(
        tmp_path / "custom.json",
        orders=[
            {"id": "Z9", "owner_user_id": 7, "status": "pending", "eta": None, "items": ["Tea"]}
        ],
        policies=[{"keywords": ["tea"], "title": "Tea", "text": "Steep.", "lang": "en"}],
    )
    monkeypatch.setenv("STEPWISE_SHOP_SEED", str(seed))
    async with await store_backend.open_shop(seed_path=os.environ["STEPWISE_SHOP_SEED"]) as backend:
        registry = ToolRegistry(shop_tools(backend))
        data = ok(await registry.call("get_order_status", {"order_id": "z9"}, ctx(user_id=7)))
        assert data == {"order_id": "Z9", "status": "pending", "eta": None, "items": ["Tea"]}
        err(
            await registry.call("get_order_status", {"order_id": "A1001"}, ctx()),
            ErrorType.NOT_FOUND,
        )


# --- the bundled seed ----------------------------------------------------------------


def test_bundled_seed_validates_and_matches_the_demo() -> None:
    assert (
        DEFAULT_SEED_PATH.resolve()
        == (Path(__file__).resolve().parent.parent / "storage" / "shop" / "seed.json").resolve()
    )
    seed = load_seed(DEFAULT_SEED_PATH)
    orders = {o.id: o for o in seed.orders}
    assert {oid: (o.owner_user_id, o.status) for oid, o in orders.items()} == {
        "A1001": (DEMO_USER, "shipping"),
        "A1002": (DEMO_USER, "delivered"),
        "A1003": (DEMO_USER, "pending"),
        "A1004": (DEMO_USER, "cancelled"),
        "A1005": (DEMO_USER, "shipping"),
        "A1006": (DEMO_USER, "delivered"),
        "A1007": (DEMO_USER, "pending"),
        "B2001": (OTHER_USER, "shipping"),
    }
    assert orders["A1001"].eta == "2026-12-03"
    # What the new tools need: a refund limit on every order, a return window that is open
    # for A1002 and closed for A1006 whenever the demo is first started, parcel events.
    assert all(o.amount_paid is not None for o in seed.orders)
    assert (orders["A1002"].delivered_days_ago, orders["A1006"].delivered_days_ago) == (2, 30)
    assert seed.return_window_days == 7
    tracked = {o.id for o in seed.orders if o.tracking and o.tracking.events}
    assert tracked == {"A1001", "A1002", "A1005", "B2001"}
    assert all(o.items for o in seed.orders)
    by_lang: dict[str, list[str]] = {"zh": [], "en": []}
    for policy in seed.policies:
        by_lang[policy.lang].append(policy.title)
        assert not any("保修" in k or "warranty" in k.casefold() for k in policy.keywords)
    # Five policies from before and the eight FAQ topics of issue 21, each in zh and en.
    assert len(by_lang["zh"]) == len(by_lang["en"]) == 13
