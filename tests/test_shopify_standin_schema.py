"""The Shopify stand-in holds every operation against Shopify's published Admin schema
(`tests/schemas/shopify-admin-2025-01.graphql`) with graphql-core, answers with exactly the
fields asked for, and refuses the way Shopify does; and every operation the shipped
`examples/shopify.toml` sends is valid in that schema.
"""

from __future__ import annotations

import tomllib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from graphql import parse

from tests.shopify_standin import (
    PATH,
    TOKEN,
    VERSION,
    Shopify,
    admin_schema,
    running,
    sample_orders,
    shopify_validation_errors,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "shopify.toml"


def _operations() -> Iterator[tuple[str, str]]:
    toml = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    for tool, table in toml["tools"].items():
        graphql = table.get("graphql") or {}
        for part in ("", "lookup", "reconcile"):
            operation = graphql.get(part) if part else graphql
            if operation and "query" in operation:
                yield f"{tool}.{part or 'graphql'}", operation["query"]


def test_the_example_calls_the_version_the_schema_is_for() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert f"/admin/api/{VERSION}/graphql.json" in text
    assert "/admin/api/" not in text.replace(f"/admin/api/{VERSION}/", "")


@pytest.mark.parametrize(("where", "query"), list(_operations()))
def test_every_operation_of_the_example_is_valid_in_shopifys_schema(where: str, query: str) -> None:
    assert shopify_validation_errors(admin_schema(), parse(query)) == [], where


@pytest.fixture
async def shop() -> AsyncIterator[Shopify]:
    async with running(Shopify(orders=sample_orders(10001, 20002))) as standin:
        yield standin


async def _post(shop: Shopify, query: str, variables: dict[str, Any] | None = None) -> Any:
    async with httpx.AsyncClient() as client:
        answer = await client.post(
            shop.base + PATH,
            json={"query": query, "variables": variables or {}},
            headers={"X-Shopify-Access-Token": TOKEN},
        )
    assert answer.status_code == 200
    return answer.json()


async def test_the_answer_holds_exactly_the_fields_asked_for(shop: Shopify) -> None:
    body = await _post(
        shop,
        "query A($q: String!) { orders(first: 1, query: $q) { nodes { name owner: customer "
        '{ tg: metafield(namespace: "stepwise", key: "telegram_user_id") { value } } } } }',
        {"q": "name:#1001"},
    )
    assert body["data"] == {
        "orders": {"nodes": [{"name": "#1001", "owner": {"tg": {"value": "10001"}}}]}
    }


@pytest.mark.parametrize(
    ("query", "variables", "error"),
    [
        (
            "query A($q: String!) { orders(first: 1, query: $q) { nodes { name refundAmount } } }",
            {"q": "name:#1001"},
            {
                "message": "Field 'refundAmount' doesn't exist on type 'Order'",
                "extensions": {
                    "code": "undefinedField",
                    "typeName": "Order",
                    "fieldName": "refundAmount",
                },
            },
        ),
        (
            "query A($q: String!, $a: Money!) { orders(first: 1, query: $q) { nodes { "
            "suggestedRefund(refundAmount: $a) { suggestedTransactions { gateway } } } } }",
            {"q": "name:#1001", "a": "10.00"},
            {
                "message": "Field 'suggestedRefund' doesn't accept argument 'refundAmount'",
                "extensions": {
                    "code": "argumentNotAccepted",
                    "name": "suggestedRefund",
                    "typeName": "Field",
                    "argumentName": "refundAmount",
                },
            },
        ),
        (
            "mutation C($id: ID!) { orderCancel(orderId: $id, reason: CUSTOMER, refund: true) "
            "{ job { id } } }",
            {"id": "gid://shopify/Order/5001001"},
            {
                "message": "Field 'orderCancel' is missing required arguments: restock",
                "extensions": {
                    "code": "missingRequiredArguments",
                    "className": "Field",
                    "name": "orderCancel",
                    "arguments": "restock",
                },
            },
        ),
        (
            "query A($q: String!, $unused: Int) { orders(first: 1, query: $q) { nodes { name } } }",
            {"q": "name:#1001"},
            {
                "message": "Variable $unused is declared by A but not used",
                "extensions": {"code": "variableNotUsed", "variableName": "unused"},
            },
        ),
    ],
)
async def test_what_shopifys_schema_refuses_is_refused_in_shopifys_shape(
    shop: Shopify, query: str, variables: dict[str, Any], error: dict[str, Any]
) -> None:
    body = await _post(shop, query, variables)
    assert "data" not in body
    (got,) = body["errors"]
    assert {"message": got["message"], "extensions": got["extensions"]} == error
    assert got["locations"]
    assert shop.orders[1001].cancelled_at is None


async def test_a_variable_that_is_not_of_its_type_is_refused(shop: Shopify) -> None:
    body = await _post(
        shop,
        "mutation R($input: RefundInput!) { refundCreate(input: $input) { userErrors { message } } }",
        {
            "input": {
                "orderId": "gid://shopify/Order/5001001",
                "transactions": [{"amount": "ten", "gateway": "x", "kind": "REFUND"}],
            }
        },
    )
    (error,) = body["errors"]
    assert error["message"] == "Variable $input of type RefundInput! was provided invalid value"
    assert len(error["extensions"]["problems"]) == 2  # "ten" is no Money; orderId is missing
    assert shop.orders[1001].refunds == []
