"""A local server that answers like Shopify's Admin GraphQL API, for the tests of
`examples/shopify.toml`: one `POST /admin/api/<version>/graphql.json` endpoint.

It reads each operation well enough for the example: its kind and name, its declared
variables (`$name: Type`, each value checked against its type, as Shopify refuses a bad one
with a top-level error), and its root field (`orders`, `orderCancel`, `refundCreate`,
`orderUpdate`). It keeps orders, refunds and fulfillments, checks the
`X-Shopify-Access-Token` header (a 401 like Shopify's otherwise), answers refusals as
userErrors (`orderCancelUserErrors` with codes for the cancel), and can throttle with the
real shape (HTTP 200, `errors[].extensions.code = "THROTTLED"`, the cost extension).
Like Shopify, it takes no idempotency key: every refundCreate makes a refund. A change can
be made and its answer held until the test ends (`late`), to lose the answer.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from aiohttp import web

from tests.local_http import serve_app

VERSION = "2025-01"
TOKEN = "shpat_4f1b2c9d8e7a6b5c4d3e2f1a"
PATH = f"/admin/api/{VERSION}/graphql.json"

_OPERATION = re.compile(r"\s*(query|mutation)\s+([A-Za-z_]\w*)\s*(\(([^)]*)\))?\s*\{\s*(\w+)")
_VARIABLE = re.compile(r"\$(\w+)\s*:\s*(\[?\w+!?\]?!?)")
_NAME = re.compile(r"^name:#(\S+)$")
_METAFIELD = re.compile(
    r'(\w+)\s*:\s*metafield\(namespace:\s*"stepwise",\s*key:\s*"telegram_user_id"\)'
)
_CANCEL_REASONS = {"CUSTOMER", "DECLINED", "FRAUD", "INVENTORY", "OTHER", "STAFF"}


HOME: dict[str, str | None] = {
    "firstName": "Li",
    "lastName": "Wei",
    "phone": "+8613800000000",
    "address1": "88 Century Avenue",
    "address2": None,
    "city": "Shanghai",
    "provinceCode": "SH",
    "zip": "200120",
    "countryCodeV2": "CN",
}
# MailingAddressInput's fields (the ones HOME holds; countryCode for countryCodeV2).
_ADDRESS_INPUT = (
    "firstName",
    "lastName",
    "phone",
    "address1",
    "address2",
    "city",
    "provinceCode",
    "zip",
)


def gid(kind: str, number: int) -> str:
    return f"gid://shopify/{kind}/{number}"


@dataclass
class ShopifyOrder:
    number: int
    owner: int | None
    total: Decimal
    fulfillment: str = "UNFULFILLED"
    cancelled_at: str | None = None
    # A MailingAddress as the Admin API answers it (countryCodeV2 out, countryCode in).
    address: dict[str, str | None] = field(default_factory=lambda: dict(HOME))
    refunds: list[dict[str, Any]] = field(default_factory=list)
    fulfillments: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return gid("Order", 5_000_000 + self.number)

    @property
    def name(self) -> str:
        return f"#{self.number}"

    @property
    def refunded(self) -> Decimal:
        return sum((Decimal(r["amount"]) for r in self.refunds), Decimal(0))


def _error(message: str, code: str, status: int = 200) -> web.Response:
    return web.json_response(
        {"errors": [{"message": message, "extensions": {"code": code}}]}, status=status
    )


def _money(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _type_error(name: str, kind: str, value: Any) -> str | None:
    """Why `value` is not a `kind` (Shopify's own wording, roughly); None when it is."""
    required = kind.endswith("!")
    base = kind.rstrip("!")
    if value is None:
        return f"Variable ${name} of type {kind} was provided invalid value" if required else None
    ok = {
        "String": isinstance(value, str),
        "ID": isinstance(value, str) and value.startswith("gid://shopify/"),
        "Money": _money(value) is not None,
        "Boolean": isinstance(value, bool),
        "Int": isinstance(value, int) and not isinstance(value, bool),
    }.get(base, isinstance(value, dict))  # an input object
    return None if ok else f"Variable ${name} of type {kind} was provided invalid value"


@dataclass
class Shopify:
    base: str = ""
    orders: dict[int, ShopifyOrder] = field(default_factory=dict)
    # Every operation: (operation name, root field, variables, headers, query text).
    seen: list[tuple[str, str, dict[str, Any], dict[str, str], str]] = field(default_factory=list)
    # How many of the next requests are throttled, and the cost extension they report.
    throttle: int = 0
    throttle_cost: dict[str, Any] = field(
        default_factory=lambda: {
            "requestedQueryCost": 70,
            "actualQueryCost": None,
            "throttleStatus": {
                "maximumAvailable": 1000.0,
                "currentlyAvailable": 66,
                "restoreRate": 50.0,
            },
        }
    )
    # Only these root fields are throttled (None: every request).
    throttle_roots: set[str] | None = None
    # Mutations (root field names) made once and answered only when the test ends.
    late: set[str] = field(default_factory=set)
    released: asyncio.Event = field(default_factory=asyncio.Event)
    next_id: int = 700

    def mutations(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            (root, variables)
            for _, root, variables, _, query in self.seen
            if query.lstrip().startswith("mutation")
        ]

    def by_gid(self, value: Any) -> ShopifyOrder | None:
        return next((o for o in self.orders.values() if o.id == value), None)

    # -- the endpoint --------------------------------------------------------------------

    async def graphql(self, request: web.Request) -> web.Response:
        if request.headers.get("X-Shopify-Access-Token") != TOKEN:
            return web.json_response(
                {
                    "errors": "[API] Invalid API key or access token (unrecognized login or wrong password)"
                },
                status=401,
            )
        body = await request.json()
        query, variables = body.get("query", ""), body.get("variables") or {}
        parsed = _OPERATION.match(query)
        if parsed is None:
            return _error("Parse error on query", "PARSE_ERROR")
        kind, name, _, declared, root = parsed.groups()
        self.seen.append((name, root, variables, dict(request.headers), query))
        if self.throttle and (self.throttle_roots is None or root in self.throttle_roots):
            self.throttle -= 1
            return web.json_response(
                {
                    "errors": [
                        {
                            "message": "Throttled",
                            "extensions": {
                                "code": "THROTTLED",
                                "documentation": "https://shopify.dev/api/usage/rate-limits",
                            },
                        }
                    ],
                    "extensions": {"cost": self.throttle_cost},
                }
            )
        types = dict(_VARIABLE.findall(declared or ""))
        for var in variables:
            if var not in types:
                return _error(f"Variable ${var} is not declared by {name}", "argumentNotAccepted")
        for var, var_type in types.items():
            problem = _type_error(var, var_type, variables.get(var))
            if problem is not None:
                return _error(problem, "INVALID_VARIABLE")
        handler = {
            ("query", "orders"): self._orders,
            ("mutation", "orderCancel"): self._cancel,
            ("mutation", "refundCreate"): self._refund,
            ("mutation", "orderUpdate"): self._update,
        }.get((kind, root))
        if handler is None:
            return _error(f"Field '{root}' doesn't exist on type '{kind}'", "undefinedField")
        data = handler(query, variables)
        answer = web.json_response(
            {"data": {root: data}, "extensions": {"cost": {"requestedQueryCost": 10}}}
        )
        if root in self.late:
            self.late.discard(root)
            await self.released.wait()
        return answer

    def _orders(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        found = _NAME.match(variables.get("query", ""))
        order = None
        if found is not None and found.group(1).isdigit():
            order = self.orders.get(int(found.group(1)))
        if order is None:
            return {"nodes": []}
        alias = _METAFIELD.search(query)
        telegram = {"value": str(order.owner)} if order.owner is not None else None
        customer = (
            None if order.owner is None else {alias.group(1) if alias else "metafield": telegram}
        )
        node: dict[str, Any] = {
            "id": order.id,
            "name": order.name,
            "cancelledAt": order.cancelled_at,
            "displayFinancialStatus": "REFUNDED" if order.cancelled_at else "PAID",
            "displayFulfillmentStatus": order.fulfillment,
            "customer": customer,
            "lineItems": {"nodes": [{"name": "Wireless earbuds"}]},
            "fulfillments": order.fulfillments,
            "shippingAddress": dict(order.address),
            "refunds": [
                {
                    "id": r["id"],
                    "legacyResourceId": r["legacyResourceId"],
                    "note": r["note"],
                    "totalRefundedSet": {
                        "shopMoney": {"amount": r["amount"], "currencyCode": "CNY"}
                    },
                }
                for r in order.refunds
            ],
        }
        if "suggestedRefund" in query:
            wanted = _money(variables.get("amount")) or Decimal(0)
            left = order.total - order.refunded
            amount = min(wanted, left)
            node["suggestedRefund"] = {
                "suggestedTransactions": []
                if amount <= 0
                else [
                    {
                        "gateway": "shopify_payments",
                        "parentTransaction": {"id": gid("OrderTransaction", order.number)},
                        "amountSet": {"shopMoney": {"amount": f"{amount:.2f}"}},
                    }
                ]
            }
        return {"nodes": [node]}

    def _cancel(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        # reason, refund, restock are literals in the example's text: check them there.
        reason = re.search(r"reason:\s*(\w+)", query)
        if (
            reason is None
            or reason.group(1) not in _CANCEL_REASONS
            or "refund:" not in query
            or "restock:" not in query
        ):
            raise web.HTTPOk(
                text='{"errors":[{"message":"orderCancel needs reason, refund and restock","extensions":{"code":"missingRequiredArguments"}}]}',
                content_type="application/json",
            )
        order = self.by_gid(variables.get("orderId"))
        if order is None:
            return _cancel_refused("NOT_FOUND", "Order does not exist.")
        if order.cancelled_at is not None:
            return _cancel_refused(
                "INVALID", "Cannot cancel an order that has already been cancelled."
            )
        if order.fulfillment == "FULFILLED":
            return _cancel_refused("INVALID", "Cannot cancel a fulfilled order.")
        order.cancelled_at = "2025-03-01T10:00:00Z"  # the job, done at once here
        return {"job": {"id": gid("Job", 1), "done": False}, "orderCancelUserErrors": []}

    def _refund(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        data = variables["input"]
        order = self.by_gid(data.get("orderId"))
        if order is None:
            return {
                "refund": None,
                "userErrors": [{"field": ["orderId"], "message": "Order does not exist"}],
            }
        transactions = data.get("transactions") or []
        total = Decimal(0)
        for n, t in enumerate(transactions):
            amount = _money(t.get("amount"))
            if (
                amount is None
                or t.get("kind") != "REFUND"
                or t.get("orderId") != order.id
                or t.get("parentId") != gid("OrderTransaction", order.number)
                or t.get("gateway") != "shopify_payments"
            ):
                return {
                    "refund": None,
                    "userErrors": [
                        {"field": ["transactions", str(n)], "message": "Transaction is invalid"}
                    ],
                }
            total += amount
        if total <= 0 or total > order.total - order.refunded:
            return {
                "refund": None,
                "userErrors": [
                    {
                        "field": ["transactions"],
                        "message": "Refund amount must be less than or equal to the refundable amount",
                    }
                ],
            }
        self.next_id += 1
        refund = {
            "id": gid("Refund", self.next_id),
            "legacyResourceId": str(self.next_id),
            "note": data.get("note"),
            "amount": f"{total:.2f}",
        }
        order.refunds.append(refund)  # whatever the headers say: Shopify takes no key
        return {
            "refund": {
                "id": refund["id"],
                "legacyResourceId": refund["legacyResourceId"],
                "note": refund["note"],
                "totalRefundedSet": {
                    "shopMoney": {"amount": refund["amount"], "currencyCode": "CNY"}
                },
            },
            "userErrors": [],
        }

    def _update(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        data = variables["input"]
        order = self.by_gid(data.get("id"))
        if order is None:
            return {
                "order": None,
                "userErrors": [{"field": ["id"], "message": "Order does not exist"}],
            }
        address = data.get("shippingAddress") or {}
        if not isinstance(address.get("address1"), str) or not address["address1"].strip():
            return {
                "order": None,
                "userErrors": [
                    {"field": ["shippingAddress", "address1"], "message": "Address1 can't be blank"}
                ],
            }
        # "The new shipping address for the order. Overwrites the existing shipping address."
        order.address = {name: address.get(name) for name in _ADDRESS_INPUT}
        order.address["countryCodeV2"] = address.get("countryCode")
        return {
            "order": {
                "id": order.id,
                "name": order.name,
                "shippingAddress": dict(order.address),
            },
            "userErrors": [],
        }


def _cancel_refused(code: str, message: str) -> dict[str, Any]:
    return {
        "job": None,
        "orderCancelUserErrors": [{"field": ["orderId"], "message": message, "code": code}],
        "userErrors": [],
    }


def shipped(order: ShopifyOrder, *, delivered: bool = False) -> ShopifyOrder:
    """`order` fulfilled, with a carrier, a number and its events (newest first)."""
    order.fulfillment = "FULFILLED"
    events = [
        {
            "status": "IN_TRANSIT",
            "message": "Departed the sorting centre",
            "happenedAt": "2025-03-02T08:00:00Z",
            "city": "Hangzhou",
        },
        {
            "status": "CONFIRMED",
            "message": None,
            "happenedAt": "2025-03-01T18:00:00Z",
            "city": None,
        },
    ]
    if delivered:
        events.insert(
            0,
            {
                "status": "DELIVERED",
                "message": "Delivered",
                "happenedAt": "2025-03-03T09:00:00Z",
                "city": "Shanghai",
            },
        )
    order.fulfillments = [
        {
            "displayStatus": "DELIVERED" if delivered else "IN_TRANSIT",
            "trackingInfo": [
                {
                    "company": "SF Express",
                    "number": "SF1234567890",
                    "url": "https://sf.example/SF1234567890",
                }
            ],
            "events": {"nodes": events},
        }
    ]
    return order


def sample_orders(customer: int, other: int) -> dict[int, ShopifyOrder]:
    return {
        1001: ShopifyOrder(1001, customer, Decimal("129.00")),
        1002: shipped(ShopifyOrder(1002, customer, Decimal("59.00"))),
        1003: shipped(ShopifyOrder(1003, customer, Decimal("80.00")), delivered=True),
        2001: ShopifyOrder(2001, other, Decimal("259.00")),
        3001: ShopifyOrder(3001, None, Decimal("10.00")),  # a guest checkout
    }


@asynccontextmanager
async def running(shop: Shopify) -> AsyncIterator[Shopify]:
    app = web.Application()
    app.router.add_post(PATH, shop.graphql)
    runner, shop.base = await serve_app(app)
    try:
        yield shop
    finally:
        shop.released.set()
        await runner.cleanup()
