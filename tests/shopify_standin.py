"""A local server that answers like Shopify's Admin GraphQL API, for the tests of
`examples/shopify.toml`: one `POST /admin/api/<version>/graphql.json` endpoint.

Every operation is held against Shopify's published Admin schema for that version
(`tests/schemas/shopify-admin-2025-01.graphql`, read by graphql-core), never against
strings: a field, an argument or a variable type Shopify does not have is refused as
Shopify refuses it (HTTP 200, `errors` with its messages and codes: `undefinedField`,
`argumentNotAccepted`, `missingRequiredArguments`, `variableNotUsed`; a variable that is
not a value of its type, "Variable $x of type T was provided invalid value"), so an
example that passes here passes Shopify's own validation. A valid operation is executed by
graphql-core over the stand-in's data, so the answer holds exactly the fields asked for,
under their aliases.

It keeps orders, refunds and fulfillments, checks the `X-Shopify-Access-Token` header (a
401 like Shopify's otherwise), answers refusals as userErrors (`orderCancelUserErrors` with
codes for the cancel), and can throttle with the real shape (HTTP 200,
`errors[].extensions.code = "THROTTLED"`, the cost extension). Like Shopify, it takes no
idempotency key: every refundCreate makes a refund. A change can be made and its answer
held until the test ends (`late`), to lose the answer.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from aiohttp import web
from graphql import (
    FieldNode,
    GraphQLError,
    GraphQLScalarType,
    GraphQLSchema,
    OperationDefinitionNode,
    build_ast_schema,
    execute_sync,
    get_operation_ast,
    is_non_null_type,
    parse,
    print_ast,
    specified_rules,
    validate,
)
from graphql.execution.values import get_variable_values
from graphql.pyutils import Undefined
from graphql.validation import (
    FieldsOnCorrectTypeRule,
    KnownArgumentNamesRule,
    NoUnusedVariablesRule,
    ProvidedRequiredArgumentsRule,
    ValidationRule,
)

from tests.local_http import serve_app

VERSION = "2025-01"
TOKEN = "shpat_4f1b2c9d8e7a6b5c4d3e2f1a"
PATH = f"/admin/api/{VERSION}/graphql.json"

_NAME = re.compile(r"^name:#(\S+)$")
SCHEMA_FILE = Path(__file__).resolve().parent / "schemas" / f"shopify-admin-{VERSION}.graphql"

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
        schema = admin_schema()
        try:
            document = parse(query)
        except GraphQLError as error:
            return web.json_response({"errors": [_parse_error(error)]})
        operation = get_operation_ast(document, body.get("operationName"))
        if operation is None:
            return _error("An operation name is required", "operationNameRequired")
        name = operation.name.value if operation.name else ""
        first = operation.selection_set.selections[0]
        root = first.name.value if isinstance(first, FieldNode) else ""
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
        refused = shopify_validation_errors(schema, document) or _variable_errors(
            schema, operation, variables
        )
        if refused:
            return web.json_response({"errors": refused})
        result = execute_sync(
            schema,
            document,
            root_value=self._roots(),
            variable_values=variables,
            operation_name=body.get("operationName"),
        )
        answer: dict[str, Any] = {
            "data": result.data,
            "extensions": {"cost": {"requestedQueryCost": 10}},
        }
        if result.errors:
            answer["errors"] = [e.formatted for e in result.errors]
        response = web.json_response(answer)
        if root in self.late:
            self.late.discard(root)
            await self.released.wait()
        return response

    def _roots(self) -> dict[str, Any]:
        """The root fields the stand-in keeps data for; each is called with its arguments
        (graphql-core's default resolver calls a callable value with them)."""
        return {
            "orders": self._orders,
            "orderCancel": self._cancel,
            "refundCreate": self._refund,
            "orderUpdate": self._update,
        }

    def _orders(self, _info: Any, query: str | None = None, **_: Any) -> dict[str, Any]:
        found = _NAME.match(query or "")
        order = None
        if found is not None and found.group(1).isdigit():
            order = self.orders.get(int(found.group(1)))
        return {"nodes": [] if order is None else [self._node(order)]}

    def _node(self, order: ShopifyOrder) -> dict[str, Any]:
        """`order` as an Order object: plain values, and a function per field that takes
        arguments. graphql-core answers only the fields the query selects."""

        def metafield(_info: Any, key: str, namespace: str | None = None) -> Any:
            wanted = (namespace, key) == ("stepwise", "telegram_user_id")
            return {"value": str(order.owner)} if wanted else None

        customer = (
            None
            if order.owner is None
            else {"id": gid("Customer", order.owner), "metafield": metafield}
        )
        return {
            "id": order.id,
            "name": order.name,
            "cancelledAt": order.cancelled_at,
            "displayFinancialStatus": "REFUNDED" if order.cancelled_at else "PAID",
            "displayFulfillmentStatus": order.fulfillment,
            "customer": customer,
            "lineItems": lambda _info, **_: {
                "nodes": [{"id": gid("LineItem", order.number), "name": "Wireless earbuds"}]
            },
            "fulfillments": lambda _info, first=None, **_: [
                _fulfillment(f) for f in order.fulfillments[:first]
            ],
            "shippingAddress": dict(order.address),
            "refunds": lambda _info, first=None: [
                {
                    "id": r["id"],
                    "legacyResourceId": r["legacyResourceId"],
                    "note": r["note"],
                    "totalRefundedSet": {
                        "shopMoney": {"amount": r["amount"], "currencyCode": "CNY"}
                    },
                }
                for r in order.refunds[:first]
            ],
            "suggestedRefund": lambda _info, **args: _suggested_refund(order, **args),
        }

    def _cancel(self, _info: Any, orderId: str, **_: Any) -> dict[str, Any]:
        # reason and restock are required by the schema: a query without them never gets here.
        order = self.by_gid(orderId)
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

    def _refund(self, _info: Any, input: dict[str, Any]) -> dict[str, Any]:
        data = input
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

    def _update(self, _info: Any, input: dict[str, Any]) -> dict[str, Any]:
        data = input
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


def _fulfillment(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored fulfillment as a Fulfillment object, its list fields taking Shopify's
    arguments (`trackingInfo(first:)`, `events(first:, sortKey:, reverse:)`)."""

    def events(
        _info: Any, first: int | None = None, reverse: bool = False, **_: Any
    ) -> dict[str, Any]:
        ordered = sorted(
            stored["events"]["nodes"], key=lambda e: str(e["happenedAt"]), reverse=reverse
        )
        return {"nodes": ordered[:first]}

    return {
        "displayStatus": stored["displayStatus"],
        "trackingInfo": lambda _info, first=None: stored["trackingInfo"][:first],
        "events": events,
    }


def _suggested_refund(
    order: ShopifyOrder,
    suggestFullRefund: bool = False,
    shippingAmount: Any = None,
    refundLineItems: list[dict[str, Any]] | None = None,
    **_: Any,
) -> dict[str, Any]:
    """What Shopify suggests refunding, and through which payment: everything left with
    `suggestFullRefund`, else the line items and shipping asked for (the order's one line
    item costs its total), never more than is left."""
    left = order.total - order.refunded
    if suggestFullRefund:
        wanted = left
    else:
        items = sum(
            (
                order.total * int(item["quantity"])
                for item in refundLineItems or ()
                if item.get("lineItemId") == gid("LineItem", order.number)
            ),
            Decimal(0),
        )
        wanted = items + (_money(shippingAmount) or Decimal(0))
    amount = max(min(wanted, left), Decimal(0))

    def money(value: Decimal) -> dict[str, Any]:
        return {"shopMoney": {"amount": f"{value:.2f}", "currencyCode": "CNY"}}

    return {
        "amountSet": money(amount),
        "maximumRefundableSet": money(left),
        "suggestedTransactions": []
        if amount <= 0
        else [
            {
                "gateway": "shopify_payments",
                "kind": "SUGGESTED_REFUND",
                "parentTransaction": {"id": gid("OrderTransaction", order.number)},
                "amountSet": money(amount),
                "maximumRefundableSet": money(left),
            }
        ],
    }


# -- the schema, and Shopify's answers to what it refuses -----------------------------------


def _parse_money(value: Any) -> str:
    """Shopify's `Money` input: a decimal amount, as a string or a number."""
    if _money(value) is None:
        raise GraphQLError(f"Money must be a decimal amount, not {value!r}")
    return str(value)


@functools.cache
def admin_schema() -> GraphQLSchema:
    """Shopify's published Admin schema for `VERSION`, built once per process (the SDL is
    3.3 MB: seconds to parse). Its `Money` scalar refuses what is not an amount, as
    Shopify's does; the other custom scalars take any value."""
    document = parse(SCHEMA_FILE.read_text(encoding="utf-8"), no_location=True)
    schema = build_ast_schema(document, assume_valid_sdl=True)
    money = schema.type_map["Money"]
    assert isinstance(money, GraphQLScalarType)
    money.parse_value = _parse_money  # type: ignore[method-assign]
    return schema


def _shopify(message: str, node: Any, **extensions: Any) -> GraphQLError:
    return GraphQLError(message, node, extensions=extensions)


class _UndefinedField(ValidationRule):
    """A field the type does not have, in Shopify's words and code."""

    def enter_field(self, node: FieldNode, *_: Any) -> None:
        parent = self.context.get_parent_type()
        if parent is not None and self.context.get_field_def() is None:
            field_name = node.name.value
            self.report_error(
                _shopify(
                    f"Field '{field_name}' doesn't exist on type '{parent.name}'",
                    node,
                    code="undefinedField",
                    typeName=parent.name,
                    fieldName=field_name,
                )
            )


class _ArgumentNotAccepted(ValidationRule):
    """An argument the field does not take, in Shopify's words and code."""

    def enter_field(self, node: FieldNode, *_: Any) -> None:
        definition = self.context.get_field_def()
        if definition is None:
            return
        for argument in node.arguments:
            if argument.name.value not in definition.args:
                self.report_error(
                    _shopify(
                        f"Field '{node.name.value}' doesn't accept argument "
                        f"'{argument.name.value}'",
                        argument,
                        code="argumentNotAccepted",
                        name=node.name.value,
                        typeName="Field",
                        argumentName=argument.name.value,
                    )
                )


class _MissingArguments(ValidationRule):
    """Required arguments left out, in Shopify's words and code."""

    def enter_field(self, node: FieldNode, *_: Any) -> None:
        definition = self.context.get_field_def()
        if definition is None:
            return
        given = {a.name.value for a in node.arguments}
        missing = [
            name
            for name, arg in definition.args.items()
            if name not in given and arg.default_value is Undefined and is_non_null_type(arg.type)
        ]
        if missing:
            self.report_error(
                _shopify(
                    f"Field '{node.name.value}' is missing required arguments: "
                    + ", ".join(missing),
                    node,
                    code="missingRequiredArguments",
                    className="Field",
                    name=node.name.value,
                    arguments=", ".join(missing),
                )
            )


class _VariableNotUsed(ValidationRule):
    """A declared variable the operation never uses, in Shopify's words and code."""

    def leave_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
        used = {u.node.name.value for u in self.context.get_recursive_variable_usages(node)}
        for definition in node.variable_definitions:
            variable = definition.variable.name.value
            if variable not in used:
                name = node.name.value if node.name else "anonymous"
                self.report_error(
                    _shopify(
                        f"Variable ${variable} is declared by {name} but not used",
                        definition,
                        code="variableNotUsed",
                        variableName=variable,
                    )
                )


# graphql-core's rules whose refusals Shopify words its own way, and the rule that does.
_SHOPIFY_RULES: dict[type[ValidationRule], type[ValidationRule]] = {
    FieldsOnCorrectTypeRule: _UndefinedField,
    KnownArgumentNamesRule: _ArgumentNotAccepted,
    ProvidedRequiredArgumentsRule: _MissingArguments,
    NoUnusedVariablesRule: _VariableNotUsed,
}


def shopify_validation_errors(schema: GraphQLSchema, document: Any) -> list[dict[str, Any]]:
    """Every refusal of the GraphQL validation rules, as Shopify's `errors` entries: the
    four that operations written by hand meet most in Shopify's wording and codes, the
    others in graphql-core's (with no code)."""
    rules = [_SHOPIFY_RULES.get(rule, rule) for rule in specified_rules]
    return [error.formatted for error in validate(schema, document, rules)]


def _variable_errors(
    schema: GraphQLSchema, operation: OperationDefinitionNode, variables: dict[str, Any]
) -> list[dict[str, Any]]:
    """Each variable that is not a value of its declared type, in Shopify's shape."""
    errors: list[dict[str, Any]] = []
    for definition in operation.variable_definitions:
        name = definition.variable.name.value
        given = {name: variables[name]} if name in variables else {}
        coerced = get_variable_values(schema, [definition], given)
        if isinstance(coerced, list):
            errors.append(
                {
                    "message": f"Variable ${name} of type {print_ast(definition.type)} "
                    "was provided invalid value",
                    "extensions": {
                        "value": variables.get(name),
                        "problems": [{"path": [], "explanation": e.message} for e in coerced],
                    },
                }
            )
    return errors


def _parse_error(error: GraphQLError) -> dict[str, Any]:
    """A query that is not GraphQL: Shopify answers 200 with the error and its place."""
    return {
        "message": f"Parse error: {error.message}",
        "locations": error.formatted.get("locations"),
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
    admin_schema()  # built before the first request, so no request waits seconds for it
    app = web.Application()
    app.router.add_post(PATH, shop.graphql)
    runner, shop.base = await serve_app(app)
    try:
        yield shop
    finally:
        shop.released.set()
        await runner.cleanup()
