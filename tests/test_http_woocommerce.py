"""`examples/woocommerce.toml` against a local server that answers like WooCommerce's REST
API v3: its order JSON, `PUT` to change an order, refunds, and its error JSON.

The example file is used as shipped; only its host is pointed at the local server (and,
for the late-answer scenarios, the changes' timeout shortened). The agent (rule planner,
executor, catalog) runs in-process and reaches the shop over HTTP.

Like WooCommerce, the stand-in ignores `Idempotency-Key`: every refund POST makes a refund.
It can make a change and then hold its answer until the test ends (`late`), so the client
times out on a change that happened; fail a change before making it (`fail_once`); and
fail every read after the first change (`reads_down`), so nothing can tell (issue 20).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import secrets
import sqlite3
import ssl
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from aiohttp import web

from agent_core.agent import Agent
from agent_core.execution.executor import Executor
from agent_core.execution.tools import ToolContext, ToolRegistry
from agent_core.http import ToolsConfig, ToolsConfigError, build_http_tools, load_tools_config
from agent_core.models import (
    ErrorType,
    EventKind,
    Run,
    RunStatus,
    StepStatus,
    ToolError,
    ToolOk,
)
from agent_core.understanding.planner import RuleBasedPlanner
from bot.redact import redact_in_logs
from console.app import create_app
from console.timeline import build_run_view
from standin import StandIn
from stepwise.tools_check import print_tools_check
from storage.runs.sqlite import SqliteRunStore
from tests.fakes import RecordingSleep
from tests.harness import DEMO, start_bot
from tests.storage_backends import Backend
from tests.test_handoff_e2e import FORUM, staff_forum, texts

ROOT = Path(__file__).resolve().parent.parent
KEY = "ck_5f2a9e:cs_77c1d0e4b3"
BASIC = base64.b64encode(KEY.encode()).decode()
CUSTOMER = 10001
OTHER = 10002  # a second customer, for the bot's tests
REFUND_EXCERPT = (
    "<p>Returns are accepted within 30&nbsp;days of delivery. Refunds take 5&ndash;7 days."
    "</p>\n<ul>\n<li>Unused items</li>\n<li>In the <strong>original</strong> box</li>\n</ul>\n"
    "<p>Write to us first &#8211; we reply within a day. "
    + "We check every return by hand and tell you what we found. " * 12
    + "[&hellip;]</p>\n"
)


# The shop's customer id of each Telegram user who linked their account (WooCommerce's
# customer 7 is our CUSTOMER), as the link plugin's lookup answers it.
SHOP_CUSTOMERS = {CUSTOMER: 7, 20002: 8}


def woo_customer(customer_id: int, telegram_user_id: int) -> dict[str, Any]:
    """A customer as WooCommerce v3 shows it, with the Telegram user id the link stored."""
    return {
        "id": customer_id,
        "email": f"customer{customer_id}@example.com",
        "first_name": "Li",
        "role": "customer",
        "meta_data": [
            {"id": 60 + customer_id, "key": "telegram_user_id", "value": str(telegram_user_id)}
        ],
    }


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
        "customer_id": SHOP_CUSTOMERS.get(owner or 0, 0),
        "shipping": {
            "first_name": "Li",
            "address_1": "88 Century Avenue",
            "address_2": "",
            "city": "Hangzhou",
            "state": "CN13",
            "postcode": "310000",
            "country": "CN",
        },
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
    # Writes ("PUT", "refund") made once and then answered only when the test ends.
    late: set[str] = field(default_factory=set)
    released: asyncio.Event = field(default_factory=asyncio.Event)
    # Writes answered with a 503 once, before anything is made.
    fail_once: set[str] = field(default_factory=set)
    # Writes that take their time: made only once `proceed` is set (the caller has long
    # given up by then); `made` is set when one is.
    slow: set[str] = field(default_factory=set)
    proceed: asyncio.Event = field(default_factory=asyncio.Event)
    made: asyncio.Event = field(default_factory=asyncio.Event)
    # Every GET after the first change answers 503 (the reconcile read cannot tell).
    reads_down: bool = False
    # The REST API key the shop accepts (base64 of "ck:cs"); changing it revokes ours.
    key: str = BASIC
    # What the shop says when it refuses a key (some echo what they were sent).
    refusal: str = "Consumer key is invalid."
    # Order notes (POST /orders/{id}/notes), and whether that endpoint is failing.
    notes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    notes_down: bool = False
    # Customers who linked Telegram (the link plugin's lookup), and a points plugin's balances.
    customers: list[dict[str, Any]] = field(
        default_factory=lambda: [woo_customer(c, t) for t, c in SHOP_CUSTOMERS.items()]
    )
    points: dict[int, int] = field(default_factory=lambda: {7: 1250})
    # The link plugin's tokens ("Link Telegram"): token -> (customer id, expires at, used);
    # its clock (`now`, seconds) is the test's, and `link_down` makes the endpoint fail.
    tokens: dict[str, tuple[int, float, bool]] = field(default_factory=dict)
    now: float = 0.0
    link_down: bool = False
    runner: web.AppRunner | None = None

    def issue_link(self, customer_id: int, ttl_s: float = 900.0) -> str:
        """What the plugin's "Link Telegram" button does: a single-use random token for
        the logged-in customer, valid `ttl_s` seconds (43 characters of the deep-link set)."""
        token = secrets.token_urlsafe(32)
        self.tokens[token] = (customer_id, self.now + ttl_s, False)
        return token

    def expire(self, token: str) -> None:
        """The explicit expiry control: the token's time is up."""
        customer_id, _, used = self.tokens[token]
        self.tokens[token] = (customer_id, self.now, used)

    def writes(self) -> list[tuple[str, str, dict[str, str], Any]]:
        """The changes sent (order notes left out: they record, they change nothing)."""
        return [s for s in self.seen if s[0] != "GET" and "/notes" not in s[1]]

    async def answer(self, kind: str, made: web.Response) -> web.Response:
        """The answer to a change already made: now, or (`late`) once the test ends."""
        if kind in self.late:
            self.late.discard(kind)
            await self.released.wait()
        return made

    def refuses(self, request: web.Request, kind: str | None = None) -> web.Response | None:
        if kind is not None and kind in self.fail_once:
            self.fail_once.discard(kind)
            return woo_error("internal_server_error", "Gateway hiccup.", 503)
        if request.method == "GET" and self.reads_down and self.writes():
            return woo_error("internal_server_error", "Database unavailable.", 503)
        return None


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

    def unauthorised(request: web.Request) -> web.Response | None:
        """WooCommerce's answers to a request without a valid key: 401 either way."""
        given = request.headers.get("Authorization")
        if given is None and "consumer_key" in request.query:
            # Query-string keys (over HTTPS), for hosts that strip Authorization.
            pair = f"{request.query['consumer_key']}:{request.query.get('consumer_secret')}"
            given = f"Basic {base64.b64encode(pair.encode()).decode()}"
        if given is None:
            return woo_error(
                "woocommerce_rest_cannot_view", "Sorry, you cannot view this resource.", 401
            )
        if given != f"Basic {shop.key}":
            return woo_error("woocommerce_rest_authentication_error", shop.refusal, 401)
        return None

    async def order(request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        shop.seen.append((request.method, request.path, dict(request.headers), body))
        denied = unauthorised(request)
        if denied is not None:
            return denied
        refused = shop.refuses(request, request.method)
        if refused is not None:
            return refused
        found = shop.orders.get(int(request.match_info["id"]))
        if found is None:
            return woo_error("woocommerce_rest_shop_order_invalid_id", "Invalid ID.", 404)
        if request.method == "PUT":
            if "status" in body:
                found["status"] = body["status"]
            if "shipping" in body:
                found["shipping"].update(body["shipping"])
            return await shop.answer("PUT", web.json_response(found))
        return web.json_response(found)

    async def refund(request: web.Request) -> web.Response:
        body = await request.json()
        shop.seen.append((request.method, request.path, dict(request.headers), body))
        denied = unauthorised(request)
        if denied is not None:
            return denied
        refused = shop.refuses(request, "refund")
        if refused is not None:
            return refused
        found = shop.orders.get(int(request.match_info["id"]))
        if found is None:
            return woo_error("woocommerce_rest_shop_order_invalid_id", "Invalid ID.", 404)
        if "refund" in shop.slow:
            shop.slow.discard("refund")
            await shop.proceed.wait()
        refunded = sum(Decimal(r["amount"]) for r in found["refunds"])
        if Decimal(body["amount"]) > Decimal(found["total"]) - refunded:
            # What WooCommerce really answers for a refund it cannot make: a 500.
            return woo_error(
                "woocommerce_rest_cannot_create_order_refund", "Invalid refund amount.", 500
            )
        made = {
            "id": 700 + len(found["refunds"]),
            "amount": body["amount"],
            "reason": body.get("reason", ""),
            # WooCommerce: whether the payment gateway paid it back (api_refund = true).
            "refunded_payment": bool(body.get("api_refund", True)),
            "meta_data": [
                {"id": 800 + n, **meta} for n, meta in enumerate(body.get("meta_data", []))
            ],
        }
        found["refunds"].append(made)  # whatever Idempotency-Key said: WooCommerce ignores it
        shop.made.set()
        return await shop.answer("refund", web.json_response(made, status=201))

    async def refunds(request: web.Request) -> web.Response:
        shop.seen.append((request.method, request.path, dict(request.headers), None))
        refused = shop.refuses(request)
        if refused is not None:
            return refused
        found = shop.orders.get(int(request.match_info["id"]))
        if found is None:
            return woo_error("woocommerce_rest_shop_order_invalid_id", "Invalid ID.", 404)
        return web.json_response(list(reversed(found["refunds"])))  # newest first

    async def pages(request: web.Request) -> web.Response:
        shop.seen.append((request.method, request.path_qs, dict(request.headers), None))
        if "refund" not in request.query.get("search", ""):
            return web.json_response([])
        # As WordPress renders them: HTML with entities, and "[&hellip;]" when cut.
        page = {
            "id": 5,
            "title": {"rendered": "Refund &amp; Returns Policy"},
            "excerpt": {"rendered": REFUND_EXCERPT},
        }
        return web.json_response([page])

    async def note(request: web.Request) -> web.Response:
        body = await request.json()
        shop.seen.append((request.method, request.path_qs, dict(request.headers), body))
        denied = unauthorised(request)
        if denied is not None:
            return denied
        if shop.notes_down:
            return woo_error("internal_server_error", "Notes table locked.", 500)
        order_id = int(request.match_info["id"])
        if order_id not in shop.orders:
            return woo_error("woocommerce_rest_order_invalid_id", "Invalid order ID.", 404)
        notes = shop.notes.setdefault(order_id, [])
        made = {"id": 900 + len(notes), "author": "WooCommerce", **body}
        notes.append(made)
        return web.json_response(made, status=201)

    async def linked(request: web.Request) -> web.Response:
        """The link plugin's lookup: the customers whose stored Telegram id is the one asked
        (a list, as WooCommerce's own customer listing answers)."""
        shop.seen.append((request.method, request.path_qs, dict(request.headers), None))
        denied = unauthorised(request)
        if denied is not None:
            return denied
        wanted = request.query.get("telegram_user_id", "")
        return web.json_response(
            [
                c
                for c in shop.customers
                if any(
                    m["key"] == "telegram_user_id" and m["value"] == wanted for m in c["meta_data"]
                )
            ]
        )

    async def link(request: web.Request) -> web.Response:
        """The link plugin's claim: a token it issued, unused and unexpired, stores the
        Telegram user id on that customer (its meta `telegram_user_id`). Single-use."""
        body = await request.json()
        shop.seen.append((request.method, request.path_qs, dict(request.headers), body))
        denied = unauthorised(request)
        if denied is not None:
            return denied
        if shop.link_down:
            return woo_error("internal_server_error", "Database unavailable.", 503)
        found = shop.tokens.get(str(body.get("token", "")))
        if found is None:
            return woo_error("stepwise_link_unknown", "Unknown link.", 404)
        customer_id, expires_at, used = found
        if used:
            return woo_error("stepwise_link_used", "This link was already used.", 409)
        if shop.now >= expires_at:
            return woo_error("stepwise_link_expired", "This link has expired.", 410)
        shop.tokens[str(body["token"])] = (customer_id, expires_at, True)
        user = str(body["telegram_user_id"])
        shop.customers = [c for c in shop.customers if c["id"] != customer_id]
        shop.customers.append(woo_customer(customer_id, int(user)))
        return web.json_response({"customer_id": customer_id, "linked": True})

    async def orders_of(request: web.Request) -> web.Response:
        """WooCommerce's order listing: `customer` filters, newest (highest id) first."""
        shop.seen.append((request.method, request.path_qs, dict(request.headers), None))
        denied = unauthorised(request)
        if denied is not None:
            return denied
        customer = int(request.query.get("customer", "0"))
        found = sorted(
            (o for o in shop.orders.values() if customer and o["customer_id"] == customer),
            key=lambda o: o["id"],
            reverse=request.query.get("order", "desc") == "desc",
        )
        return web.json_response(found[: int(request.query.get("per_page", "10"))])

    async def points(request: web.Request) -> web.Response:
        """A points-and-rewards plugin's balance of one customer."""
        shop.seen.append((request.method, request.path_qs, dict(request.headers), None))
        customer = int(request.match_info["id"])
        if customer not in shop.points:
            return woo_error("points_no_customer", "No such customer.", 404)
        return web.json_response({"customer_id": customer, "points_balance": shop.points[customer]})

    async def nowhere(request: web.Request) -> web.Response:
        """What WordPress answers outside its routes: under /wp-json/ the REST API's own
        404 (`rest_no_route`), anywhere else the theme's HTML "page not found"."""
        shop.seen.append((request.method, request.path, dict(request.headers), None))
        if "/wp-json/" in request.path:
            return woo_error(
                "rest_no_route", "No route was found matching the URL and request method.", 404
            )
        page = "<!doctype html><html><body><h1>Page not found</h1></body></html>"
        return web.Response(text=page, status=404, content_type="text/html")

    app = web.Application()
    app.router.add_route("*", "/wp-json/wc/v3/orders/{id:[0-9]+}", order)
    app.router.add_post("/wp-json/wc/v3/orders/{id:[0-9]+}/refunds", refund)
    app.router.add_get("/wp-json/wc/v3/orders/{id:[0-9]+}/refunds", refunds)
    app.router.add_post("/wp-json/wc/v3/orders/{id:[0-9]+}/notes", note)
    app.router.add_get("/wp-json/wp/v2/pages", pages)
    app.router.add_get("/wp-json/stepwise/v1/customer", linked)
    app.router.add_get("/wp-json/wc/v3/orders", orders_of)
    app.router.add_post("/wp-json/stepwise/v1/link", link)
    app.router.add_get("/wp-json/shop/v1/points/{id:[0-9]+}", points)
    app.router.add_route("*", "/{tail:.*}", nowhere)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    shop.base = f"http://127.0.0.1:{port}"
    shop.runner = runner
    yield shop
    shop.released.set()
    await runner.cleanup()


def config_for(
    woo: Woo,
    tmp_path: Path,
    *,
    write_timeout_s: float | None = None,
    base: str | None = None,
    edit: tuple[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> ToolsConfig:
    """The example file as shipped, pointed at the stand-in (`base`: another address;
    `edit`: one line of it changed as a shop would)."""
    text = (ROOT / "examples" / "woocommerce.toml").read_text(encoding="utf-8")
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit)
    if write_timeout_s is not None:
        for tool in ("cancel_order", "request_refund", "change_address"):
            table = f"[tools.{tool}]\n"
            assert table in text
            text = text.replace(table, f"{table}timeout_s = {write_timeout_s}\n")
    path = tmp_path / "woocommerce.toml"
    path.write_text(text.replace("https://shop.example", base or woo.base), encoding="utf-8")
    return load_tools_config(path, env={"WOO_BASIC_AUTH": BASIC} if env is None else env)


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
    (refund,) = [line for line in lines if "request_refund: POST" in line]
    assert "idempotency=ignored reconcile=GET " in refund and refund.endswith("/refunds")
    assert all(BASIC not in line and KEY not in line for line in lines)


@pytest.mark.parametrize(
    ("suffix", "said"),
    [("/shop", "no such route (rest_no_route"), ("/shop/wp", "the answer is not JSON (text/html)")],
)
async def test_a_probe_of_a_wrong_base_address_fails_naming_the_url(
    woo: Woo, tmp_path: Path, suffix: str, said: str
) -> None:
    """Every route answers 404 there: not "no such order" but a url to fix."""
    base = woo.base + suffix
    if suffix == "/shop/wp":  # the WordPress front end, not its REST API: an HTML page
        base = woo.base + "/shop"
        text = (ROOT / "examples" / "woocommerce.toml").read_text(encoding="utf-8")
        text = text.replace("https://shop.example/wp-json/", f"{base}/")
        path = tmp_path / "front.toml"
        path.write_text(text.replace("https://shop.example", base), encoding="utf-8")
        config = load_tools_config(path, env={"WOO_BASIC_AUTH": BASIC})
    else:
        config = config_for(woo, tmp_path, base=base)
    lines: list[str] = []
    assert await print_tools_check(config, probe=True, out=lines.append) == 1
    (probe,) = [line for line in lines if "get_order_status: probe" in line]
    assert "probe HTTP 404 in " in probe and " FAILED: " in probe and said in probe, probe
    assert "base address looks wrong" in probe and "fix `url`" in probe
    assert all(BASIC not in line and KEY not in line for line in lines)


@pytest.mark.parametrize("key", ["revoked", None])
async def test_a_probe_with_a_refused_key_fails_as_credentials(
    woo: Woo, tmp_path: Path, key: str | None
) -> None:
    config = config_for(woo, tmp_path)
    if key is None:  # a host that strips the Authorization header: "cannot view"
        config = config.model_copy(update={"headers": {}})
    woo.key = base64.b64encode(b"ck_new:cs_new").decode() if key else woo.key
    lines: list[str] = []
    assert await print_tools_check(config, probe=True, out=lines.append) == 1
    (probe,) = [line for line in lines if "get_order_status: probe" in line]
    assert "probe HTTP 401 in " in probe and "FAILED: the shop refused the credentials" in probe
    code = "woocommerce_rest_authentication_error" if key else "woocommerce_rest_cannot_view"
    assert code in probe and "check the key in [http]" in probe, probe
    assert all(BASIC not in line and KEY not in line for line in lines)


async def test_an_order_reads_in_stepwise_words(agent: tuple[Agent, ToolRegistry]) -> None:
    ask, tools = agent
    run = await ask.ask("where is my order 1001", user_id=CUSTOMER, chat_id=CUSTOMER)
    assert run.status is RunStatus.COMPLETED
    assert run.steps[0].observation == {
        "order_id": "1001",
        "status": "paid",  # WooCommerce "processing": paid, not shipped yet
        "items": ["Wireless earbuds"],
    }
    assert run.answer == "Order 1001 is paid and not shipped yet."
    done = await tools.call("get_order_status", {"order_id": "1002"}, ctx())
    assert isinstance(done, ToolOk) and done.data["status"] == "delivered"


@pytest.mark.parametrize(
    ("woo_status", "ours"),
    [
        ("pending", "pending"),
        ("checkout-draft", "pending"),
        ("on-hold", "pending"),
        ("failed", "pending"),
        ("processing", "paid"),
        ("completed", "delivered"),
        ("cancelled", "cancelled"),
        ("refunded", "refunded"),
        ("trash", "cancelled"),
    ],
)
async def test_every_woocommerce_status_reads_as_woocommerce_means_it(
    agent: tuple[Agent, ToolRegistry], woo: Woo, woo_status: str, ours: str
) -> None:
    _, tools = agent
    woo.orders[1001]["status"] = woo_status
    read = await tools.call("get_order_status", {"order_id": "1001"}, ctx())
    assert isinstance(read, ToolOk) and read.data["status"] == ours


async def test_a_paid_order_not_shipped_can_be_refunded(
    stored: tuple[Agent, Any], woo: Woo
) -> None:
    """WooCommerce's most common refund: "processing" (paid, not shipped), once refused
    with "cancel it instead"."""
    agent, _ = stored
    run = await confirmed(agent, "I want a refund of 29 for order 1001")
    assert run.status is RunStatus.COMPLETED, run.answer
    assert [r["amount"] for r in woo.orders[1001]["refunds"]] == ["29.00"]
    assert "cancel it instead" not in (run.answer or "")


async def test_a_refunded_order_is_not_refunded_again(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    ask, _ = agent
    woo.orders[1002]["status"] = "refunded"
    run = await ask.ask("I want a refund of 10 for order 1002", user_id=CUSTOMER, chat_id=CUSTOMER)
    assert woo.writes() == []
    assert "Order 1002 has already been refunded in full" in (run.answer or ""), run.answer


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
        ("change_address", {"order_id": "2001", "address": "7 Harbour Road, Ningbo, 315000"}),
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
    assert made.data == {
        "refund_id": "700",
        "amount": "50.00",
        "money_moved": True,
        "order_id": "1002",
    }
    key = [{"key": "stepwise_idempotency_key", "value": "r1:s1"}]
    assert woo.writes()[-1][3] == {
        "amount": "50.00",
        "reason": "Scratched",
        "api_refund": True,
        "meta_data": key,  # the key, where WooCommerce stores it (it ignores the header)
    }

    refused = await tools.call("request_refund", {"order_id": "1002", "amount": "10"}, ctx())
    # WooCommerce's 500 would be retried as "unavailable"; its error code says "refused".
    assert isinstance(refused, ToolError) and refused.error_type is ErrorType.INVALID_ARGUMENTS
    assert "Invalid refund amount." in refused.message
    # No reason: left out.
    assert woo.writes()[-1][3] == {"amount": "10.00", "api_refund": True, "meta_data": key}
    assert len(woo.orders[1002]["refunds"]) == 1


async def test_address_and_policies(agent: tuple[Agent, ToolRegistry], woo: Woo) -> None:
    _, tools = agent
    moved = await tools.call(
        "change_address", {"order_id": "1001", "address": "7 Harbour Road, Ningbo 315000"}, ctx()
    )
    assert isinstance(moved, ToolOk)
    assert moved.data == {"order_id": "1001", "address": "7 Harbour Road, Ningbo, 315000"}
    put = [w for w in woo.writes() if w[0] == "PUT"][-1]
    assert put[3] == {
        "shipping": {
            "address_1": "7 Harbour Road",
            "address_2": "",
            "city": "Ningbo",
            "postcode": "315000",
            "country": "CN",
            "state": "",
        }
    }
    shipping = woo.orders[1001]["shipping"]
    assert (shipping["city"], shipping["postcode"]) == ("Ningbo", "315000")  # not Hangzhou
    found = await tools.call("search_policy", {"query": "refund", "lang": "en"}, ctx())
    assert isinstance(found, ToolOk)
    ((policy),) = found.data
    assert policy["title"] == "Refund & Returns Policy"
    text = policy["text"]
    assert text.startswith(
        "Returns are accepted within 30 days of delivery. Refunds take 5–7 days.\n"
        "• Unused items\n• In the original box\n"
        "Write to us first – we reply within a day. We check every return"
    )
    assert "<" not in text and "&" not in text
    assert text.endswith("tell you what we found.…") and len(text) <= 600
    assert re.search(r"search=refund&per_page=3$", woo.seen[-1][1])
    none = await tools.call("search_policy", {"query": "warranty"}, ctx())
    assert isinstance(none, ToolError) and none.error_type is ErrorType.EMPTY_RESULT


async def test_an_address_that_cannot_be_split_is_asked_for_again_before_confirming(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    ask, _ = agent
    run = await ask.ask(
        "change the address of order 1001 to 7 Harbour Road, Ningbo",
        user_id=CUSTOMER,
        chat_id=CUSTOMER,
    )
    assert run.status is not RunStatus.PAUSED  # no Confirm for an address we cannot send
    assert "please send the new address again as street, city, postcode" in (run.answer or "")
    assert woo.writes() == [] and woo.orders[1001]["shipping"]["city"] == "Hangzhou"


async def test_a_chinese_address_is_sent_in_parts_and_reconciled_by_them(
    stored: tuple[Agent, Any], woo: Woo
) -> None:
    """Written with full-width commas; its PUT answered too late, so the reconcile read
    finds the new parts there and nothing is sent twice."""
    agent, _ = stored
    woo.late.add("PUT")
    tools = agent.executor.registry
    ctx_ = ToolContext(user_id=CUSTOMER, trace_id="t", run_id="r9", step_id="s2")
    # The executor's path: the call times out, then the reconcile read decides.
    lost = await tools.call(
        "change_address", {"order_id": "1001", "address": "海港路 7 号，宁波，315000"}, ctx_
    )
    assert isinstance(lost, ToolError) and lost.may_have_happened
    tool = tools.get("change_address")
    assert tool is not None and tool.reconcile is not None
    args = tool.args_model.model_validate(
        {"order_id": "1001", "address": "海港路 7 号，宁波，315000"}
    )
    found = await tool.reconcile(args, ctx_)
    assert found == {"order_id": "1001", "address": "海港路 7 号, 宁波, 315000"}
    shipping = woo.orders[1001]["shipping"]
    assert (shipping["address_1"], shipping["city"], shipping["postcode"]) == (
        "海港路 7 号",
        "宁波",
        "315000",
    )
    assert len([w for w in woo.writes() if w[0] == "PUT"]) == 1


async def test_a_delivered_order_skips_the_cancel_and_sends_nothing(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    ask, _ = agent
    run = await ask.ask("cancel order 1002", user_id=CUSTOMER, chat_id=CUSTOMER)
    assert [s.status for s in run.steps] == [StepStatus.DONE, StepStatus.SKIPPED]
    assert woo.writes() == []
    assert json.dumps(run.model_dump(mode="json")).count(BASIC) == 0


# -- issue 20: a change WooCommerce makes but answers too late is made once ---------------

# Shorter than the test's own timeout; the late answer never comes before the test ends, so
# the client's timeout always fires (nothing depends on how long anything takes).
WRITE_TIMEOUT_S = 0.5
REFUND = "I want a refund of 10 for order 1002"
CANCEL = "cancel order 1001"


@pytest.fixture
async def stored(
    woo: Woo, tmp_path: Path, store_backend: Backend
) -> AsyncIterator[tuple[Agent, Any]]:
    """The agent on the example file with short write timeouts, its runs in either store."""
    config = config_for(woo, tmp_path, write_timeout_s=WRITE_TIMEOUT_S)
    store = await store_backend.open_store()
    async with httpx.AsyncClient() as client:
        registry = ToolRegistry(build_http_tools(config, client, sleep=RecordingSleep()))
        executor = Executor(registry, journal=store, sleep=RecordingSleep())
        yield Agent(RuleBasedPlanner(order_id_pattern=r"\d{3,10}"), executor, store), store
    await store.close()


async def confirmed(agent: Agent, text: str) -> Run:
    paused = await agent.ask(text, user_id=CUSTOMER, chat_id=CUSTOMER)
    assert paused.status is RunStatus.PAUSED and paused.pause is not None, paused.answer
    done = await agent.decide(paused.id, user_id=CUSTOMER, approved=True, nonce=paused.pause.nonce)
    assert done.run is not None
    return done.run


def posts(woo: Woo, path: str) -> list[Any]:
    return [body for method, at, _, body in woo.writes() if at == path]


async def test_a_refund_made_but_answered_late_is_made_once_and_told_once(
    stored: tuple[Agent, Any], woo: Woo
) -> None:
    agent, store = stored
    woo.late.add("refund")
    run = await confirmed(agent, REFUND)

    refunds = woo.orders[1002]["refunds"]
    assert len(refunds) == 1 and refunds[0]["amount"] == "10.00"
    assert len(posts(woo, "/wp-json/wc/v3/orders/1002/refunds")) == 1
    assert refunds[0]["meta_data"][0]["value"] == f"{run.id}:s2"
    assert run.status is RunStatus.COMPLETED
    step = run.steps[1]
    assert step.observation == {
        "refund_id": "700",
        "amount": "10.00",
        "money_moved": True,
        "order_id": "1002",
    }
    assert (run.answer or "").count("10.00") == 1, run.answer
    timeline = await store.history.timeline(run.id)
    (reconciled,) = [e for e in timeline if e.kind is EventKind.STEP_RECONCILED]
    assert reconciled.decision == "reconcile" and "happened" in (reconciled.message or "")
    assert not any(e.kind is EventKind.STEP_RETRYING for e in timeline)


async def test_a_refund_the_shop_makes_after_the_timeout_is_made_once(
    woo: Woo, tmp_path: Path, store_backend: Backend
) -> None:
    """Issue 36: the shop takes longer than the tool's timeout to make the refund. The
    read right after the timeout finds nothing; that proves nothing while the first
    request may still be in flight, so it is read again, never re-sent."""
    config = config_for(woo, tmp_path, write_timeout_s=WRITE_TIMEOUT_S)
    woo.slow.add("refund")
    backoffs: list[float] = []

    async def backoff(seconds: float) -> None:
        # The executor waits before reading again: meanwhile the shop finishes its work.
        backoffs.append(seconds)
        woo.proceed.set()
        await woo.made.wait()

    store = await store_backend.open_store()
    try:
        async with httpx.AsyncClient() as client:
            registry = ToolRegistry(build_http_tools(config, client, sleep=RecordingSleep()))
            executor = Executor(registry, journal=store, sleep=backoff)
            agent = Agent(RuleBasedPlanner(order_id_pattern=r"\d{3,10}"), executor, store)
            run = await confirmed(agent, REFUND)
            timeline = await store.history.timeline(run.id)
    finally:
        await store.close()

    assert len(woo.orders[1002]["refunds"]) == 1
    assert len(posts(woo, "/wp-json/wc/v3/orders/1002/refunds")) == 1
    assert backoffs, "the first read found nothing and was repeated"
    assert run.status is RunStatus.COMPLETED
    assert (run.answer or "").count("10.00") == 1 and "retry" not in (run.answer or "")
    assert not any(e.kind is EventKind.STEP_RETRYING for e in timeline)


async def test_a_refund_that_failed_before_it_was_made_is_sent_again_once(
    stored: tuple[Agent, Any], woo: Woo
) -> None:
    agent, _ = stored
    woo.fail_once.add("refund")  # a 503: it may have reached the shop, so a read decides
    run = await confirmed(agent, REFUND)

    assert run.status is RunStatus.COMPLETED
    assert len(woo.orders[1002]["refunds"]) == 1
    assert len(posts(woo, "/wp-json/wc/v3/orders/1002/refunds")) == 2


async def test_a_refund_nobody_can_check_is_an_unknown_outcome_for_staff(
    stored: tuple[Agent, Any], woo: Woo
) -> None:
    agent, store = stored
    woo.late.add("refund")
    woo.reads_down = True
    run = await confirmed(agent, REFUND)

    assert len(woo.orders[1002]["refunds"]) == 1  # made once, never sent again
    assert len(posts(woo, "/wp-json/wc/v3/orders/1002/refunds")) == 1
    assert run.status is RunStatus.FAILED and run.stop_reason == "unknown_outcome"
    step = run.steps[1]
    assert step.error is not None and step.error.type is ErrorType.UNKNOWN_OUTCOME
    answer = run.answer or ""
    assert "may already have been done; we are checking" in answer
    assert "Please don't send it again" in answer
    assert "was not done" not in answer
    stored_run = await store.load_run(run.id)
    assert stored_run is not None and stored_run.stop_reason == "unknown_outcome"
    timeline = await store.history.timeline(run.id)
    view = build_run_view(stored_run, timeline)
    (flag,) = view.notices
    assert "unknown outcome" in (flag.message or "") and "HTTP 503" in (flag.message or "")


async def test_a_cancel_made_but_answered_late_is_sent_once_and_told_once(
    stored: tuple[Agent, Any], woo: Woo
) -> None:
    agent, _ = stored
    woo.late.add("PUT")
    run = await confirmed(agent, CANCEL)

    assert woo.orders[1001]["status"] == "cancelled"
    assert len(posts(woo, "/wp-json/wc/v3/orders/1001")) == 1
    assert run.status is RunStatus.COMPLETED
    assert run.answer == "Order 1001 has been cancelled."


async def test_a_cancel_nobody_can_check_is_an_unknown_outcome(
    stored: tuple[Agent, Any], woo: Woo
) -> None:
    agent, _ = stored
    woo.late.add("PUT")
    woo.reads_down = True
    run = await confirmed(agent, CANCEL)

    assert len(posts(woo, "/wp-json/wc/v3/orders/1001")) == 1
    assert run.status is RunStatus.FAILED and run.stop_reason == "unknown_outcome"
    assert "we are checking" in (run.answer or "")


async def test_what_a_failed_change_says_about_reaching_the_shop(
    agent: tuple[Agent, ToolRegistry], woo: Woo, tmp_path: Path, unused_tcp_port: int
) -> None:
    """A 5xx may have been made; a failed ownership check, or a shop that was never
    connected to, surely was not (then a retry needs no reconcile read)."""
    _, tools = agent
    refund = {"order_id": "1002", "amount": "10"}
    woo.fail_once.add("refund")
    after_sending = await tools.call("request_refund", refund, ctx())
    assert isinstance(after_sending, ToolError) and after_sending.may_have_happened

    woo.reads_down = True  # the check_first read fails: the refund is never sent
    unchecked = await tools.call("request_refund", refund, ctx(step_id="s2"))
    assert isinstance(unchecked, ToolError) and unchecked.error_type is ErrorType.UNAVAILABLE
    assert not unchecked.may_have_happened

    # A change sent straight (no check_first) to a port nobody listens on: never sent.
    path = tmp_path / "nowhere.toml"
    path.write_text(
        "[tools.cancel_order]\n"
        'method = "PUT"\n'
        f'url = "http://127.0.0.1:{unused_tcp_port}/orders/{{order_id}}"\n'
        'idempotency = "ignored"\n',
        encoding="utf-8",
    )
    async with httpx.AsyncClient() as client:
        nowhere = ToolRegistry(build_http_tools(load_tools_config(path, env={}), client))
        refused = await nowhere.call("cancel_order", {"order_id": "1001"}, ctx())
    assert isinstance(refused, ToolError) and refused.error_type is ErrorType.UNAVAILABLE
    assert "ConnectError" in refused.message and not refused.may_have_happened


async def test_a_shop_echoing_our_key_in_its_refusal_leaks_no_form_of_it(
    woo: Woo, standin: StandIn, tmp_path: Path
) -> None:
    """Over HTTP both ways: the shop refuses our key and quotes it back in its 401 body,
    cut, re-cased, encoded and spelled out. The stored run, the staff alert and the
    console's run page show the shop's words and none of the key."""
    from tests.test_console import TOKEN as STAFF_TOKEN
    from tests.test_console import sign_in

    echoes = [
        BASIC[-10:],  # the end of the header value we sent
        BASIC[6:18],  # a piece from its middle
        KEY.upper(),  # the credential it encodes, re-cased
        KEY[-9:],  # the end of the consumer secret
        quote(KEY, safe=""),
        base64.b64encode(f"xx{KEY[3:]}".encode()).decode(),  # re-encoded, shifted
        " ".join(KEY[10:]),
        "-".join(BASIC[:12]),
    ]
    staff_forum(standin)
    woo.key = base64.b64encode(b"ck_new:cs_new").decode()  # the shop revoked our key
    woo.refusal = "Consumer key is invalid: got " + " | ".join(echoes)
    async with httpx.AsyncClient() as client:
        h = await start_bot(
            standin,
            tmp_path / "bot.db",
            tools=build_http_tools(config_for(woo, tmp_path), client),
            STEPWISE_STAFF_CHAT_ID=str(FORUM),
            STEPWISE_CONSOLE_URL="https://staff.example",
            STEPWISE_ORDER_PATTERN=r"\d{3,10}",
        )
        try:
            standin.inject_message(DEMO, DEMO, "where is my order 1001", first_name="Ada")
            await h.until_text(DEMO, "our order system has a problem, so this was not done")
            (run_id,) = [r for (r,) in h.query("SELECT id FROM runs")]
            console = create_app(h.runtime.store, staff_token=STAFF_TOKEN)
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=console), base_url="http://console"
            ) as staff:
                assert (await sign_in(staff)).status_code == 303
                page = (await staff.get(f"/runs/{run_id}")).text
        finally:
            await h.stop()
    stored = "\n".join(sqlite3.connect(tmp_path / "bot.db").iterdump())
    (alert,) = [
        m.text or ""
        for m in standin.chat_messages(FORUM)
        if "Order system problem" in (m.text or "")
    ]

    def leaked(text: str) -> list[str]:
        low = text.lower()
        return [e for e in [*echoes, BASIC, KEY] if e.lower() in low]

    assert "Consumer key is invalid: got ***" in stored and not leaked(stored)
    assert "Consumer key is invalid" in alert and not leaked(alert)
    assert "Consumer key is invalid" in page and not leaked(page)


# -- issue 22 item 3: the shop's own system broken is a backend failure, told to staff once --


async def test_a_revoked_key_is_a_backend_failure_not_a_missing_order(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    ask, tools = agent
    woo.key = base64.b64encode(b"ck_new:cs_new").decode()  # the shop revoked our key
    read = await tools.call("get_order_status", {"order_id": "1001"}, ctx())
    assert isinstance(read, ToolError) and read.error_type is ErrorType.BACKEND
    assert "woocommerce_rest_authentication_error" not in read.message  # the shop's words:
    assert "Consumer key is invalid." in read.message and BASIC not in read.message
    run = await ask.ask("where is my order 1001", user_id=CUSTOMER, chat_id=CUSTOMER)
    assert run.status is RunStatus.FAILED and run.stop_reason == "backend"
    answer = run.answer or ""
    assert "our order system has a problem" in answer and "a person has been told" in answer
    assert "couldn't find order" not in answer


async def test_an_answer_that_breaks_the_contract_is_a_backend_failure(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    _, tools = agent
    woo.orders[1001]["status"] = "wc-shipped-by-plugin"  # a status nobody mapped
    read = await tools.call("get_order_status", {"order_id": "1001"}, ctx())
    assert isinstance(read, ToolError) and read.error_type is ErrorType.BACKEND
    assert "breaks the contract" in read.message


async def test_a_shop_server_failing_through_every_retry_is_a_backend_failure(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    ask, _ = agent
    woo.reads_down = True
    woo.seen.append(("PUT", "/", {}, None))  # reads_down starts after a change
    run = await ask.ask("where is my order 1001", user_id=CUSTOMER, chat_id=CUSTOMER)
    gets = [s for s in woo.seen if s[0] == "GET"]
    assert len(gets) == 3  # the first try and two retries, then it stops
    assert run.stop_reason == "backend"
    assert "our order system has a problem" in (run.answer or "")


async def test_staff_read_one_alert_per_backend_incident_and_customers_are_told(
    woo: Woo, standin: StandIn, tmp_path: Path
) -> None:
    """Over HTTP both ways: the bot polls the Telegram stand-in, its tools call the
    WooCommerce stand-in, whose key was revoked. Two customers' questions, one alert."""
    staff_forum(standin)
    woo.key = base64.b64encode(b"ck_new:cs_new").decode()
    woo.orders[1003] = woo_order(1003, "processing", OTHER, "20.00")
    config = config_for(woo, tmp_path)
    async with httpx.AsyncClient() as client:
        h = await start_bot(
            standin,
            tmp_path / "bot.db",
            tools=build_http_tools(config, client),
            STEPWISE_STAFF_CHAT_ID=str(FORUM),
            STEPWISE_CONSOLE_URL="https://staff.example",
            STEPWISE_ORDER_PATTERN=r"\d{3,10}",
        )
        try:
            standin.inject_message(DEMO, DEMO, "where is my order 1001", first_name="Ada")
            await h.until_text(DEMO, "our order system has a problem, so this was not done")
            standin.add_chat(OTHER, OTHER, first_name="Bo")
            standin.inject_message(OTHER, OTHER, "订单 1003 到哪了", first_name="Bo")
            await h.until_text(OTHER, "我们的订单系统出了问题")
            assert not any("找到" in t for t in texts(h, OTHER))
        finally:
            await h.stop()

    general = [m for m in standin.chat_messages(FORUM) if m.message_thread_id is None]
    (alert,) = [m for m in general if "Order system problem" in (m.text or "")]
    text = alert.text or ""
    assert "Tool: get_order_status · HTTP 401" in text
    assert "Consumer key is invalid." in text
    assert BASIC not in text and KEY not in text and "cs_77c1d0e4b3" not in text
    assert str(DEMO) not in text and "Ada" not in text  # about the shop, not a customer
    assert standin.topics(FORUM) == []  # nobody's conversation: no customer topic made
    flagged = h.query("SELECT message FROM events WHERE kind = 'notice'")
    assert len(flagged) == 2 and all("backend failure" in m for (m,) in flagged)


async def test_a_wordpress_page_reaches_the_customer_as_plain_text(
    agent: tuple[Agent, ToolRegistry],
) -> None:
    ask, _ = agent
    run = await ask.ask("what is your refund policy?", user_id=CUSTOMER, chat_id=CUSTOMER)
    answer = run.answer or ""
    assert "Refund & Returns Policy" in answer, answer
    assert "Returns are accepted within 30 days of delivery." in answer
    assert "• Unused items" in answer
    assert "<p>" not in answer and "&amp;" not in answer and "&hellip;" not in answer


# -- issue 22 item 5: refunds say whether money moved, changes leave a note, query keys --


async def test_a_change_leaves_an_order_note_with_its_idempotency_key(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    ask, _ = agent
    run = await confirmed(ask, CANCEL)
    assert run.status is RunStatus.COMPLETED
    (note,) = woo.notes[1001]
    assert note["note"] == (
        f"Cancelled by stepwise at the customer's request in Telegram (key {run.id}:s2)."
    )
    assert note["customer_note"] is False  # for the shop's staff, not mailed to the customer
    (sent,) = [s for s in woo.seen if s[1].endswith("/notes")]
    assert sent[2]["Idempotency-Key"] == f"{run.id}:s2:note"


async def test_a_note_that_fails_never_fails_the_change(
    agent: tuple[Agent, ToolRegistry], woo: Woo
) -> None:
    ask, _ = agent
    woo.notes_down = True
    run = await confirmed(ask, CANCEL)
    assert run.status is RunStatus.COMPLETED and run.answer == "Order 1001 has been cancelled."
    assert woo.orders[1001]["status"] == "cancelled" and woo.notes == {}
    assert len(posts(woo, "/wp-json/wc/v3/orders/1001")) == 1  # the change: sent once


@pytest.mark.parametrize("api_refund", ["true", "false"])
async def test_a_refund_says_whether_money_moved(woo: Woo, tmp_path: Path, api_refund: str) -> None:
    config = config_for(woo, tmp_path, edit=("api_refund = true", f"api_refund = {api_refund}"))
    store = await SqliteRunStore.open(tmp_path / "runs.db")
    try:
        async with httpx.AsyncClient() as client:
            registry = ToolRegistry(build_http_tools(config, client, sleep=RecordingSleep()))
            executor = Executor(registry, journal=store, sleep=RecordingSleep())
            agent = Agent(RuleBasedPlanner(order_id_pattern=r"\d{3,10}"), executor, store)
            run = await confirmed(agent, REFUND)
    finally:
        await store.close()
    assert run.status is RunStatus.COMPLETED
    assert posts(woo, "/wp-json/wc/v3/orders/1002/refunds")[0]["api_refund"] is (
        api_refund == "true"
    )
    answer = run.answer or ""
    if api_refund == "true":
        assert "A refund of 10.00 for order 1002 has been requested" in answer, answer
        assert "No money has moved" not in answer
    else:
        assert "has been recorded (refund number 700). No money has moved yet" in answer, answer
    (note,) = woo.notes[1002]
    assert "Refund of 10.00" in note["note"] and f"{run.id}:s2" in note["note"]


QUERY_KEYS = (
    'headers = { Authorization = "Basic ${WOO_BASIC_AUTH}" }',
    'query = { consumer_key = "${WOO_CONSUMER_KEY}", consumer_secret = "${WOO_CONSUMER_SECRET}" }',
)
KEY_ENV = {"WOO_CONSUMER_KEY": "ck_5f2a9e", "WOO_CONSUMER_SECRET": "cs_77c1d0e4b3"}


def test_query_string_keys_are_refused_over_plain_http(woo: Woo, tmp_path: Path) -> None:
    with pytest.raises(ToolsConfigError) as refused:
        config_for(woo, tmp_path, edit=QUERY_KEYS, env=KEY_ENV)
    message = str(refused.value)
    assert "[http] query: keys in the query string are only sent over https://" in message
    assert "cs_77c1d0e4b3" not in message


@pytest.fixture
def tls(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: the server's context, and a client's that
    trusts it."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec"),
            *("-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(cert))


async def test_query_string_keys_over_https_reach_the_shop_and_never_the_logs(
    woo: Woo,
    tmp_path: Path,
    tls: tuple[ssl.SSLContext, ssl.SSLContext],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A host that strips Authorization: the key goes in the query string, over HTTPS."""
    assert woo.runner is not None
    site = web.TCPSite(woo.runner, "127.0.0.1", 0, ssl_context=tls[0])
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    config = config_for(
        woo, tmp_path, base=f"https://127.0.0.1:{port}", edit=QUERY_KEYS, env=KEY_ENV
    )
    redact_in_logs(*config.url_secrets())  # as `stepwise serve` does on loading the file
    for name in ("", "httpx", "httpcore", "agent_core"):
        caplog.set_level(logging.DEBUG, logger=name or None)
    lines: list[str] = []
    async with httpx.AsyncClient(verify=tls[1]) as client:
        tools = ToolRegistry(build_http_tools(config, client, sleep=RecordingSleep()))
        read = await tools.call("get_order_status", {"order_id": "1001"}, ctx())
        moved = await tools.call(
            "change_address",
            {"order_id": "1001", "address": "7 Harbour Road, Ningbo, 315000"},
            ctx(),
        )
        woo.key = base64.b64encode(b"ck_new:cs_new").decode()  # now revoked
        refused = await tools.call("get_order_status", {"order_id": "1001"}, ctx())
        await print_tools_check(config, probe=True, out=lines.append, client=client)
    assert isinstance(read, ToolOk) and read.data["status"] == "paid"
    assert isinstance(moved, ToolOk)
    sent = [s for s in woo.seen if "/orders/1001" in s[1]]
    assert sent and all("Authorization" not in headers for _, _, headers, _ in sent)
    assert isinstance(refused, ToolError) and refused.error_type is ErrorType.BACKEND
    assert "https://127.0.0.1" in caplog.text  # httpx logged the urls, blanked
    exposed = [caplog.text, refused.message, *lines, repr(config), config.model_dump_json()]
    for text in exposed:
        assert "cs_77c1d0e4b3" not in text and "ck_5f2a9e" not in text


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            (
                'address_parts = { arg = "address", country = "CN" }',
                'address_parts = { arg = "street", country = "CN" }',
            ),
            "tool change_address: address_parts.arg: 'street' is not an argument of change_address",
        ),
        (
            (
                "[tools.search_policy.response]",
                '[tools.search_policy.note]\nurl = "https://shop.example/n"\nbody = {}\n\n[tools.search_policy.response]',
            ),
            'tool search_policy: note: only a change (risk = "high") leaves a note',
        ),
    ],
)
def test_the_new_fields_are_checked_at_load(
    woo: Woo, tmp_path: Path, edit: tuple[str, str], said: str
) -> None:
    with pytest.raises(ToolsConfigError) as refused:
        config_for(woo, tmp_path, edit=edit)
    assert said in str(refused.value)
