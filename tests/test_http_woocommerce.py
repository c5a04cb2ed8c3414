"""`examples/woocommerce.toml` against a local server that answers like WooCommerce's REST
API v3: its order JSON, `PUT` to change an order, refunds, and its error JSON.

The example file is used as shipped; only its host is pointed at the local server. The
agent (rule planner, executor, catalog) runs in-process and reaches the shop over HTTP.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from agent_core.agent import Agent
from agent_core.executor import Executor
from agent_core.http import ToolsConfig, build_http_tools, load_tools_config
from agent_core.models import ErrorType, RunStatus, StepStatus, ToolError, ToolOk
from agent_core.planner import RuleBasedPlanner
from agent_core.tools import ToolContext, ToolRegistry
from stepwise.tools_check import print_tools_check
from storage.runs import SqliteRunStore
from tests.fakes import RecordingSleep

pytestmark = pytest.mark.timeout(10)

ROOT = Path(__file__).resolve().parent.parent
KEY = "ck_5f2a9e:cs_77c1d0e4b3"
BASIC = base64.b64encode(KEY.encode()).decode()
CUSTOMER = 10001


def woo_order(order_id: int, status: str, owner: int | None, total: str) -> dict[str, Any]:
    """An order as WooCommerce v3 shows it (the fields stepwise reads, and some it does not)."""
    meta = [{"id": 90 + order_id, "key": "_billing_vat", "value": ""}]
    if owner is not None:
        meta.append({"id": 91 + order_id, "key": "telegram_user_id", "value": str(owner)})
    return {
        "id": order_id,
        "parent_id": 0,
        "status": status,
        "currency": "CNY",
        "total": total,
        "customer_id": 7,
        "shipping": {"first_name": "Li", "address_1": "88 Century Avenue", "city": "Shanghai"},
        "line_items": [{"id": 1, "name": "Wireless earbuds", "quantity": 1, "total": total}],
        "meta_data": meta,
        "refunds": [],
    }


def woo_error(code: str, message: str, status: int) -> web.Response:
    return web.json_response(
        {"code": code, "message": message, "data": {"status": status}}, status=status
    )


@dataclass
class Woo:
    base: str = ""
    orders: dict[int, dict[str, Any]] = field(default_factory=dict)
    seen: list[tuple[str, str, dict[str, str], Any]] = field(default_factory=list)

    def writes(self) -> list[tuple[str, str, dict[str, str], Any]]:
        return [s for s in self.seen if s[0] != "GET"]


@pytest.fixture
async def woo() -> AsyncIterator[Woo]:
    shop = Woo(
        orders={
            1001: woo_order(1001, "processing", CUSTOMER, "129.00"),
            1002: woo_order(1002, "completed", CUSTOMER, "59.00"),
            2001: woo_order(2001, "processing", 20002, "259.00"),
            3001: woo_order(3001, "processing", None, "10.00"),
        }
    )

    def authorised(request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Basic {BASIC}"

    async def order(request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        shop.seen.append((request.method, request.path, dict(request.headers), body))
        if not authorised(request):
            return woo_error(
                "woocommerce_rest_cannot_view", "Sorry, you cannot view this resource.", 401
            )
        found = shop.orders.get(int(request.match_info["id"]))
        if found is None:
            return woo_error("woocommerce_rest_shop_order_invalid_id", "Invalid ID.", 404)
        if request.method == "PUT":
            if "status" in body:
                found["status"] = body["status"]
            if "shipping" in body:
                found["shipping"].update(body["shipping"])
        return web.json_response(found)

    async def refund(request: web.Request) -> web.Response:
        body = await request.json()
        shop.seen.append((request.method, request.path, dict(request.headers), body))
        found = shop.orders.get(int(request.match_info["id"]))
        if found is None:
            return woo_error("woocommerce_rest_shop_order_invalid_id", "Invalid ID.", 404)
        refunded = sum(Decimal(r["amount"]) for r in found["refunds"])
        if Decimal(body["amount"]) > Decimal(found["total"]) - refunded:
            # What WooCommerce really answers for a refund it cannot make: a 500.
            return woo_error(
                "woocommerce_rest_cannot_create_order_refund", "Invalid refund amount.", 500
            )
        made = {
            "id": 700 + len(found["refunds"]),
            "amount": body["amount"],
            "reason": body["reason"],
        }
        found["refunds"].append(made)
        return web.json_response(made, status=201)

    async def pages(request: web.Request) -> web.Response:
        shop.seen.append((request.method, request.path_qs, dict(request.headers), None))
        if "refund" not in request.query.get("search", ""):
            return web.json_response([])
        page = {
            "id": 5,
            "title": {"rendered": "Refunds"},
            "excerpt": {"rendered": "Within 7 days."},
        }
        return web.json_response([page])

    app = web.Application()
    app.router.add_route("*", "/wp-json/wc/v3/orders/{id}", order)
    app.router.add_post("/wp-json/wc/v3/orders/{id}/refunds", refund)
    app.router.add_get("/wp-json/wp/v2/pages", pages)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    shop.base = f"http://127.0.0.1:{port}"
    yield shop
    await runner.cleanup()


def config_for(woo: Woo, tmp_path: Path) -> ToolsConfig:
    text = (ROOT / "examples" / "woocommerce.toml").read_text(encoding="utf-8")
    path = tmp_path / "woocommerce.toml"
    path.write_text(text.replace("https://shop.example", woo.base), encoding="utf-8")
    return load_tools_config(path, env={"WOO_BASIC_AUTH": BASIC})


@pytest.fixture
async def agent(woo: Woo, tmp_path: Path) -> AsyncIterator[tuple[Agent, ToolRegistry]]:
    config = config_for(woo, tmp_path)
    store = await SqliteRunStore.open(tmp_path / "runs.db")
    async with httpx.AsyncClient() as client:
        registry = ToolRegistry(build_http_tools(config, client, sleep=RecordingSleep()))
        executor = Executor(registry, journal=store, sleep=RecordingSleep())
        yield Agent(RuleBasedPlanner(order_id_pattern=r"\d{3,10}"), executor, store), registry
    await store.close()


def ctx(user_id: int = CUSTOMER, step_id: str = "s1") -> ToolContext:
    return ToolContext(user_id=user_id, trace_id="t", run_id="r1", step_id=step_id)


async def test_the_example_checks_and_probes(woo: Woo, tmp_path: Path) -> None:
    lines: list[str] = []
    code = await print_tools_check(config_for(woo, tmp_path), probe=True, out=lines.append)
    assert code == 0, lines
    assert any("get_order_status: probe HTTP 404" in line for line in lines)
    assert any("request_return: not configured" in line for line in lines)
    assert all(BASIC not in line and KEY not in line for line in lines)


async def test_an_order_reads_in_stepwise_words(agent: tuple[Agent, ToolRegistry]) -> None:
    ask, tools = agent
    run = await ask.ask("where is my order 1001", user_id=CUSTOMER, chat_id=CUSTOMER)
    assert run.status is RunStatus.COMPLETED
    assert run.steps[0].observation == {
        "order_id": "1001",
        "status": "pending",  # WooCommerce "processing": paid, not shipped yet
        "items": ["Wireless earbuds"],
    }
    assert run.answer == "Order 1001 is not shipped yet."
    done = await tools.call("get_order_status", {"order_id": "1002"}, ctx())
    assert isinstance(done, ToolOk) and done.data["status"] == "delivered"


@pytest.mark.parametrize(
    ("order_id", "error"),
    [(2001, "permission_denied"), (3001, "permission_denied"), (4040, "not_found")],
)
async def test_other_and_unknown_orders_are_refused(
    agent: tuple[Agent, ToolRegistry], order_id: int, error: str
) -> None:
    _, tools = agent
    result = await tools.call("get_order_status", {"order_id": str(order_id)}, ctx())
    assert isinstance(result, ToolError) and result.error_type.value == error


async def test_cancel_is_one_put_after_confirm_and_after_the_ownership_check(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    ask, _ = agent
    paused = await ask.ask("cancel order 1001", user_id=CUSTOMER, chat_id=CUSTOMER)
    assert paused.status is RunStatus.PAUSED and woo.writes() == []
    assert paused.pause is not None
    done = await ask.decide(paused.id, user_id=CUSTOMER, approved=True, nonce=paused.pause.nonce)
    assert done.run is not None and done.run.status is RunStatus.COMPLETED
    assert done.run.answer == "Order 1001 has been cancelled."
    (put,) = woo.writes()
    assert (put[0], put[1], put[3]) == (
        "PUT",
        "/wp-json/wc/v3/orders/1001",
        {"status": "cancelled"},
    )
    assert put[2]["Idempotency-Key"] == f"{paused.id}:s2"
    assert woo.orders[1001]["status"] == "cancelled"


async def test_a_change_to_someone_elses_order_is_never_sent(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    _, tools = agent
    for tool, args in (
        ("cancel_order", {"order_id": "2001"}),
        ("request_refund", {"order_id": "2001", "amount": "1"}),
        ("change_address", {"order_id": "2001", "address": "7 Harbour Road, Ningbo"}),
    ):
        result = await tools.call(tool, args, ctx())
        assert isinstance(result, ToolError) and result.error_type is ErrorType.PERMISSION_DENIED
    assert woo.writes() == []
    assert woo.orders[2001]["status"] == "processing"


async def test_refunds_map_both_ways_and_a_refused_one_is_not_retried(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    _, tools = agent
    made = await tools.call(
        "request_refund", {"order_id": "1002", "amount": "50", "reason": "Scratched"}, ctx()
    )
    assert isinstance(made, ToolOk)
    assert made.data == {"refund_id": "700", "amount": "50.00", "order_id": "1002"}
    assert woo.writes()[-1][3] == {"amount": "50.00", "reason": "Scratched", "api_refund": False}

    refused = await tools.call("request_refund", {"order_id": "1002", "amount": "10"}, ctx())
    # WooCommerce's 500 would be retried as "unavailable"; its error code says "refused".
    assert isinstance(refused, ToolError) and refused.error_type is ErrorType.INVALID_ARGUMENTS
    assert "Invalid refund amount." in refused.message
    assert woo.writes()[-1][3] == {"amount": "10.00", "api_refund": False}  # no reason: left out
    assert len(woo.orders[1002]["refunds"]) == 1


async def test_address_and_policies(agent: tuple[Agent, ToolRegistry], woo: Woo) -> None:
    _, tools = agent
    moved = await tools.call(
        "change_address", {"order_id": "1001", "address": "7 Harbour Road, Ningbo"}, ctx()
    )
    assert isinstance(moved, ToolOk)
    assert moved.data == {"order_id": "1001", "address": "7 Harbour Road, Ningbo"}
    assert woo.orders[1001]["shipping"]["address_1"] == "7 Harbour Road, Ningbo"
    found = await tools.call("search_policy", {"query": "refund", "lang": "en"}, ctx())
    assert isinstance(found, ToolOk) and found.data == [
        {"title": "Refunds", "text": "Within 7 days."}
    ]
    assert re.search(r"search=refund&per_page=3$", woo.seen[-1][1])
    none = await tools.call("search_policy", {"query": "warranty"}, ctx())
    assert isinstance(none, ToolError) and none.error_type is ErrorType.EMPTY_RESULT


async def test_a_delivered_order_skips_the_cancel_and_sends_nothing(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    ask, _ = agent
    run = await ask.ask("cancel order 1002", user_id=CUSTOMER, chat_id=CUSTOMER)
    assert [s.status for s in run.steps] == [StepStatus.DONE, StepStatus.SKIPPED]
    assert woo.writes() == []
    assert json.dumps(run.model_dump(mode="json")).count(BASIC) == 0
