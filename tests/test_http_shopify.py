"""`examples/shopify.toml` against a local server that answers like Shopify's Admin GraphQL
API (`tests/shopify_standin.py`): the example file as shipped, only its host pointed at the
stand-in (and, for the lost-answer scenario, the refund's timeout shortened). The agent
(rule planner, executor, catalog) runs in-process and reaches the shop over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_core.agent import Agent
from agent_core.execution.executor import Executor
from agent_core.execution.tools import ToolContext, ToolRegistry
from agent_core.http import ToolsConfig, ToolsConfigError, build_http_tools, load_tools_config
from agent_core.http.graphql import Operation, read_answer, throttle_wait
from agent_core.models import ErrorType, EventKind, Run, RunStatus, StepStatus, ToolError, ToolOk
from agent_core.understanding.planner import RuleBasedPlanner
from stepwise.tools_check import print_tools_check
from storage.runs.sqlite import SqliteRunStore
from tests.fakes import RecordingSleep
from tests.shopify_standin import HOME, PATH, TOKEN, Shopify, running, sample_orders

ROOT = Path(__file__).resolve().parent.parent
CUSTOMER = 10001
OTHER = 20002
PATTERN = r"\d{3,10}"


@pytest.fixture
async def shop() -> AsyncIterator[Shopify]:
    async with running(Shopify(orders=sample_orders(CUSTOMER, OTHER))) as standin:
        yield standin


def config_for(
    shop: Shopify, tmp_path: Path, *, refund_timeout_s: float | None = None
) -> ToolsConfig:
    text = (ROOT / "examples" / "shopify.toml").read_text(encoding="utf-8")
    if refund_timeout_s is not None:
        table = "[tools.request_refund]\n"
        assert table in text
        text = text.replace(table, f"{table}timeout_s = {refund_timeout_s}\n")
    path = tmp_path / "shopify.toml"
    path.write_text(text.replace("https://shop.example", shop.base), encoding="utf-8")
    return load_tools_config(path, env={"SHOPIFY_ADMIN_TOKEN": TOKEN})


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
async def agent(
    shop: Shopify, tmp_path: Path, sleep: RecordingSleep
) -> AsyncIterator[tuple[Agent, ToolRegistry]]:
    config = config_for(shop, tmp_path)
    store = await SqliteRunStore.open(tmp_path / "runs.db")
    async with httpx.AsyncClient() as client:
        registry = ToolRegistry(build_http_tools(config, client, sleep=sleep))
        executor = Executor(registry, journal=store, sleep=RecordingSleep())
        yield Agent(RuleBasedPlanner(order_id_pattern=PATTERN), executor, store), registry
    await store.close()


def ctx(user_id: int = CUSTOMER, step_id: str = "s1") -> ToolContext:
    return ToolContext(user_id=user_id, trace_id="t", run_id="r1", step_id=step_id)


async def confirmed(agent: Agent, text: str) -> Run:
    paused = await agent.ask(text, user_id=CUSTOMER, chat_id=CUSTOMER)
    assert paused.status is RunStatus.PAUSED and paused.pause is not None, paused.answer
    done = await agent.decide(paused.id, user_id=CUSTOMER, approved=True, nonce=paused.pause.nonce)
    assert done.run is not None
    return done.run


async def test_the_example_checks(shop: Shopify, tmp_path: Path) -> None:
    lines: list[str] = []
    code = await print_tools_check(config_for(shop, tmp_path), probe=True, out=lines.append)
    assert code == 0, lines
    assert any("track_parcel: POST" in line for line in lines)
    assert all(TOKEN not in line for line in lines)
    assert shop.seen == []  # a GraphQL POST is never probed: it could be a mutation


async def test_an_order_reads_in_stepwise_words_and_its_number_is_a_variable(
    agent: tuple[Agent, ToolRegistry], shop: Shopify
) -> None:
    ask, tools = agent
    run = await ask.ask("where is my order 1001", user_id=CUSTOMER, chat_id=CUSTOMER)
    assert run.status is RunStatus.COMPLETED, run.answer
    assert run.steps[0].observation == {
        "order_id": "1001",
        "status": "pending",  # UNFULFILLED
        "items": ["Wireless earbuds"],
    }
    name, root, variables, headers, query = shop.seen[-1]
    assert (name, root, variables) == ("OrderStatus", "orders", {"query": "name:#1001"})
    assert headers["X-Shopify-Access-Token"] == TOKEN
    assert "1001" not in query  # sent as written: the number travels in the variables
    for number, status in ((1002, "shipping"), (1003, "delivered")):
        found = await tools.call("get_order_status", {"order_id": str(number)}, ctx())
        assert isinstance(found, ToolOk) and found.data["status"] == status


@pytest.mark.parametrize(
    ("order_id", "error"),
    [
        ("2001", "permission_denied"),  # another customer's
        ("3001", "permission_denied"),  # a guest checkout: nobody's
        ("4040", "not_found"),
        ('1001") { id } #', "not_found"),  # text, never part of the operation
    ],
)
async def test_other_unknown_and_odd_orders_are_refused(
    agent: tuple[Agent, ToolRegistry], shop: Shopify, order_id: str, error: str
) -> None:
    _, tools = agent
    result = await tools.call("get_order_status", {"order_id": order_id}, ctx())
    assert isinstance(result, ToolError) and result.error_type.value == error, result
    query = shop.seen[-1][4]
    assert order_id not in query and shop.seen[-1][2] == {"query": f"name:#{order_id.upper()}"}


async def test_cancel_is_a_lookup_then_one_order_cancel_after_confirm(
    agent: tuple[Agent, ToolRegistry], shop: Shopify
) -> None:
    ask, tools = agent
    paused = await ask.ask("cancel order 1001", user_id=CUSTOMER, chat_id=CUSTOMER)
    assert paused.status is RunStatus.PAUSED and shop.mutations() == []
    assert paused.pause is not None
    done = await ask.decide(paused.id, user_id=CUSTOMER, approved=True, nonce=paused.pause.nonce)
    assert done.run is not None and done.run.status is RunStatus.COMPLETED
    assert done.run.answer == "Order 1001 has been cancelled."
    assert [s[0] for s in shop.seen] == ["OrderStatus", "CancelLookup", "CancelOrder"]
    ((root, variables),) = shop.mutations()
    assert root == "orderCancel"
    assert variables == {
        "orderId": shop.orders[1001].id,  # the global id, found by the lookup
        "staffNote": f"Cancelled by the customer via stepwise ({paused.id}:s2)",
    }
    assert shop.orders[1001].cancelled_at is not None

    # Shopify refuses a second cancel with an orderCancelUserError: refused, not retried.
    again = await tools.call("cancel_order", {"order_id": "1001"}, ctx())
    assert isinstance(again, ToolError) and again.error_type is ErrorType.INVALID_ARGUMENTS
    assert "already been cancelled" in again.message and not again.may_have_happened
    assert len(shop.mutations()) == 2


async def test_a_change_to_someone_elses_order_is_never_sent(
    agent: tuple[Agent, ToolRegistry], shop: Shopify
) -> None:
    _, tools = agent
    for tool, args in (
        ("cancel_order", {"order_id": "2001"}),
        ("request_refund", {"order_id": "2001", "amount": "1"}),
        ("change_address", {"order_id": "2001", "address": "7 Harbour Road, Ningbo, 315000"}),
        ("cancel_order", {"order_id": "3001"}),
    ):
        result = await tools.call(tool, args, ctx())
        assert isinstance(result, ToolError) and result.error_type is ErrorType.PERMISSION_DENIED
        assert not result.may_have_happened
    missing = await tools.call("cancel_order", {"order_id": "4040"}, ctx())
    assert isinstance(missing, ToolError) and missing.error_type is ErrorType.NOT_FOUND
    assert shop.mutations() == []


async def test_a_refund_uses_the_suggested_transaction_and_a_too_big_one_is_refused(
    agent: tuple[Agent, ToolRegistry], shop: Shopify
) -> None:
    _, tools = agent
    made = await tools.call(
        "request_refund", {"order_id": "1002", "amount": "50", "reason": "Scratched"}, ctx()
    )
    assert isinstance(made, ToolOk), made
    assert made.data == {"refund_id": "701", "amount": "50.00", "order_id": "1002"}
    lookup = shop.seen[-2]
    assert (lookup[0], lookup[2]) == ("RefundLookup", {"query": "name:#1002"})
    order = shop.orders[1002]
    assert shop.mutations()[-1] == (
        "refundCreate",
        {
            "input": {
                "orderId": order.id,
                "note": "Refund via stepwise (r1:s1)",
                "notify": True,
                "transactions": [
                    {
                        "orderId": order.id,
                        "gateway": "shopify_payments",
                        "kind": "REFUND",
                        "amount": "50.00",
                        "parentId": "gid://shopify/OrderTransaction/1002",
                    }
                ],
            }
        },
    )
    refused = await tools.call("request_refund", {"order_id": "1002", "amount": "10"}, ctx())
    assert isinstance(refused, ToolError) and refused.error_type is ErrorType.INVALID_ARGUMENTS
    assert "refundable amount" in refused.message and not refused.may_have_happened
    assert len(order.refunds) == 1


async def test_a_customer_refund_reaches_shopify_through_the_agent(
    agent: tuple[Agent, ToolRegistry], shop: Shopify
) -> None:
    """The sentence a customer types, the Confirm, then Shopify's own refund: the lookup
    names the payment (what Shopify suggests refunding in full), the refund sends the
    customer's amount through it."""
    ask, _ = agent
    run = await confirmed(ask, "I want a refund of 20 for order 1002")
    assert run.status is RunStatus.COMPLETED, run.answer
    assert [s[0] for s in shop.seen][-2:] == ["RefundLookup", "Refund"]
    (refund,) = shop.orders[1002].refunds
    assert refund["amount"] == "20.00"
    assert refund["note"] == f"Refund via stepwise ({run.id}:s2)"
    assert run.steps[1].observation == {"refund_id": "701", "amount": "20.00", "order_id": "1002"}


async def test_address_and_tracking(agent: tuple[Agent, ToolRegistry], shop: Shopify) -> None:
    _, tools = agent
    unsplit = await tools.call(
        "change_address", {"order_id": "1001", "address": "7 Harbour Road, Ningbo"}, ctx()
    )
    assert isinstance(unsplit, ToolError), unsplit  # no postcode: asked again, never guessed
    assert unsplit.error_type is ErrorType.INVALID_ARGUMENTS and shop.mutations() == []
    moved = await tools.call(
        "change_address", {"order_id": "1001", "address": "7 Harbour Road, Ningbo, 315000"}, ctx()
    )
    assert isinstance(moved, ToolOk), moved
    assert moved.data == {"order_id": "1001", "address": "7 Harbour Road, Ningbo, 315000"}
    # orderUpdate overwrites the whole address: the parts go where Shopify keeps them, and
    # the addressee, phone and province read by the lookup are sent back unchanged.
    assert shop.orders[1001].address == {
        **HOME,
        "address1": "7 Harbour Road",
        "address2": "",
        "city": "Ningbo",
        "zip": "315000",
    }
    assert shop.mutations()[-1][1]["input"]["shippingAddress"]["countryCode"] == "CN"
    tracked = await tools.call("track_parcel", {"order_id": "1002"}, ctx())
    assert isinstance(tracked, ToolOk), tracked
    assert tracked.data == {
        "order_id": "1002",
        "carrier": "SF Express",
        "tracking_number": "SF1234567890",
        "events": [
            {
                "at": "2025-03-02T08:00:00Z",
                "text": "Departed the sorting centre",
                "place": "Hangzhou",
            },
            {"at": "2025-03-01T18:00:00Z", "text": "CONFIRMED", "place": None},
        ],
    }
    nothing = await tools.call("track_parcel", {"order_id": "1001"}, ctx())
    assert isinstance(nothing, ToolError) and nothing.error_type is ErrorType.EMPTY_RESULT
    theirs = await tools.call("track_parcel", {"order_id": "2001"}, ctx())
    assert isinstance(theirs, ToolError) and theirs.error_type is ErrorType.PERMISSION_DENIED


async def test_a_delivered_order_skips_the_cancel_and_sends_nothing(
    agent: tuple[Agent, ToolRegistry], shop: Shopify
) -> None:
    ask, _ = agent
    run = await ask.ask("cancel order 1003", user_id=CUSTOMER, chat_id=CUSTOMER)
    assert [s.status for s in run.steps] == [StepStatus.DONE, StepStatus.SKIPPED]
    assert shop.mutations() == []
    assert json.dumps(run.model_dump(mode="json")).count(TOKEN) == 0


# -- throttling: HTTP 200 with errors[].extensions.code = "THROTTLED" ---------------------


def test_the_throttle_wait_comes_from_the_cost() -> None:
    def cost(requested: Any, available: Any, rate: Any) -> dict[str, Any]:
        status = {"currentlyAvailable": available, "restoreRate": rate}
        return {"extensions": {"cost": {"requestedQueryCost": requested, "throttleStatus": status}}}

    assert throttle_wait(cost(70, 66, 50.0)) == 1.0  # 4 points at 50/s: at least 1 s
    assert throttle_wait(cost(502, 2, 50.0)) == 10.0
    assert throttle_wait(cost(1000, 0, 5.0)) == 60.0  # 200 s, bounded
    assert throttle_wait(cost(None, 0, 0)) == 1.0 == throttle_wait({})


async def test_a_throttled_read_waits_the_computed_time_and_is_sent_again(
    agent: tuple[Agent, ToolRegistry], shop: Shopify, sleep: RecordingSleep
) -> None:
    _, tools = agent
    shop.throttle = 1
    found = await tools.call("get_order_status", {"order_id": "1001"}, ctx())
    assert isinstance(found, ToolOk) and found.data["status"] == "pending"
    assert sleep.delays == [1.0]
    assert [s[0] for s in shop.seen] == ["OrderStatus", "OrderStatus"]


async def test_a_throttled_change_was_not_made_and_a_long_wait_is_left_to_the_executor(
    agent: tuple[Agent, ToolRegistry], shop: Shopify, sleep: RecordingSleep
) -> None:
    _, tools = agent
    shop.throttle, shop.throttle_roots = 1, {"orderCancel"}  # the lookup passes
    shop.throttle_cost["requestedQueryCost"] = 1000
    shop.throttle_cost["throttleStatus"]["currentlyAvailable"] = 0
    result = await tools.call("cancel_order", {"order_id": "1001"}, ctx())
    assert isinstance(result, ToolError) and result.error_type is ErrorType.UNAVAILABLE
    assert "THROTTLED" in result.message and "Retry-After 20s" in result.message
    assert not result.may_have_happened  # a throttled request did nothing: safe to retry
    assert sleep.delays == []  # 20 s is longer than an attempt waits
    assert shop.orders[1001].cancelled_at is None
    assert [s[0] for s in shop.seen] == ["CancelLookup", "CancelOrder"]


# -- a refund made but answered too late is made once: the reconcile query finds ours -----


async def test_a_refund_answered_late_is_found_by_its_note_and_not_made_again(
    shop: Shopify, tmp_path: Path
) -> None:
    config = config_for(shop, tmp_path, refund_timeout_s=0.5)
    store = await SqliteRunStore.open(tmp_path / "runs.db")
    async with httpx.AsyncClient() as client:
        registry = ToolRegistry(build_http_tools(config, client, sleep=RecordingSleep()))
        executor = Executor(registry, journal=store, sleep=RecordingSleep())
        agent = Agent(RuleBasedPlanner(order_id_pattern=PATTERN), executor, store)
        shop.late.add("refundCreate")
        run = await confirmed(agent, "I want a refund of 10 for order 1002")
        timeline = await store.history.timeline(run.id)
    await store.close()

    refunds = shop.orders[1002].refunds
    assert len(refunds) == 1 and refunds[0]["note"] == f"Refund via stepwise ({run.id}:s2)"
    assert [root for root, _ in shop.mutations()] == ["refundCreate"]
    assert run.status is RunStatus.COMPLETED, run.answer
    assert run.steps[1].observation == {"refund_id": "701", "amount": "10.00", "order_id": "1002"}
    assert "RefundCheck" in [s[0] for s in shop.seen]
    (reconciled,) = [e for e in timeline if e.kind is EventKind.STEP_RECONCILED]
    assert "happened" in (reconciled.message or "")


# -- the file's GraphQL tables are checked at load ----------------------------------------


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        (
            'method = "GET"\n[tools.get_order_status.graphql]\nquery = "query A($q: String!) { x }"',
            'graphql: a GraphQL operation is sent with method = "POST"',
        ),
        (
            'method = "POST"\n[tools.get_order_status.graphql]\nquery = "{ orders { id } }"',
            "must start with a named operation",
        ),
        (
            'method = "POST"\n[tools.get_order_status.graphql]\n'
            'query = "query A($q: String!) { x }"\nvariables = { q = "{order}" }',
            "graphql.variables: {order} is neither an argument",
        ),
        (
            'method = "POST"\n[tools.get_order_status.graphql]\n'
            'query = "query A($q: String!) { x }"\nvariables = { other = "{order_id}" }',
            "variables.other: the query declares no $other",
        ),
    ],
)
def test_a_bad_graphql_table_is_refused_in_one_line(
    tmp_path: Path, table: str, problem: str
) -> None:
    path = tmp_path / "tools.toml"
    path.write_text(
        f'[tools.get_order_status]\nurl = "https://shop.example{PATH}"\n{table}\n', encoding="utf-8"
    )
    with pytest.raises(ToolsConfigError) as caught:
        load_tools_config(path, env={})
    assert "tool get_order_status" in str(caught.value) and problem in str(caught.value)


# -- GraphQL's other top-level errors, read without a server -------------------------------


def _answer(errors: Any) -> bytes:
    return json.dumps({"errors": errors, "data": None}).encode()


@pytest.mark.parametrize(
    ("errors", "writes", "error", "maybe"),
    [
        ([{"message": "Access denied", "extensions": {"code": "ACCESS_DENIED"}}], True,
         ErrorType.PERMISSION_DENIED, False),
        ([{"message": "Internal error", "extensions": {"code": "INTERNAL_SERVER_ERROR"}}], True,
         ErrorType.UNAVAILABLE, True),  # a change may have been made
        ([{"message": "Internal error", "extensions": {"code": "INTERNAL_SERVER_ERROR"}}], False,
         ErrorType.UNAVAILABLE, False),
        ([{"message": "Field 'x' doesn't exist", "extensions": {"code": "undefinedField"}}], True,
         ErrorType.INTERNAL, False),  # the file's query is wrong: staff fix it
        ("[API] This action requires merchant approval", False, ErrorType.INTERNAL, False),
        ([{"message": "Throttled"}], True, ErrorType.UNAVAILABLE, False),  # older shape
    ],
)  # fmt: skip
def test_top_level_errors(errors: Any, writes: bool, error: ErrorType, maybe: bool) -> None:
    operation = Operation(query="query A($q: String!) { orders { id } }")
    outcome = read_answer(operation, 200, _answer(errors), {}, writes=writes, redact=str)
    assert outcome is not None
    assert (outcome.error_type, outcome.may_have_happened) == (error, maybe)
    assert (outcome.retry_after_s is not None) == ("Throttled" in str(errors))


def test_an_echoed_token_never_reaches_the_message() -> None:
    operation = Operation(query="query A { shop { name } }")
    body = _answer([{"message": f"bad token {TOKEN}", "extensions": {"code": "ACCESS_DENIED"}}])
    outcome = read_answer(
        operation, 200, body, {}, writes=False, redact=lambda t: t.replace(TOKEN, "***")
    )
    assert outcome is not None and TOKEN not in outcome.message and "***" in outcome.message
    # A non-2xx, a body that is not JSON, or one without errors: read as any other answer.
    assert read_answer(operation, 401, body, {}, writes=False, redact=str) is None
    assert read_answer(operation, 200, b"<html>", {}, writes=False, redact=str) is None
    assert read_answer(operation, 200, b'{"data": {}}', {}, writes=False, redact=str) is None
