"""HTTP tools against a real local HTTP server: mapping, headers, retries, config, secrets.

The upstream is an aiohttp server on 127.0.0.1 whose replies each test scripts. Slowness is
simulated inside the server (a handler waiting on an Event that is released at teardown);
the tests themselves never sleep to synchronise.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agent_core.execution.tools import ToolContext, ToolFailure, ToolRegistry
from agent_core.http import (
    RETRY_AFTER_CAP_S,
    HttpOutcome,
    ToolsConfig,
    ToolsConfigError,
    build_http_tools,
    load_tools_config,
    map_response,
    new_client,
    parse_retry_after,
)
from agent_core.models import Approval, ErrorType, Risk, RunStatus, StepStatus, ToolError, ToolOk
from stepwise.tools_check import print_tools_check
from storage.shop.tools import OrderArgs
from tests.fakes import RecordingSleep, make_executor, make_run, resume

TOKEN = "tok-7f3a9c2e-SECRET-51d0"
ENV = {"SHOP_API_TOKEN": TOKEN}
CTX = ToolContext(user_id=10001, trace_id="trace1", run_id="run1", step_id="s1")
CTX_ARGS = {"order_id": "A1001"}
ROOT = Path(__file__).resolve().parent.parent

STATUS = ("get_order_status", {"order_id": "A1001"}, "order_status")
COMPENSATION = ("search_policy", {"query": "delay compensation"}, "delay_compensation")
CANCEL = ("cancel_order", {"order_id": "A1001"}, "cancel")

SHIPPING = {"order_id": "A1001", "status": "shipping", "eta": "2026-12-03"}
DELIVERED = {"order_id": "A1001", "status": "delivered"}
CANCELLED = {"order_id": "A1001", "status": "cancelled"}
POLICIES = [{"title": "Delay compensation", "text": "3 days late: coupon."}]


# ---------------------------------------------------------------------------------------
# The scripted upstream
# ---------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    gate: asyncio.Event | None = None  # the handler waits for it before answering
    echo_header: str | None = None  # answer with this request header in the body


def js(data: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status, json.dumps(data).encode(), {"Content-Type": "application/json", **headers})


@dataclass
class Seen:
    method: str
    raw_path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: bytes


class Upstream:
    """Replies scripted per path (or for any path); the last reply of a script repeats."""

    def __init__(self) -> None:
        self.base = ""
        self.scripts: dict[str | None, list[Reply]] = {}
        self.served: dict[str | None, int] = {}
        self.seen: list[Seen] = []
        self.gates: list[asyncio.Event] = []

    def script(self, *replies: Reply, path: str | None = None) -> None:
        self.scripts[path] = list(replies)
        self.served[path] = 0
        self.gates += [r.gate for r in replies if r.gate is not None]

    def requests(self, method: str | None = None) -> list[Seen]:
        return [s for s in self.seen if method is None or s.method == method]

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(
            Seen(
                request.method,
                request.raw_path.split("?")[0],
                dict(request.query),
                {k.lower(): v for k, v in request.headers.items()},
                await request.read(),
            )
        )
        key = request.path if request.path in self.scripts else None
        replies = self.scripts.get(key) or [Reply(599, b"unscripted")]
        reply = replies[min(self.served.get(key, 0), len(replies) - 1)]
        self.served[key] = self.served.get(key, 0) + 1
        if reply.gate is not None:
            await reply.gate.wait()
        body = reply.body
        if reply.echo_header:
            body += request.headers.get(reply.echo_header, "").encode()
        return web.Response(status=reply.status, body=body, headers=reply.headers)


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    up = Upstream()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", up.handle)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    up.base = f"http://127.0.0.1:{server.port}"
    yield up
    for gate in up.gates:
        gate.set()
    await server.close()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as pool:
        yield pool


def shop_toml(
    base: str,
    *,
    status: str = "",
    policy: str = "",
    cancel: str = 'method = "POST"\nidempotency = "honoured"',
    http: str = 'headers = { Authorization = "Bearer ${SHOP_API_TOKEN}" }',
) -> str:
    """The three tools against `base`; the keyword strings are extra lines per table."""
    return f"""
[tools.get_order_status]
url = "{base}/api/orders/{{order_id}}"
{status}

[tools.search_policy]
url = "{base}/api/policies"
{policy}

[tools.cancel_order]
url = "{base}/api/orders/{{order_id}}/cancel"
{cancel}

[http]
{http}
"""


def load(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> ToolsConfig:
    path = tmp_path / "tools.toml"
    path.write_text(text)
    return load_tools_config(path, env=ENV if env is None else env)


def registry(
    config: ToolsConfig, client: httpx.AsyncClient, sleep: RecordingSleep | None = None
) -> ToolRegistry:
    return ToolRegistry(build_http_tools(config, client, sleep=sleep or RecordingSleep()))


def error(result: ToolOk | ToolError) -> ToolError:
    assert isinstance(result, ToolError), result
    return result


# ---------------------------------------------------------------------------------------
# Response mapping
# ---------------------------------------------------------------------------------------

EMPTY = ErrorType.EMPTY_RESULT
MAPPING_ROWS = [
    ("get_order_status", js(SHIPPING), None),
    ("search_policy", Reply(200, b""), EMPTY),
    ("search_policy", Reply(204), EMPTY),
    ("search_policy", js(None), EMPTY),
    ("search_policy", js([]), EMPTY),
    ("search_policy", js({}), EMPTY),
    ("search_policy", js({"results": []}), EMPTY),
    ("get_order_status", js({}), EMPTY),
    ("get_order_status", js({"error": "no such order"}, 404), ErrorType.NOT_FOUND),
    # The shop refused stepwise's own key (issue 22): a backend failure, never "not found".
    ("get_order_status", js({}, 401), ErrorType.BACKEND),
    ("get_order_status", js({}, 403), ErrorType.PERMISSION_DENIED),
    ("get_order_status", js({}, 400), ErrorType.INVALID_ARGUMENTS),
    ("get_order_status", js({}, 409), ErrorType.INVALID_ARGUMENTS),
    ("get_order_status", js({}, 422), ErrorType.INVALID_ARGUMENTS),
    ("get_order_status", Reply(408), ErrorType.TIMEOUT),
    ("get_order_status", Reply(429), ErrorType.UNAVAILABLE),
    ("get_order_status", Reply(500, b"boom"), ErrorType.UNAVAILABLE),
    ("get_order_status", Reply(502), ErrorType.UNAVAILABLE),
    ("get_order_status", Reply(503), ErrorType.UNAVAILABLE),
    ("get_order_status", Reply(504), ErrorType.UNAVAILABLE),
    ("get_order_status", Reply(200, b"<html>hi</html>"), ErrorType.BACKEND),
    ("get_order_status", Reply(302, headers={"Location": "/elsewhere"}), ErrorType.INTERNAL),
    ("get_order_status", Reply(418), ErrorType.INTERNAL),
]


@pytest.mark.parametrize(("tool", "reply", "expected"), MAPPING_ROWS)
async def test_each_response_maps_to_its_result(
    tool: str,
    reply: Reply,
    expected: ErrorType | None,
    upstream: Upstream,
    client: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    upstream.script(reply)
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client)
    args = {"order_id": "A1001"} if tool == "get_order_status" else {"query": "refund"}

    result = await tools.call(tool, args, CTX)

    if expected is None:
        assert isinstance(result, ToolOk) and result.data == SHIPPING
    else:
        assert error(result).error_type is expected
    assert len(upstream.seen) == 1  # no Retry-After: no retry inside the attempt


async def test_a_non_json_2xx_is_a_clear_backend_error(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(Reply(200, b"<html>maintenance</html>", {"Content-Type": "text/html"}))
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client)
    failure = error(await tools.call("get_order_status", {"order_id": "A1001"}, CTX))
    assert failure.error_type is ErrorType.BACKEND
    assert failure.message == "upstream answered HTTP 200 with a body that is not JSON"


async def test_policies_are_unwrapped_from_results_and_trimmed_to_title_and_text(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(js({"results": [{**POLICIES[0], "id": 7}]}))
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client)
    result = await tools.call("search_policy", {"query": "delay"}, CTX)
    assert isinstance(result, ToolOk) and result.data == POLICIES


async def test_the_upstream_message_is_kept_for_staff_on_one_line_and_truncated(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(js({"error": {"message": "database\non fire " * 60}}, 500))
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client)
    failure = error(await tools.call("get_order_status", {"order_id": "A1001"}, CTX))
    assert failure.message.startswith("upstream answered HTTP 500: database on fire")
    assert "\n" not in failure.message
    assert len(failure.message) <= 340 and failure.message.endswith("…")


async def test_an_oversized_answer_is_refused_unread(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(Reply(200, b"[" + b" " * (1 << 20) + b"]"))
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client)
    failure = error(await tools.call("search_policy", {"query": "refund"}, CTX))
    assert failure.error_type is ErrorType.INTERNAL and "larger than" in failure.message


CONTRACT_ROWS = [  # pydantic names the field (the contracts are models)
    ("get_order_status", js({"status": "shipping"}), "order_id: Field required"),
    ("get_order_status", js({"order_id": "A1001", "status": "lost"}), "status: Input should be"),
    ("get_order_status", js({**SHIPPING, "eta": 5}), "eta: Input should be a valid string"),
    ("get_order_status", js(["A1001"]), "response: Input should be a valid dictionary"),
    ("cancel_order", js({"order_id": "A1001", "status": "pending"}), "status: Input should be"),
    ("cancel_order", js({"status": "cancelled"}), "order_id: Field required"),
    # unknown outcome: stop
    ("cancel_order", Reply(200, b""), "response: Input should be a valid dictionary"),
    ("search_policy", js([{"title": "t"}]), "results.0.text: Field required"),
    ("search_policy", js({"items": POLICIES}), "results: Field required"),
    ("get_order_status", js({**SHIPPING, "order_id": " "}), "order_id: Value error, must be a"),
]


@pytest.mark.parametrize(("tool", "reply", "field_named"), CONTRACT_ROWS)
async def test_a_2xx_that_breaks_the_contract_is_a_backend_failure_naming_the_field(
    tool: str,
    reply: Reply,
    field_named: str,
    upstream: Upstream,
    client: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    upstream.script(reply)
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client)
    args = {"query": "refund"} if tool == "search_policy" else {"order_id": "A1001"}
    failure = error(await tools.call(tool, args, CTX))
    assert failure.error_type is ErrorType.BACKEND
    assert failure.message.startswith(f"{tool} response breaks the contract: ")
    assert field_named in failure.message


async def test_a_refused_connection_is_unavailable(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    tools = registry(load(tmp_path, shop_toml(f"http://127.0.0.1:{port}")), client)
    failure = error(await tools.call("get_order_status", {"order_id": "A1001"}, CTX))
    assert failure.error_type is ErrorType.UNAVAILABLE
    assert failure.message.startswith("no answer from upstream: ConnectError")


async def test_a_response_slower_than_timeout_s_is_a_timeout(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(Reply(200, json.dumps(SHIPPING).encode(), gate=asyncio.Event()))
    tools = registry(load(tmp_path, shop_toml(upstream.base, status="timeout_s = 0.2")), client)
    started = time.monotonic()
    failure = error(await tools.call("get_order_status", {"order_id": "A1001"}, CTX))
    assert failure.error_type is ErrorType.TIMEOUT
    assert time.monotonic() - started < 1.5


async def test_the_http_read_timeout_itself_is_a_timeout_without_the_registry_backstop(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(Reply(200, json.dumps(SHIPPING).encode(), gate=asyncio.Event()))
    config = load(tmp_path, shop_toml(upstream.base, status="timeout_s = 0.2"))
    tool = next(t for t in build_http_tools(config, client) if t.name == "get_order_status")
    with pytest.raises(ToolFailure) as caught:
        await tool.handler(OrderArgs(order_id="A1001"), CTX)
    assert caught.value.error_type is ErrorType.TIMEOUT
    assert caught.value.message == "no answer from upstream: ReadTimeout"


def test_map_response_is_pure_and_never_raises_on_garbage() -> None:
    rand = random.Random(1234)
    tools = [None, "get_order_status", "search_policy", "cancel_order", "other"]
    bodies = [b"", b"null", b"[" * 100_000, b"\xff\xfe\x00", b'{"results": 1}', b"NaN"]
    for _ in range(2000):
        body = rand.choice(bodies) if rand.random() < 0.5 else rand.randbytes(rand.randint(0, 40))
        headers = {"Retry-After": rand.choice(["", "5", "-1", "²", "Mon, 99 Foo", "1e400"])}
        outcome = map_response(rand.randint(0, 999), headers, body, tool=rand.choice(tools))
        assert isinstance(outcome, HttpOutcome)
        assert outcome.ok == (outcome.error_type is None)
        assert "\n" not in outcome.message


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2015, 10, 21, 7, 27, 58, tzinfo=UTC)
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now) == 2.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now) == 0.0  # in the past
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-3") is None
    outcome = map_response(429, {"retry-after": "3"}, b"")
    assert outcome.retry_after_s == 3.0 and "(Retry-After 3s)" in outcome.message
    assert map_response(404, {"Retry-After": "3"}, b"").retry_after_s is None  # not transient


# ---------------------------------------------------------------------------------------
# Requests: headers, arguments, idempotency
# ---------------------------------------------------------------------------------------


async def test_a_get_carries_user_trace_and_auth_but_no_idempotency_key(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(js(SHIPPING))
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client)
    assert isinstance(await tools.call("get_order_status", {"order_id": "a1001"}, CTX), ToolOk)

    [seen] = upstream.seen
    assert (seen.method, seen.raw_path) == ("GET", "/api/orders/A1001")
    assert seen.headers["x-stepwise-user"] == "10001"
    assert seen.headers["x-stepwise-trace"] == "trace1"
    assert seen.headers["authorization"] == f"Bearer {TOKEN}"
    assert "idempotency-key" not in seen.headers


async def test_a_post_carries_the_idempotency_key_and_a_json_body(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(js(CANCELLED))
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client)
    ctx = ToolContext(user_id=777, trace_id="t-9", run_id="run9", step_id="s2")
    assert isinstance(await tools.call("cancel_order", {"order_id": "A1001"}, ctx), ToolOk)

    [seen] = upstream.seen
    assert (seen.method, seen.raw_path) == ("POST", "/api/orders/A1001/cancel")
    assert seen.headers["idempotency-key"] == "run9:s2"
    assert seen.headers["x-stepwise-user"] == "777"
    assert seen.headers["x-stepwise-trace"] == "t-9"
    assert json.loads(seen.body) == {}  # order_id went into the url


async def test_remaining_arguments_go_to_the_query_for_get_and_the_body_otherwise(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(js(POLICIES))
    get = registry(load(tmp_path, shop_toml(upstream.base)), client)
    post = registry(load(tmp_path, shop_toml(upstream.base, policy='method = "POST"')), client)
    await get.call("search_policy", {"query": "refund", "lang": "zh"}, CTX)
    await post.call("search_policy", {"query": "refund"}, CTX)

    first, second = upstream.seen
    assert (first.method, first.query, first.body) == (
        "GET",
        {"query": "refund", "lang": "zh"},
        b"",
    )
    assert (second.method, second.query) == ("POST", {})
    assert json.loads(second.body) == {"query": "refund", "lang": "en"}
    assert second.headers["idempotency-key"] == "run1:s1"


@pytest.mark.parametrize(
    ("order_id", "raw_path"),
    [("a/../b?x=1", "/api/orders/A%2F..%2FB%3FX%3D1"), ("..", "/api/orders/%2E%2E")],
)
async def test_url_placeholders_are_percent_encoded_and_never_a_dot_segment(
    order_id: str, raw_path: str, upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(js(SHIPPING))
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client)
    await tools.call("get_order_status", {"order_id": order_id}, CTX)
    assert [s.raw_path for s in upstream.seen] == [raw_path]


async def test_retries_through_the_executor_reuse_one_idempotency_key(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(Reply(503), Reply(503), js(CANCELLED))
    executor, _, sleep = make_executor(registry(load(tmp_path, shop_toml(upstream.base)), client))
    run = await executor.start(make_run([CANCEL]))
    assert run.status is RunStatus.PAUSED and upstream.seen == []

    run = await resume(executor, run, approved=True, by_user_id=10001)

    assert run.status is RunStatus.COMPLETED
    assert run.steps[0].retry_count == 2
    assert sleep.delays == [0.5, 1.0]  # the executor's backoff, not real waiting
    posts = upstream.requests("POST")
    assert len(posts) == 3
    assert [p.headers["idempotency-key"] for p in posts] == ["run1:s1"] * 3


async def test_recovery_after_a_crash_resends_the_same_idempotency_key(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(js(CANCELLED))
    config = load(tmp_path, shop_toml(upstream.base))
    run = make_run([CANCEL])
    run.steps[0].approval = Approval(approved=True, by_user_id=10001, at=datetime.now(UTC))
    first, _, _ = make_executor(registry(config, client))
    await first.drive(run)
    run.steps[0].status = StepStatus.RUNNING  # the crash came before `done` was recorded
    run.status = RunStatus.RUNNING
    run.finished_at = None

    fresh, _, _ = make_executor(registry(config, client))
    run = await fresh.drive(run)

    assert run.status is RunStatus.COMPLETED
    keys = [p.headers["idempotency-key"] for p in upstream.requests("POST")]
    assert keys == ["run1:s1", "run1:s1"]


# ---------------------------------------------------------------------------------------
# Retry-After
# ---------------------------------------------------------------------------------------


async def test_retry_after_is_waited_once_inside_the_attempt_with_the_same_key(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(Reply(503, headers={"Retry-After": "1"}), js(CANCELLED))
    sleep = RecordingSleep()
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client, sleep)

    result = await tools.call("cancel_order", {"order_id": "A1001"}, CTX)

    assert isinstance(result, ToolOk) and result.data == CANCELLED
    assert sleep.delays == [1.0]
    assert [p.headers["idempotency-key"] for p in upstream.requests("POST")] == ["run1:s1"] * 2


async def test_retry_after_never_resends_a_change_an_upstream_ignoring_keys_may_have_made(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Issue 20: a 503 may come after the change was made; an upstream that ignores the key
    would make it again, so the answer goes to the executor (which reconciles) instead.
    A 429 refused the request unread: waiting it out and re-sending stays safe."""
    sleep = RecordingSleep()
    ignoring = 'method = "POST"\nidempotency = "ignored"'
    tools = registry(load(tmp_path, shop_toml(upstream.base, cancel=ignoring)), client, sleep)

    upstream.script(Reply(503, headers={"Retry-After": "1"}), js(CANCELLED))
    failure = error(await tools.call("cancel_order", {"order_id": "A1001"}, CTX))
    assert failure.error_type is ErrorType.UNAVAILABLE and failure.may_have_happened
    assert sleep.delays == [] and len(upstream.requests("POST")) == 1

    upstream.script(Reply(429, headers={"Retry-After": "1"}), js(CANCELLED))
    result = await tools.call("cancel_order", {"order_id": "A1001"}, CTX)
    assert isinstance(result, ToolOk) and sleep.delays == [1.0]


async def test_retry_after_is_honoured_only_once_per_attempt(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(Reply(429, headers={"Retry-After": "1"}))
    sleep = RecordingSleep()
    tools = registry(load(tmp_path, shop_toml(upstream.base)), client, sleep)
    failure = error(await tools.call("get_order_status", {"order_id": "A1001"}, CTX))
    assert failure.error_type is ErrorType.UNAVAILABLE
    assert sleep.delays == [1.0] and len(upstream.seen) == 2


@pytest.mark.parametrize(
    ("retry_after", "timeout_s"),
    [(str(int(RETRY_AFTER_CAP_S) + 20), 60), ("4", 5)],  # over the cap; eats the budget
)
async def test_a_retry_after_that_does_not_fit_is_reported_at_once(
    retry_after: str,
    timeout_s: int,
    upstream: Upstream,
    client: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    upstream.script(Reply(429, headers={"Retry-After": retry_after}))
    sleep = RecordingSleep()
    config = load(tmp_path, shop_toml(upstream.base, status=f"timeout_s = {timeout_s}"))
    failure = error(await registry(config, client, sleep).call("get_order_status", CTX_ARGS, CTX))
    assert failure.error_type is ErrorType.UNAVAILABLE
    assert f"(Retry-After {retry_after}s)" in failure.message  # for staff and the executor
    assert sleep.delays == [] and len(upstream.seen) == 1


# ---------------------------------------------------------------------------------------
# Full runs through the executor
# ---------------------------------------------------------------------------------------


async def test_delivered_order_skips_the_compensation_lookup(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(js(DELIVERED), path="/api/orders/A1001")
    upstream.script(js(POLICIES), path="/api/policies")
    executor, _, _ = make_executor(registry(load(tmp_path, shop_toml(upstream.base)), client))

    run = await executor.start(make_run([STATUS, COMPENSATION]))

    assert run.status is RunStatus.COMPLETED
    assert [s.status for s in run.steps] == [StepStatus.DONE, StepStatus.SKIPPED]
    assert [s.raw_path for s in upstream.seen] == ["/api/orders/A1001"]


async def test_cancel_pauses_then_one_post_reaches_the_upstream_after_approval(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(js(SHIPPING), path="/api/orders/A1001")
    upstream.script(js(CANCELLED), path="/api/orders/A1001/cancel")
    executor, _, _ = make_executor(registry(load(tmp_path, shop_toml(upstream.base)), client))

    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.status is RunStatus.PAUSED
    assert upstream.requests("POST") == []

    run = await resume(executor, run, approved=True, by_user_id=10001)

    assert run.status is RunStatus.COMPLETED
    [post] = upstream.requests("POST")
    assert post.raw_path == "/api/orders/A1001/cancel"
    assert post.headers["idempotency-key"] == "run1:s2"
    assert len(upstream.requests("GET")) == 1  # the status lookup is not repeated
    assert "has been cancelled" in (run.answer or "")


# ---------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------


def test_the_example_config_loads_with_documented_defaults() -> None:
    config = load_tools_config(ROOT / "examples" / "tools.toml", env=ENV)
    specs = {spec.name: spec for spec in config.tools}
    assert specs["get_order_status"].timeout_s == 3
    assert specs["get_order_status"].url == "https://shop.example/api/orders/{order_id}"
    assert (specs["search_policy"].timeout_s, specs["search_policy"].max_retries) == (5, 2)
    assert specs["search_policy"].risk is Risk.READ
    assert specs["cancel_order"].risk is Risk.HIGH


async def test_cancel_order_defaults_to_high_risk_and_is_not_idempotent(tmp_path: Path) -> None:
    config = load(tmp_path, shop_toml("https://shop.example"), env=ENV)
    assert next(s for s in config.tools if s.name == "cancel_order").risk is Risk.HIGH
    async with httpx.AsyncClient() as pool:
        tools = {tool.name: tool for tool in build_http_tools(config, pool)}
    assert (tools["cancel_order"].risk, tools["cancel_order"].idempotent) == (Risk.HIGH, False)
    assert (tools["get_order_status"].risk, tools["get_order_status"].idempotent) == (
        Risk.READ,
        True,
    )
    assert tools["get_order_status"].timeout_s == 5 and tools["get_order_status"].max_retries == 2


def test_variables_come_from_the_process_environment_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_API_TOKEN", "from-the-env")
    path = tmp_path / "tools.toml"
    path.write_text(shop_toml("https://shop.example"))
    config = load_tools_config(path)
    assert config.headers["Authorization"].get_secret_value() == "Bearer from-the-env"


GOOD_STATUS = '[tools.get_order_status]\nurl = "https://s.example/o/{order_id}"\n'
AUTH = '[http]\nheaders = { Authorization = "Bearer ${SHOP_API_TOKEN}" }\n'


def tool_toml(name: str, *lines: str) -> str:
    return f"[tools.{name}]\n" + "\n".join(lines) + "\n" + AUTH


URL = 'url = "https://s.example/o/{order_id}"'
BAD_CONFIGS: list[tuple[str, str, str, dict[str, str]]] = [
    (tool_toml("refund_order", URL), "tool refund_order", "unknown tool (known: ", ENV),
    (tool_toml("get_order_status", 'method = "GET"'), "tool get_order_status", "url: ", ENV),
    (
        tool_toml("get_order_status", URL, 'method = "FETCH"'),
        "tool get_order_status",
        "method 'FETCH'",
        ENV,
    ),
    (GOOD_STATUS + AUTH, "[http] headers.Authorization", "SHOP_API_TOKEN is not set", {}),
    (
        GOOD_STATUS + '[http]\nheaders = { A = "${bad-name}" }',
        "[http] headers.A",
        "not a valid variable",
        ENV,
    ),
    (GOOD_STATUS + '[http]\nheaders = { A = "${OPEN" }', "[http] headers.A", "unterminated", ENV),
    (
        GOOD_STATUS + '[http]\nheaders = { X-Stepwise-User = "1" }',
        "[http] headers.X-Stepwise-User",
        "set by stepwise",
        ENV,
    ),
    (
        GOOD_STATUS + '[http]\nheaders = { A = "${SHOP_API_TOKEN}" }',
        "[http] headers.A",
        "printable ASCII",
        {"SHOP_API_TOKEN": TOKEN + "\nX: y"},
    ),
    (GOOD_STATUS + "[http]\nproxy = 1", "[http]", "proxy: Extra inputs", ENV),
    (
        tool_toml("get_order_status", 'url = "https://s.example/o/{order}"'),
        "tool get_order_status",
        "placeholder {order} is not an argument of get_order_status",
        ENV,
    ),
    (
        tool_toml("search_policy", 'url = "https://s.example/p/{order_id}"'),
        "tool search_policy",
        "placeholder {order_id} is not an argument of search_policy (arguments: lang, query)",
        ENV,
    ),
    (
        tool_toml("get_order_status", 'url = "https://s.example/o/{order_id"'),
        "tool get_order_status",
        "bad placeholder syntax",
        ENV,
    ),
    (
        tool_toml("get_order_status", 'url = "https://s.example/o/{order_id!r}"'),
        "tool get_order_status",
        "no format spec",
        ENV,
    ),
    (
        tool_toml("get_order_status", 'url = "ftp://s.example/o/{order_id}"'),
        "tool get_order_status",
        "http:// or https://",
        ENV,
    ),
    (
        tool_toml("get_order_status", 'url = "https://s.example/${SHOP_API_TOKEN}/{order_id}"'),
        "tool get_order_status",
        "only substituted in [http] headers",
        ENV,
    ),
    (
        tool_toml("get_order_status", 'url = "https://me:pw@s.example/o/{order_id}"'),
        "tool get_order_status",
        "url: no credentials in the url",
        ENV,
    ),
    (tool_toml("get_order_status", URL, 'risk = "medium"'), "tool get_order_status", "risk: ", ENV),
    (
        tool_toml("get_order_status", URL, "timeout_s = 0"),
        "tool get_order_status",
        "timeout_s: Input should be greater than 0",
        ENV,
    ),
    (
        tool_toml("get_order_status", URL, "timeout_s = -1.5"),
        "tool get_order_status",
        "timeout_s: Input should be greater than 0",
        ENV,
    ),
    (
        tool_toml("get_order_status", URL, "max_retries = 11"),
        "tool get_order_status",
        "max_retries: ",
        ENV,
    ),
    (
        tool_toml("get_order_status", URL, "timeout = 3"),
        "tool get_order_status",
        "timeout: Extra inputs are not permitted",
        ENV,
    ),
    (
        tool_toml("get_order_status", URL, "probe_args = { order = 'A1' }"),
        "tool get_order_status",
        "probe_args: ",
        ENV,
    ),
    (
        tool_toml("cancel_order", 'method = "POST"', URL, 'risk = "read"'),
        "tool cancel_order",
        'risk must be "high"',
        ENV,
    ),
    (tool_toml("cancel_order", URL), "tool cancel_order", "must not use GET", ENV),
    (
        tool_toml("search_policy", 'url = "https://s.example/p"', 'risk = "high"'),
        "tool search_policy",
        "must not use GET",
        ENV,
    ),
    (
        tool_toml("cancel_order", 'method = "POST"', URL, "probe_args = { order_id = 'A1' }"),
        "tool cancel_order",
        "never probed",
        ENV,
    ),
    ("[tools.get_order_status\nurl = 'x'", "file", "TOML syntax error", ENV),
    (AUTH, "[tools]", "no tools configured", ENV),
    ("[tools]\nget_order_status = 'x'\n", "tool get_order_status", "must be a table", ENV),
    (GOOD_STATUS + "[server]\nport = 1\n", "server", "unknown section", ENV),
]


@pytest.mark.parametrize(("text", "where", "problem", "env"), BAD_CONFIGS)
def test_a_bad_config_fails_at_load_with_one_line_naming_file_tool_and_problem(
    text: str, where: str, problem: str, env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "bad-tools.toml"
    path.write_text(text)
    with pytest.raises(ToolsConfigError) as caught:
        load_tools_config(path, env=env)
    line = str(caught.value)
    assert line.startswith(f"{path}: {where}: "), line
    assert problem in line, line
    assert "\n" not in line
    assert TOKEN not in line


def test_a_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.toml"
    with pytest.raises(ToolsConfigError, match=r"nowhere\.toml: file: cannot read it"):
        load_tools_config(path, env=ENV)


# ---------------------------------------------------------------------------------------
# Secrets
# ---------------------------------------------------------------------------------------


async def test_secrets_never_reach_logs_reprs_messages_or_check_output(
    upstream: Upstream, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("", "httpx", "httpcore", "agent_core"):
        caplog.set_level(logging.DEBUG, logger=name or None)
    upstream.script(js(SHIPPING), path="/api/orders/A1001")
    upstream.script(
        Reply(500, b"bad auth header: ", echo_header="Authorization"), path="/api/policies"
    )
    upstream.script(
        Reply(401, b'{"error": "token ', echo_header="Authorization"),
        path="/api/orders/A1001/cancel",
    )
    config = load(tmp_path, shop_toml(upstream.base))
    lines: list[str] = []

    async with new_client(config) as pool:
        tools = build_http_tools(config, pool, sleep=RecordingSleep())
        reg = ToolRegistry(tools)
        results = [
            await reg.call("get_order_status", CTX_ARGS, CTX),
            await reg.call("search_policy", {"query": "refund"}, CTX),
            await reg.call("cancel_order", CTX_ARGS, CTX),
        ]
        await print_tools_check(config, probe=True, out=lines.append, client=pool)

    # The secret was really sent, and really echoed back by the upstream.
    assert upstream.seen[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert [type(r) for r in results] == [ToolOk, ToolError, ToolError]
    messages = [error(r).message for r in results[1:]]
    assert "bad auth header: ***" in messages[0] and "token ***" in messages[1]
    assert any(r.name.startswith("httpcore") for r in caplog.records)  # httpx logged at DEBUG
    assert any(r.name == "agent_core.http.client" for r in caplog.records)
    exposed: list[str] = [
        caplog.text,
        *messages,
        *lines,
        repr(config),
        str(config),
        config.model_dump_json(),
        repr(config.model_dump()),
        repr(tools),
        *(repr(t.handler) for t in tools),
    ]
    for text in exposed:
        assert TOKEN not in text
        assert "Bearer tok" not in text


# ---------------------------------------------------------------------------------------
# `stepwise tools check [--probe]`
# ---------------------------------------------------------------------------------------


async def test_check_without_probe_lists_tools_and_sends_nothing(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    config = load(tmp_path, shop_toml(upstream.base, status="timeout_s = 3"))
    lines: list[str] = []
    assert await print_tools_check(config, probe=False, out=lines.append, client=client) == 0
    text = "\n".join(lines)
    assert (
        f"get_order_status: GET {upstream.base}/api/orders/{{order_id}} risk=read timeout=3s"
        in text
    )
    assert (
        f"cancel_order: POST {upstream.base}/api/orders/{{order_id}}/cancel risk=high timeout=5s"
        in text
    )
    assert "search_policy: GET" in text
    assert upstream.seen == []


async def test_check_lists_known_tools_that_are_not_configured(tmp_path: Path) -> None:
    config = load(tmp_path, GOOD_STATUS)
    lines: list[str] = []
    assert await print_tools_check(config, probe=False, out=lines.append) == 0
    assert any(line.strip().startswith("cancel_order: not configured") for line in lines)


async def test_probe_gets_each_read_tool_with_example_args_and_passes_on_2xx_or_404(
    upstream: Upstream, tmp_path: Path
) -> None:
    upstream.script(js({}, 404), path="/api/orders/A1001")
    upstream.script(js(POLICIES), path="/api/policies")
    config = load(tmp_path, shop_toml(upstream.base))
    lines: list[str] = []

    assert await print_tools_check(config, probe=True, out=lines.append) == 0  # its own client

    assert [(s.method, s.raw_path, s.query) for s in upstream.seen] == [
        ("GET", "/api/orders/A1001", {}),
        ("GET", "/api/policies", {"query": "refund", "lang": "en"}),
    ]
    text = "\n".join(lines)
    assert "get_order_status: probe HTTP 404 in " in text and " ms ok" in text
    assert "search_policy: probe HTTP 200 in " in text
    assert "cancel_order: not probed (high risk, POST)" in text


async def test_probe_uses_configured_probe_args_and_user(
    upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(js(SHIPPING))
    text = shop_toml(
        upstream.base,
        status="probe_args = { order_id = 'z9' }",
        http="probe_user_id = 10001",
    )
    config = load(tmp_path, text)
    assert await print_tools_check(config, probe=True, out=lambda _: None, client=client) == 0
    assert upstream.seen[0].raw_path == "/api/orders/Z9"
    assert upstream.seen[0].headers["x-stepwise-user"] == "10001"


@pytest.mark.parametrize("reply", [Reply(500), Reply(401)])
async def test_probe_fails_on_anything_but_2xx_or_404(
    reply: Reply, upstream: Upstream, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    upstream.script(reply, path="/api/orders/A1001")
    upstream.script(js(POLICIES), path="/api/policies")
    lines: list[str] = []
    config = load(tmp_path, shop_toml(upstream.base))
    assert await print_tools_check(config, probe=True, out=lines.append, client=client) == 1
    assert any(f"probe HTTP {reply.status} in " in ln and "FAILED" in ln for ln in lines)


async def test_probe_fails_when_the_upstream_is_unreachable(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    lines: list[str] = []
    config = load(tmp_path, shop_toml(f"http://127.0.0.1:{port}"))
    assert await print_tools_check(config, probe=True, out=lines.append, client=client) == 1
    assert any("probe FAILED: no answer from upstream: ConnectError" in ln for ln in lines)


async def test_new_client_is_one_pool_that_does_not_follow_redirects(
    upstream: Upstream, tmp_path: Path
) -> None:
    upstream.script(Reply(307, headers={"Location": "https://elsewhere.example/"}))
    config = load(tmp_path, shop_toml(upstream.base, status="timeout_s = 7"))
    async with new_client(config) as pool:
        assert pool.follow_redirects is False
        assert pool.timeout.read == 7
        tools = ToolRegistry(build_http_tools(config, pool))
        failure = error(await tools.call("get_order_status", CTX_ARGS, CTX))
    assert failure.error_type is ErrorType.INTERNAL
    assert len(upstream.seen) == 1
