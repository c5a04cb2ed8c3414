"""The example catalogs stay true: `examples/woocommerce.toml` and `examples/shopify.toml`,
each as shipped (only the host pointed at its stand-in), driven through the real CLI
(`stepwise ask` / `stepwise confirm` in a subprocess, `STEPWISE_TOOLS`) over HTTP: the
status of an order, an address change and a cancel (each confirmed), a refund (confirmed)
and tracking; for WooCommerce also "my orders", keyed by the customer (`[customer]`). The stand-ins are `tests/test_http_woocommerce.py`'s and
`tests/shopify_standin.py`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests import test_http_woocommerce as woo_tests
from tests.shopify_standin import TOKEN, Shopify, running, sample_orders

ROOT = Path(__file__).resolve().parent.parent
CUSTOMER = woo_tests.CUSTOMER
PATTERN = r"\d{3,10}"

woo = woo_tests.woo  # the WooCommerce stand-in, as its own tests start it


@pytest.fixture
async def shopify() -> AsyncIterator[Shopify]:
    async with running(Shopify(orders=sample_orders(CUSTOMER, 20002))) as standin:
        yield standin


def example(tmp_path: Path, name: str, base: str) -> Path:
    text = (ROOT / "examples" / name).read_text(encoding="utf-8")
    path = tmp_path / name
    path.write_text(text.replace("https://shop.example", base), encoding="utf-8")
    return path


class Cli:
    """`python -m stepwise` with one tools file, one database and one customer."""

    def __init__(self, tmp_path: Path, tools: Path, **env: str) -> None:
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))
        }
        self.env.update(
            STEPWISE_DB=str(tmp_path / "runs.db"),
            STEPWISE_TOOLS=str(tools),
            STEPWISE_ORDER_PATTERN=PATTERN,
            **env,
        )

    async def run(self, *args: str) -> dict[str, Any]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stepwise", *args, "--user", str(CUSTOMER), "--json",
            env=self.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await proc.communicate()
        assert out, err.decode()
        answer: dict[str, Any] = json.loads(out)
        return answer

    async def ask(self, text: str) -> dict[str, Any]:
        return await self.run("ask", text)

    async def confirmed(self, text: str) -> dict[str, Any]:
        paused = await self.ask(text)
        assert paused["status"] == "paused", paused
        done = await self.run("confirm", paused["run_id"])
        assert done["status"] == "completed", done
        return done


def observations(run: dict[str, Any]) -> list[Any]:
    return [step.get("observation") for step in run["steps"]]


async def test_woocommerce_example_end_to_end(tmp_path: Path, woo: woo_tests.Woo) -> None:
    cli = Cli(
        tmp_path,
        example(tmp_path, "woocommerce.toml", woo.base),
        WOO_BASIC_AUTH=woo_tests.BASIC,
        STEPWISE_INTENTS=str(ROOT / "examples" / "woocommerce-intents.toml"),
    )
    status = await cli.ask("where is my order 1001")
    assert status["status"] == "completed"
    assert observations(status)[0]["status"] == "paid"  # WooCommerce's processing

    await cli.confirmed("change the address of 1001 to 7 Harbour Road, Ningbo 315000")
    shipping = woo.orders[1001]["shipping"]
    assert (shipping["address_1"], shipping["city"], shipping["postcode"]) == (
        "7 Harbour Road",
        "Ningbo",
        "315000",
    )

    cancel = await cli.confirmed("cancel order 1001")
    assert cancel["answer"] == "Order 1001 has been cancelled."
    assert woo.orders[1001]["status"] == "cancelled"

    refund = await cli.confirmed("I want a refund of 10 for order 1002")
    assert observations(refund)[-1]["refund_id"] == "700"
    assert [r["amount"] for r in woo.orders[1002]["refunds"]] == ["10.00"]

    # WooCommerce's core API has no tracking: the file leaves it out, and the step fails
    # as a tool this shop does not have, with nothing asked of the shop.
    seen = len(woo.seen)
    track = await cli.ask("where exactly is 1002")
    assert track["status"] == "failed"
    assert [s["error"]["type"] for s in track["steps"]] == ["unknown_tool"]
    assert "this was not done" in track["answer"] and len(woo.seen) == seen
    assert all(woo_tests.BASIC not in json.dumps(r) for r in (status, cancel, refund, track))

    # Keyed by the customer (the `[customer]` lookup), no order number asked: "my orders"
    # lists this customer's orders, newest first, and only theirs.
    mine = await cli.ask("show my orders")
    assert mine["status"] == "completed", mine
    assert [(s["tool"], s["args"]) for s in mine["steps"]] == [("my_orders", {})]
    assert [o["order_id"] for o in observations(mine)[0]] == ["1002", "1001"]
    assert "Order 1002:" in mine["answer"] and "2001" not in mine["answer"]


async def test_shopify_example_end_to_end(tmp_path: Path, shopify: Shopify) -> None:
    cli = Cli(tmp_path, example(tmp_path, "shopify.toml", shopify.base), SHOPIFY_ADMIN_TOKEN=TOKEN)
    status = await cli.ask("where is my order 1001")
    assert status["status"] == "completed"
    assert observations(status)[0]["status"] == "pending"

    moved = await cli.confirmed("change the address of 1001 to 7 Harbour Road, Ningbo, 315000")
    assert (shopify.orders[1001].address["address1"], shopify.orders[1001].address["city"]) == (
        "7 Harbour Road",
        "Ningbo",
    )
    assert shopify.orders[1001].address["lastName"] == "Wei"  # the addressee kept
    assert "7 Harbour Road, Ningbo, 315000" in moved["answer"]

    cancel = await cli.confirmed("cancel order 1001")
    assert cancel["answer"] == "Order 1001 has been cancelled."
    assert shopify.orders[1001].cancelled_at is not None

    refund = await cli.confirmed("I want a refund of 10 for order 1002")
    assert observations(refund)[-1] == {"refund_id": "701", "amount": "10.00", "order_id": "1002"}
    assert [r["amount"] for r in shopify.orders[1002].refunds] == ["10.00"]

    track = await cli.ask("where exactly is 1002")
    assert track["status"] == "completed", track
    parcel = observations(track)[-1]
    assert parcel["carrier"] == "SF Express" and parcel["tracking_number"] == "SF1234567890"
    assert "Departed the sorting centre" in track["answer"]
    assert [root for root, _ in shopify.mutations()] == [
        "orderUpdate",
        "orderCancel",
        "refundCreate",
    ]
    assert all(TOKEN not in json.dumps(r) for r in (status, cancel, refund, track))
